"""The compiled per-ray loops (radarays_ros.compiled): their options, and a clear fallback where numba
cannot cache."""
from __future__ import annotations

import importlib
import pkgutil

import numba
import numpy as np
import pytest

from radarays_ros import compiled


def _compiled_loops() -> dict[str, object]:
    """Every numba dispatcher defined in the radarays_ros and lidar_ros modules, by dotted name."""
    found = {}
    for package in ("radarays_ros", "lidar_ros"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if ".ros." in info.name + "." or info.name.endswith(("kernel_warmup", "__main__")):
                continue
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if isinstance(value, numba.core.registry.CPUDispatcher) and value.py_func.__module__ == info.name:
                    found[f"{info.name}.{name}"] = value
    return found


def test_every_compiled_loop_runs_without_the_gil_with_ieee_division():
    """nogil: the frame's threads run them side by side; error_model numpy: x / 0 is inf as in numpy (no
    exception, no hidden test); no fastmath: the same bits as the numpy formulas they replace."""
    loops = _compiled_loops()
    assert {"lidar_ros.physics.echoes._echo_kernel", "radarays_ros.tracing.embree._finish_span"} <= set(loops)
    for name, loop in loops.items():
        options = loop.targetoptions
        assert options.get("nogil") is True, name
        assert options.get("error_model") == "numpy", name
        assert not options.get("fastmath"), name


def test_division_by_zero_in_a_loop_gives_inf_as_numpy_does():
    @compiled.kernel
    def ratio(a, b):
        return a / b

    assert ratio(np.float32(1.0), np.float32(0.0)) == np.inf
    assert np.isnan(ratio(0.0, 0.0))


def test_a_loop_that_cannot_be_cached_is_compiled_anyway_with_one_clear_warning(monkeypatch):
    real = numba.njit

    def njit(**options):
        if options.get("cache"):
            raise RuntimeError("cannot cache function 'twice': no locator available for file '/ro/x.py'")
        return real(**options)

    monkeypatch.setattr(compiled.numba, "njit", njit)

    def twice(x):
        return 2 * x

    with pytest.warns(RuntimeWarning, match="NUMBA_CACHE_DIR"):
        loop = compiled.kernel(twice)
    assert loop(21) == 42
