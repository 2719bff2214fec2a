"""Fit the physical radar stage's backscatter classes (σ⁰(θ) tables, roughness) to real frames of a known scene.

The physical stage (sensor.model: physical) draws distributed clutter as speckle: a cell's power I is
exponential around its expected power μ (radar/physical/speckle.py; Ulaby, Moore & Fung, "Microwave Remote
Sensing" Vol. II §7-4: fully developed speckle, one look). The simulator gives μ itself with
scatter.speckle off, so a co-registered real frame has the exact log-likelihood

    ln L = Σ_cells [−ln μ − I/μ]      (cells above the detector's zero)
         + Σ_cells  ln(1 − exp(−I₀/μ)) (cells reading 0: censored below the zero level I₀)

with I the real cell's power from its counts (detector.py: P = 10^((counts·step + zero_dBm − 30)/10) W).
μ = noise + clutter(σ⁰ tables) + everything else (glints, corners). Per class k the table is moved as

    σ⁰_k(θ) [dB] = table_k(θ) + level_k + tilt_k · θ/90°

(level: the class's scale; tilt: the fall of σ⁰ from normal to grazing, which surface roughness sets),
and rms_height_k (the Rayleigh factor of the mirror part, roughness.py) on request. The search is
L-BFGS-B over those values (bounded: level/tilt ±TABLE_DB dB, rms height inside the table's rule) on the
mean negative log-likelihood; the simulated frames are deterministic (speckle off), so it is a smooth
function. Identifiability: the numerical Hessian of the mean negative log-likelihood at the solution
(the Fisher information per cell): a parameter whose curvature is under NO_EFFECT is reported (the class
is not seen, or the frames have no mirror part), one whose correlation with another is above CONFOUNDED
is reported confounded; ±1σ = the inverse Hessian's diagonal over the number of cells. Reported
parameters keep the table's value.
"""
from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from scipy.optimize import minimize

from ...config_file import read_yaml
from ...errors import ConfigError
from ..physical.backscatter import table_path

TABLE_DB = 20.0          # level and tilt search window, dB
ROUGHNESS_M = (0.0, 0.01)  # rms height window, m (inside the table rule 0 <= h < 1)
NO_EFFECT = 1e-6         # curvature of the mean NLL per unit (dB or mm) below which a parameter is not seen
CONFOUNDED = 0.98        # |correlation| of two estimates above which they are reported confounded
KEYS = ("level_db", "tilt_db", "rms_height_mm")


@dataclass(frozen=True)
class ScatterParam:
    cls: str
    key: str  # one of KEYS

    @property
    def name(self) -> str:
        return f"{self.cls}.{self.key}"

    @property
    def bounds(self) -> tuple[float, float]:
        if self.key == "rms_height_mm":
            return ROUGHNESS_M[0] * 1e3, ROUGHNESS_M[1] * 1e3
        return -TABLE_DB, TABLE_DB


@dataclass
class ScatterFit:
    params: tuple[ScatterParam, ...]
    start: np.ndarray
    values: np.ndarray
    sigma: np.ndarray
    identifiable: list[bool]
    verdicts: list[str]
    nll_start: float
    nll: float
    cells: int
    table: dict                      # the fitted table (the YAML mapping scatter.table takes)
    history: list[float] = field(default_factory=list)


def read_table(name: str) -> dict:
    """The backscatter table mapping of a shipped name or a YAML path."""
    path = table_path(name)
    if not path.is_file():
        raise ConfigError(f"scatter.table = {name!r}: no such file or shipped table ({path})")
    return read_yaml(path, "backscatter table")


def scatter_params(table: dict, classes: Sequence[str], keys: Sequence[str] = ("level_db", "tilt_db")) -> list[ScatterParam]:
    bad = [c for c in classes if c not in table["classes"]]
    if bad:
        raise ConfigError(f"--fit-classes {','.join(bad)}: not a class of the table; classes: {', '.join(table['classes'])}")
    wrong = [k for k in keys if k not in KEYS]
    if wrong:
        raise ConfigError(f"--scatter-keys {','.join(wrong)}: allowed {', '.join(KEYS)}")
    return [ScatterParam(c, k) for c in classes for k in keys]


def start_values(table: dict, params: Sequence[ScatterParam]) -> np.ndarray:
    return np.array([float(table["classes"][p.cls]["rms_height_m"]) * 1e3 if p.key == "rms_height_mm" else 0.0
                     for p in params])


def moved_table(table: dict, params: Sequence[ScatterParam], values) -> dict:
    """A copy of the table with every class's σ⁰(θ) moved by its level/tilt and its rms height set."""
    theta = np.asarray(table["theta_deg"], np.float64)
    classes = {name: dict(entry) for name, entry in table["classes"].items()}
    for p, v in zip(params, values):
        entry = classes[p.cls]
        if p.key == "rms_height_mm":
            entry["rms_height_m"] = float(v) * 1e-3
            continue
        db = np.asarray(entry["sigma0_db"], np.float64)
        db = db + (float(v) if p.key == "level_db" else float(v) * theta / 90.0)
        entry["sigma0_db"] = [float(x) for x in db]
    return {**table, "classes": classes}


def counts_to_power(counts: np.ndarray, zero_dbm: float, db_per_count: float) -> np.ndarray:
    """Cell power (W) of detector counts (detector.py inverted)."""
    return 10.0 ** ((np.asarray(counts, np.float64) * db_per_count + zero_dbm - 30.0) / 10.0)


def neg_log_likelihood(mu: np.ndarray, counts: np.ndarray, zero_dbm: float, db_per_count: float,
                       use: np.ndarray | None = None) -> tuple[float, int]:
    """Mean −ln L per cell of exponential speckle around μ (W) given real counts (module docstring): cells
    at 0 counts censored at the zero level, saturated cells (255) left out. (mean NLL, cells)."""
    c = np.asarray(counts)
    ok = (c < 255) & np.isfinite(mu) & (mu > 0)
    if use is not None:
        ok &= use
    m = np.asarray(mu, np.float64)[ok]
    cc = c[ok]
    power = counts_to_power(cc, zero_dbm, db_per_count)
    i0 = counts_to_power(0.5, zero_dbm, db_per_count)  # a cell rounds to 0 below half a count
    above = cc > 0
    nll = np.sum(np.log(m[above]) + power[above] / m[above])
    nll -= np.sum(np.log(-np.expm1(-i0 / m[~above])))
    n = int(ok.sum())
    return float(nll / max(n, 1)), n


def fit_scatter(render: Callable[[dict], list[np.ndarray]], real: Sequence[np.ndarray], table: dict,
                params: Sequence[ScatterParam], zero_dbm: float, db_per_count: float, max_evaluations: int = 200,
                progress: Callable[[int, float], None] | None = None) -> ScatterFit:
    """render(table) -> expected power μ (W) per frame, [azimuth, bin] (the simulator with speckle off and that
    table); real: the frames' counts [azimuth, bin]."""
    params = tuple(params)
    lo, hi = np.array([p.bounds for p in params]).T
    x0 = start_values(table, params)
    history: list[float] = []
    cache: dict[bytes, tuple[float, int]] = {}

    def objective(x):
        key = np.round(x, 12).tobytes()
        if key not in cache:
            mus = render(moved_table(table, params, x))
            parts = [neg_log_likelihood(mu, c, zero_dbm, db_per_count) for mu, c in zip(mus, real)]
            n = sum(k for _, k in parts)
            cache[key] = (sum(v * k for v, k in parts) / max(n, 1), n)
            history.append(cache[key][0])
            if progress:
                progress(len(history), history[-1])
        return cache[key][0]

    nll_start = objective(x0)
    cells = cache[np.round(x0, 12).tobytes()][1]
    result = minimize(objective, x0, method="L-BFGS-B", bounds=list(zip(lo, hi)),
                      options={"maxfun": max_evaluations, "eps": 1e-3, "ftol": 1e-12, "gtol": 1e-9})
    x = np.clip(result.x, lo, hi)
    hess = _hessian(objective, x, lo, hi)
    ok, why, sigma = _verdicts(hess, params, cells)
    values = np.where(ok, x, x0)
    return ScatterFit(params, x0, values, sigma, ok, why, nll_start, objective(values), cells,
                      moved_table(table, params, values), history)


def _hessian(f, x, lo, hi, h: float = 0.05) -> np.ndarray:
    """Central-difference Hessian (steps kept inside the bounds); the cross terms only between parameters
    with a curvature of their own (an unseen class costs 2 evaluations, not 2 per other parameter)."""
    n = len(x)
    out = np.zeros((n, n))
    steps = np.minimum(h, np.maximum((hi - lo) / 4, 1e-6))
    xc = np.clip(x, lo + steps, hi - steps)
    f0 = f(xc)
    e = np.eye(n) * steps
    for i in range(n):
        out[i, i] = (f(xc + e[i]) - 2 * f0 + f(xc - e[i])) / steps[i] ** 2
    seen = [i for i in range(n) if out[i, i] > NO_EFFECT]
    for a, i in enumerate(seen):
        for j in seen[a + 1:]:
            v = (f(xc + e[i] + e[j]) - f(xc + e[i] - e[j]) - f(xc - e[i] + e[j]) + f(xc - e[i] - e[j])) / (4 * steps[i] * steps[j])
            out[i, j] = out[j, i] = v
    return out


def _verdicts(hess, params, cells) -> tuple[list[bool], list[str], np.ndarray]:
    n = len(params)
    ok, why = [True] * n, ["fitted"] * n
    diag = np.diag(hess)
    for i in range(n):
        if not diag[i] > NO_EFFECT:
            ok[i], why[i] = False, "unidentifiable: no effect on these frames"
    alive = [i for i in range(n) if ok[i]]
    sigma = np.full(n, math.nan)
    if alive:
        sub = hess[np.ix_(alive, alive)]
        try:
            cov = np.linalg.inv(sub) / max(cells, 1)
        except np.linalg.LinAlgError:
            cov = np.full(sub.shape, np.inf)
        d = np.sqrt(np.abs(np.diag(cov)))
        for a, i in enumerate(alive):
            sigma[i] = d[a]
            for b, j in enumerate(alive):
                if j != i and abs(cov[a, b]) > CONFOUNDED * d[a] * d[b]:
                    ok[i], why[i] = False, f"unidentifiable: confounded with {params[j].name}"
    return ok, why, sigma


def table_file(table: dict, folder: str | Path | None = None) -> Path:
    """Write a table mapping to a YAML file (scatter.table takes its path)."""
    import yaml

    folder = Path(folder or tempfile.mkdtemp(prefix="radarays_scatter_"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "backscatter.yaml"
    path.write_text(yaml.safe_dump(table, sort_keys=False))
    return path
