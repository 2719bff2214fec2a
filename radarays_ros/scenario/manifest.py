"""Batch manifests: which runs a batch makes, each with its seed and drawn variation, named by content.

    runs:
      - {scenario: office_demo, seeds: [1, 2]}          # a shipped scenario name, or a path (relative
      - scenario: street_demo                            #   to the manifest file)
        seeds: {first: 0, count: 100}                    # or a list of integers, or `seed: 3`
        set: {sensors.radar.noise.system_std: 2.0}       # overrides (variation.py lists the keys)
        vary:                                            # domain randomisation, drawn per run
          materials.concrete.radar.velocity: {uniform: [0.05, 0.12]}
          weather.fog_visibility_km: {choice: [0.2, 1.0, 10.0]}
        pictures: false                                  # PNG per frame in the run folder
    retries: 2                                           # re-runs of a crashed (killed) run

One run = one scenario × one seed × one draw of `vary`. The draws come from a numpy Generator seeded
by the row's content (scenario, set, vary) and the seed, so a row draws the same values wherever it
sits in the manifest and whatever engine or worker runs it. The run id is
`<scenario>-s<seed>-<hash>` where the hash covers the scenario as written, the seed and every
override value: the same manifest always names the same runs.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..config_file import read_yaml
from ..errors import ConfigError

MANIFEST_KEYS = ("runs", "retries", "pictures", "description")
ROW_KEYS = ("scenario", "seeds", "seed", "set", "vary", "pictures")
MAX_RUNS = 1_000_000  # a manifest naming more is refused before any list of runs is built
MAX_RETRIES = 10


# -- distributions ------------------------------------------------------------------------------
def _uniform(rng, lo, hi):
    return float(rng.uniform(lo, hi))


def _loguniform(rng, lo, hi):
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _normal(rng, mean, std):
    return float(rng.normal(mean, std))


def _integer(rng, lo, hi):
    return int(rng.integers(lo, hi, endpoint=True))


def _choice(rng, *values):
    return values[int(rng.integers(len(values)))]


# name -> (sampler, what its list holds, check of the list)
DISTRIBUTIONS = {
    "uniform": (_uniform, "[low, high], low < high", lambda a: len(a) == 2 and _finite(a) and a[0] < a[1]),
    "loguniform": (_loguniform, "[low, high], 0 < low < high",
                   lambda a: len(a) == 2 and _finite(a) and 0 < a[0] < a[1]),
    "normal": (_normal, "[mean, std], std >= 0", lambda a: len(a) == 2 and _finite(a) and a[1] >= 0),
    "integer": (_integer, "[low, high] integers, low <= high (both included)",
                lambda a: len(a) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in a) and a[0] <= a[1]),
    "choice": (_choice, "a non-empty list of values", lambda a: len(a) >= 1),
}


def _finite(values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)


def check_distribution(spec: Any, where: str) -> tuple[str, list]:
    """(name, arguments) of a `{name: [args]}` mapping; ConfigError naming the allowed forms."""
    forms = "; ".join(f"{{{name}: {what}}}" for name, (_, what, _) in DISTRIBUTIONS.items())
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise ConfigError(f"{where}: expected one distribution: {forms}")
    ((name, args),) = spec.items()
    if name not in DISTRIBUTIONS:
        raise ConfigError(f"{where}: unknown distribution '{str(name)[:40]}'; allowed: {', '.join(DISTRIBUTIONS)}")
    _, what, ok = DISTRIBUTIONS[name]
    if not isinstance(args, list) or not ok(args):
        raise ConfigError(f"{where}: {name}: {_short(args)}: expected {what}")
    if name == "choice" and not all(v is None or isinstance(v, (bool, int, float, str)) for v in args):
        raise ConfigError(f"{where}: choice: values must be numbers, strings or booleans")
    if name == "choice" and not all(_finite([v]) for v in args if isinstance(v, float)):
        raise ConfigError(f"{where}: choice: {_short(args)}: numbers must be finite")
    return name, args


def draw(vary: Mapping[str, tuple[str, list]], row_key: str, seed: int, where: str = "vary") -> dict[str, Any]:
    """One value per key (sorted), from a Generator seeded by the row's content and the run's seed.

    A draw that is not a finite number (a normal of std 1e308, a uniform over [-1e308, 1e308], a
    loguniform beyond e^709) is a ConfigError naming the key: it could be neither used nor hashed."""
    entropy = int.from_bytes(hashlib.sha256(row_key.encode()).digest()[:16], "little")
    rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(seed,)))
    out = {}
    for key, (name, args) in sorted(vary.items()):
        try:
            value = DISTRIBUTIONS[name][0](rng, *args)
        except OverflowError:  # math.exp of a loguniform beyond e^709
            value = math.inf
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{where}.{key}: {name}: {_short(args)} drew {value} for seed {seed}: the distribution "
                              "reaches beyond finite numbers; narrow it")
        out[key] = value
    return out


# -- runs ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunSpec:
    """One run of a batch: everything a worker needs, as plain data (picklable, JSON-able)."""

    id: str
    index: int  # position in the manifest's list of runs (--index K)
    row: int  # manifest row it came from
    scenario: str  # as written in the manifest
    scenario_path: str  # resolved file
    seed: int
    set: dict = field(default_factory=dict)
    drawn: dict = field(default_factory=dict)
    pictures: bool = False

    @property
    def overrides(self) -> dict[str, Any]:
        return {**self.set, **self.drawn}

    def to_dict(self) -> dict:
        return {"id": self.id, "index": self.index, "row": self.row, "scenario": self.scenario,
                "scenario_path": self.scenario_path, "seed": self.seed, "set": dict(self.set),
                "drawn": dict(self.drawn), "pictures": self.pictures}

    @classmethod
    def from_dict(cls, data: Mapping) -> "RunSpec":
        return cls(**{k: data[k] for k in ("id", "index", "row", "scenario", "scenario_path", "seed", "set", "drawn",
                                           "pictures")})


@dataclass(frozen=True)
class Manifest:
    path: Path
    runs: tuple  # RunSpec, in order
    retries: int = 2


def canonical(value: Any) -> str:
    """JSON with sorted keys and exact floats: the text that is hashed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def run_id(scenario: str, seed: int, overrides: Mapping[str, Any], stem: str | None = None) -> str:
    """`<scenario>-s<seed>-<hash>`; `stem` (run_stem(scenario)) may be given when naming many runs of a row."""
    digest = hashlib.sha256(canonical({"scenario": scenario, "seed": seed, "overrides": overrides}).encode())
    return f"{stem or run_stem(scenario)}-s{seed}-{digest.hexdigest()[:10]}"


def run_stem(scenario: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", Path(scenario).stem).strip("_")[:40] or "scenario"


def load_manifest(path: str | Path, resolve_scenario=None, pictures: bool = False) -> Manifest:
    """Read a manifest and list its runs; every error is one ConfigError naming the file and the key.

    `resolve_scenario(text, base_dir, where) -> Path` finds a scenario by name or path (ConfigError if none).
    """
    path = Path(path)
    data = read_yaml(path, "batch manifest")
    where = f"manifest {path}"
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping with keys {', '.join(MANIFEST_KEYS)}")
    _check_keys(data, MANIFEST_KEYS, where)
    retries = data.get("retries", 2)
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES:
        raise ConfigError(f"{where}: retries = {_short(retries)}: expected an integer in [0, {MAX_RETRIES}]")
    default_pictures = _flag(data, "pictures", where, pictures)
    rows = data.get("runs")
    if not isinstance(rows, list) or not rows:
        raise ConfigError(f"{where}: runs: expected a non-empty list of {{scenario, seeds, set, vary}}")
    planned = []
    counts = [len(_seeds(row, f"{where}: runs[{i}]")) if isinstance(row, Mapping) else 0 for i, row in enumerate(rows)]
    if sum(counts) > MAX_RUNS:
        raise ConfigError(f"{where}: {sum(counts)} runs: at most {MAX_RUNS} per manifest (split it)")
    seen: dict[str, str] = {}
    for i, row in enumerate(rows):
        w = f"{where}: runs[{i}]"
        if not isinstance(row, Mapping):
            raise ConfigError(f"{w}: expected a mapping with keys {', '.join(ROW_KEYS)}")
        _check_keys(row, ROW_KEYS, w)
        scenario = row.get("scenario")
        if not isinstance(scenario, str) or not scenario:
            raise ConfigError(f"{w}.scenario: expected a shipped scenario name or a scenario file path")
        scenario_path = resolve_scenario(scenario, path.parent, f"{w}.scenario") if resolve_scenario else Path(scenario)
        overrides = row.get("set") or {}
        if not isinstance(overrides, Mapping) or not all(isinstance(k, str) for k in overrides):
            raise ConfigError(f"{w}.set: expected a mapping of dotted keys to values")
        for key, value in overrides.items():
            if not (value is None or isinstance(value, (bool, int, float, str))) or (
                    isinstance(value, float) and not math.isfinite(value)):
                raise ConfigError(f"{w}.set.{key} = {_short(value)}: expected a finite number, a string or a boolean")
        vary_raw = row.get("vary") or {}
        if not isinstance(vary_raw, Mapping) or not all(isinstance(k, str) for k in vary_raw):
            raise ConfigError(f"{w}.vary: expected a mapping of dotted keys to distributions")
        vary = {key: check_distribution(spec, f"{w}.vary.{key}") for key, spec in vary_raw.items()}
        both = sorted(set(vary) & set(overrides))
        if both:
            raise ConfigError(f"{w}: {both[0]} is both set and varied; keep one")
        row_pictures = _flag(row, "pictures", w, default_pictures)
        row_key = canonical({"scenario": scenario, "set": dict(overrides),
                             "vary": {k: {n: a} for k, (n, a) in vary.items()}})
        stem = run_stem(scenario)
        for seed in _seeds(row, w):
            drawn = draw(vary, row_key, seed, f"{w}.vary")
            spec = RunSpec(run_id(scenario, seed, {**overrides, **drawn}, stem), len(planned), i, scenario,
                           str(scenario_path), seed, dict(overrides), drawn, row_pictures)
            if spec.id in seen:
                raise ConfigError(f"{w}: seed {seed} repeats the run {spec.id} of {seen[spec.id]} (same scenario, "
                                  "seed and values)")
            seen[spec.id] = f"runs[{i}]"
            planned.append(spec)
    return Manifest(path, tuple(planned), retries)


def _seeds(row: Mapping, where: str) -> list[int] | range:
    if "seeds" in row and "seed" in row:
        raise ConfigError(f"{where}: give seeds or seed, not both")
    if "seed" in row:
        seeds: Any = [row["seed"]]
    else:
        seeds = row.get("seeds", [0])
    if isinstance(seeds, Mapping):
        if set(seeds) != {"first", "count"}:
            raise ConfigError(f"{where}.seeds: expected a list of integers or {{first: F, count: N}}")
        first, count = seeds["first"], seeds["count"]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (first, count)) or first < 0 or not (
                0 < count <= MAX_RUNS) or first + count > 2**32:
            raise ConfigError(f"{where}.seeds = {_short(dict(seeds))}: first >= 0, 0 < count <= {MAX_RUNS}, "
                              "first + count <= 2^32")
        return range(first, first + count)
    if not isinstance(seeds, list) or not seeds or len(seeds) > MAX_RUNS:
        raise ConfigError(f"{where}.seeds: expected a non-empty list of integers (or {{first: F, count: N}})")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < 2**32:
            raise ConfigError(f"{where}.seeds: {_short(s)}: seeds are integers in [0, 2^32)")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"{where}.seeds: {_short(seeds)} repeats a seed")
    return seeds


def _flag(data: Mapping, key: str, where: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: {key} = {_short(value)}: expected true or false")
    return value


def _check_keys(data: Mapping, allowed, where: str) -> None:
    unknown = sorted(str(k)[:40] for k in set(map(str, data)) - set(allowed))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {', '.join(allowed)}")


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
