"""Fit the physical receiver chain to real polar frames from their statistics alone (no scene).

Forward model: the sensor stage of radar/physical/stage.py run on no returns at all (thermal noise,
leakage, STC, range response, detector: everything the chain adds where nothing is seen), on
`azimuths` rows with one fixed seed per evaluation (common random numbers: the objective is a smooth
function of the parameters, not a new draw each time; except that the stage draws its noise on the
band its range response passes, so a change of fmcw.bandwidth_hz that changes the response's length
draws anew: the objective is rough along that key, hence the derivative-free search). The frame is
measured by statistics.quiet_stats,
as the real frames are. Search: the start and `starts` seeded Latin-hypercube points in the optimiser's
[0, 1] coordinates, then derivative-free search from the best (scipy's bounded
Nelder-Mead, restarted from its best point with a fresh simplex until a restart gains nothing at the
smallest simplex), then a few Levenberg-Marquardt steps on the central-difference Jacobian. Seeded
throughout: the same call gives the same fit.

Weights: each residual (real minus simulated statistic) is divided by its standard error, that of the real
frame's statistic measured from the real frame itself (the delete-a-group jackknife over its rows:
statistics.quiet_stats_with_errors, fit/jackknife.py) and that of the simulated frame's, the same per-row
variance over the simulation's rows (sigma^2 (1 + rows_real / rows_sim)): inverse-variance weighting, the
least-squares estimate of least variance for independent residuals (Gauss-Markov; Aitken 1935). A single-bin
range block of 128 cells thus weighs what its scatter allows, not as much as a block of 1388 bins. Correlations
between the statistics (a block's level and spread, the range-correlation lags) are not in the weights
(diagonal), but are in the reported uncertainty: the sandwich covariance
(J^T J)^-1 J^T C J (J^T J)^-1 with C the jackknife covariance of the weighted residuals (real frames and the
simulated one), i.e. the spread of the Gauss-Newton step over frames (Huber 1967; White 1980), not the
unit-variance assumption's (J^T J)^-1.

Identifiability first: at the start values the residual Jacobian is taken (central differences); a parameter whose column
is negligible ("no effect on these statistics") or lies (almost) in the span of the columns of the
parameters before it in the registry ("confounded with ...") is not fitted: it keeps the preset value
and is reported. The check is repeated at the solution.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

from ...errors import ConfigError
from ..config import RadarConfig
from ..physical.geometry import Clutter, Glints, joined
from ..physical.stage import run_stage
from .params import Param, apply
from .statistics import FrameErrors, QuietStats, quiet_stats, quiet_stats_with_errors

SIM_AZIMUTHS = 64  # rows of a simulated quiet frame: 64 x 6848 cells give every block statistic to ~0.1 count
FD_STEP = 0.01  # finite-difference step in unit coordinates (1 % of a parameter's search range)
NO_EFFECT = 0.5  # a Jacobian column shorter than this (residual units per whole search range) has no effect
CONFOUNDED = 0.15
POLISH_STEPS = 3  # Levenberg-Marquardt steps after the simplex search
RUN_EVALUATIONS = 20  # frames per Nelder-Mead run and parameter before a restart
SIMPLEX_STEP = 0.1  # initial simplex edge in unit coordinates (a tenth of each search range)  # part of a column outside the span of the earlier ones, below which it is confounded


def quiet_frame(config: RadarConfig, seed: int, azimuths: int = SIM_AZIMUTHS, workers: int | None = 1) -> np.ndarray:
    """(azimuths, bins) uint8 counts of the physical stage with no returns (seeded)."""
    if config.sensor.model != "physical":
        raise ConfigError(f"radar config {config.origin}: the sensor-stage fit needs sensor.model physical "
                          f"(got {config.sensor.model}); the RadaRays stage has no receiver chain")
    cfg = config.with_overrides({"azimuth.count": azimuths}) if config.azimuth.count != azimuths else config
    out = run_stage(joined([], Clutter), joined([], Glints), cfg, np.random.default_rng([seed, 0xF17]), workers)
    return out.counts


def residual_weights(real: FrameErrors, sim_rows: int) -> np.ndarray:
    """1 / standard error of (real - simulated statistic): the real frame's variance plus the simulated frame's
    (the same per-row variance over sim_rows rows)."""
    return 1.0 / (real.standard_error * math.sqrt(1.0 + real.rows / sim_rows))


def residual_vector(sim: QuietStats, real: list[FrameErrors], sim_rows: int) -> np.ndarray:
    """Residuals against every real frame, each in units of its standard error."""
    return np.concatenate([(r.stats.vector() - sim.vector()) * residual_weights(r, sim_rows) for r in real])


def sandwich_covariance(jac: np.ndarray, real: list[FrameErrors], sim_rows: int) -> np.ndarray:
    """Covariance of the Gauss-Newton estimate (unit coordinates) from the jackknife deviations: each real frame's,
    and the simulated frame's (the first real frame's scaled to sim_rows; one simulated frame for all real ones)."""
    m = real[0].stats.vector().size
    blocks = [jac[k * m:(k + 1) * m] for k in range(len(real))]
    bread = np.linalg.pinv(jac.T @ jac)
    meat = np.zeros_like(bread)
    sim_dev = real[0].jackknife * math.sqrt(real[0].rows / sim_rows)
    sim_proj = 0.0
    for r, jk in zip(real, blocks):
        w = residual_weights(r, sim_rows)
        proj = (r.jackknife * w) @ jk
        meat += proj.T @ proj
        sim_proj = sim_proj + (sim_dev * w) @ jk
    meat += np.atleast_2d(sim_proj).T @ np.atleast_2d(sim_proj)
    return bread @ meat @ bread


@dataclass
class Identifiability:
    fitted: list[Param]
    dropped: dict[str, str]  # key -> why it is not fitted
    column_norms: dict[str, float]


def identifiability(jacobian: np.ndarray, params: list[Param]) -> Identifiability:
    """Which columns of the residual Jacobian (unit coordinates) carry their own information."""
    norms = np.linalg.norm(jacobian, axis=0)
    kept: list[int] = []
    dropped = {}
    for i, p in enumerate(params):
        if norms[i] < NO_EFFECT:
            dropped[p.key] = "no effect on the frame statistics (not identifiable from these data)"
            continue
        col = jacobian[:, i]
        if kept:
            basis = jacobian[:, kept]
            coef, *_ = np.linalg.lstsq(basis, col, rcond=None)
            rest = np.linalg.norm(col - basis @ coef) / norms[i]
            if rest < CONFOUNDED:
                main = [params[kept[k]].key for k in np.argsort(-np.abs(coef * np.linalg.norm(basis, axis=0)))
                        if abs(coef[k]) * np.linalg.norm(basis[:, k]) > 0.1 * norms[i]]
                dropped[p.key] = f"confounded with {', '.join(main)} (only {rest:.0%} of its effect is its own)"
                continue
        kept.append(i)
    return Identifiability([params[i] for i in kept], dropped, {p.key: float(n) for p, n in zip(params, norms)})


@dataclass
class SensorFit:
    config: RadarConfig  # the preset with the fitted values
    start: RadarConfig
    values: dict[str, float]  # fitted key -> value
    start_values: dict[str, float]
    dropped: dict[str, str]
    objective: list[float]  # per evaluation
    best: list[float]  # best so far, per evaluation
    stats_real: list[QuietStats]
    stats_before: QuietStats
    stats_after: QuietStats
    frame_before: np.ndarray
    frame_after: np.ndarray
    evaluations: int = 0
    message: str = ""
    uncertainty: dict[str, float] = field(default_factory=dict)  # 1 sigma, sandwich covariance at the solution (units of each key)


def fit_sensor(real_frames: list[np.ndarray], config: RadarConfig, params: list[Param], seed: int = 0,
               azimuths: int = SIM_AZIMUTHS, max_evaluations: int = 360, starts: int = 0, progress=None,
               workers: int | None = 1) -> SensorFit:
    """Fit `params` of `config` to the real frames' quiet statistics. progress(evaluation, objective, best)."""
    if not real_frames:
        raise ConfigError("sensor fit: no real frame given")
    errors_real = [quiet_stats_with_errors(f) for f in real_frames]
    stats_real = [e.stats for e in errors_real]
    x0 = np.array([p.to_unit(p.get(config)) for p in params])
    objective, best = [], []

    def frame_of(params_now, u):
        cfg = apply(config, params_now, [p.from_unit(v) for p, v in zip(params_now, u)])
        return quiet_frame(cfg, seed, azimuths, workers)

    def residuals(params_now, u):
        r = residual_vector(quiet_stats(frame_of(params_now, u)), errors_real, azimuths)
        value = float(r @ r)
        objective.append(value)
        best.append(min(value, best[-1]) if best else value)
        if progress is not None:
            progress(len(objective), value, best[-1])
        return r

    def jacobian(params_now, u):
        """Central differences (one-sided at a bound): the statistics are clipped at 0 and 255 counts, and a
        one-sided step of a different size per key would show that curvature as a difference between keys."""
        cols = []
        for i in range(len(u)):
            lo, hi = u.copy(), u.copy()
            lo[i], hi[i] = max(u[i] - FD_STEP, 0.0), min(u[i] + FD_STEP, 1.0)
            cols.append((residuals(params_now, hi) - residuals(params_now, lo)) / (hi[i] - lo[i]))
        return np.column_stack(cols) if cols else np.zeros((0, 0))

    ident = identifiability(jacobian(params, x0), params)
    fitted = ident.fitted
    u0 = np.array([p.to_unit(p.get(config)) for p in fitted])
    message = "nothing identifiable to fit"
    values = {}
    u_best = u0
    uncertainty = {}
    if fitted:
        # seeded global look first (the stage redraws its noise when the range response changes length, so
        # the objective is rough in some directions): the start and `starts` Latin-hypercube points, then
        # least squares from the best of them
        rng = np.random.default_rng([seed, 0x5EA])
        k = len(fitted)
        lhs = (rng.permuted(np.tile(np.arange(starts), (k, 1)), axis=1).T + rng.random((starts, k))) / max(starts, 1)
        candidates = [u0] + list(lhs)
        scores = []
        for u in candidates:
            r = residuals(fitted, u)
            scores.append(float(r @ r))
        u0 = candidates[int(np.argmin(scores))]
        # Nelder-Mead, restarted from its best point with a fresh, smaller simplex while that still gains
        # (a collapsed simplex on a ridge, e.g. STC depth against leakage, is the usual stall)
        f = lambda u: float(np.sum(residuals(fitted, u) ** 2))  # noqa: E731
        polish_cost = POLISH_STEPS * (2 * k + 3) + 2 * k  # Levenberg-Marquardt steps and the final Jacobian
        stop_at = max(max_evaluations - polish_cost, len(objective) + 4 * k)
        step, f_best, message = SIMPLEX_STEP, math.inf, ""
        while len(objective) < stop_at and step >= SIMPLEX_STEP / 8:
            simplex = np.vstack([u0] + [np.clip(u0 + step * np.eye(k)[i] * (1 if u0[i] + step <= 1 else -1), 0, 1)
                                        for i in range(k)])
            found = minimize(f, u0, method="Nelder-Mead", bounds=[(0.0, 1.0)] * k,
                             options=dict(maxfev=min(stop_at - len(objective), RUN_EVALUATIONS * k), initial_simplex=simplex,
                                          xatol=1e-3, fatol=1e-3, adaptive=True))
            gained = f_best - found.fun
            if found.fun < f_best:
                u0, f_best, message = found.x, found.fun, found.message
            if gained < 1e-3 * max(f_best, 1e-9):
                step /= 2
        # Levenberg-Marquardt polish with the central-difference Jacobian (it averages over the counts'
        # rounding, which stalls the simplex along ridges such as STC depth against leakage level)
        u_best, r_best, lam = u0, residuals(fitted, u0), 1e-2
        for _ in range(POLISH_STEPS):
            jac = jacobian(fitted, u_best)
            normal, grad = jac.T @ jac, jac.T @ r_best
            for _ in range(3):
                try:
                    delta = np.linalg.solve(normal + lam * np.diag(np.diag(normal) + 1e-9), -grad)
                except np.linalg.LinAlgError:
                    break
                u_try = np.clip(u_best + delta, 0.0, 1.0)
                r_try = residuals(fitted, u_try)
                if r_try @ r_try < r_best @ r_best:
                    u_best, r_best, lam = u_try, r_try, lam / 3
                    break
                lam *= 10
        jac = jacobian(fitted, u_best)
        # the check again at the solution: a parameter that lost its own effect there is reported
        after = identifiability(jac, fitted)
        for key, why in after.dropped.items():
            ident.dropped[key] = why + " at the fitted values"
        try:  # 1 sigma of each unit coordinate: the sandwich covariance of the Gauss-Newton estimate
            cov = sandwich_covariance(jac, errors_real, azimuths)
            for p, u, s in zip(fitted, u_best, np.sqrt(np.maximum(np.diag(cov), 0.0))):
                uncertainty[p.key] = abs(p.from_unit(min(u + s, 1.0)) - p.from_unit(max(u - s, 0.0))) / 2
        except np.linalg.LinAlgError:
            pass
        keep = [i for i, p in enumerate(fitted) if p.key not in ident.dropped]
        fitted_kept = [fitted[i] for i in keep]
        values = {p.key: p.from_unit(u_best[i]) for i, p in zip(keep, fitted_kept)}
    result_cfg = apply(config, [p for p in params if p.key in values], [values[p.key] for p in params if p.key in values])
    before = quiet_frame(config, seed, azimuths, workers)
    after = quiet_frame(result_cfg, seed, azimuths, workers)
    return SensorFit(result_cfg, config, values, {p.key: p.get(config) for p in params}, ident.dropped, objective, best,
                     stats_real, quiet_stats(before), quiet_stats(after), before, after, len(objective), str(message),
                     uncertainty)
