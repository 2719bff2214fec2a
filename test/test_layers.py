"""Layering: only radarays_ros/ros/ may import rclpy (or ROS message packages); everything else runs without ROS."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ROS_ONLY = {"rclpy", "rcl_interfaces", "std_msgs", "sensor_msgs", "geometry_msgs", "nav_msgs", "tf2_msgs",
            "tf2_ros", "rosgraph_msgs", "diagnostic_msgs", "builtin_interfaces", "launch", "launch_ros"}


def modules_below_ros() -> list[str]:
    """Dotted names of every module of radarays_ros (outside radarays_ros/ros/) and lidar_ros."""
    names = []
    for package in ("radarays_ros", "lidar_ros"):
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).with_suffix("")
            if rel.parts[:2] == ("radarays_ros", "ros") or "data" in rel.parts or rel.name == "__main__":  # __main__ runs
                continue
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            names.append(".".join(parts))
    return names


def absolute_import_roots(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package) of each absolute import in a Python file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found

def test_no_module_below_ros_names_a_ros_package():
    offenders = []
    for name in modules_below_ros():
        path = REPO / Path(*name.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        offenders += [f"{name}:{line} imports {root}" for line, root in absolute_import_roots(path) if root in ROS_ONLY]
    assert offenders == []


@pytest.mark.slow
def test_importing_everything_below_ros_loads_no_rclpy():
    """A fresh interpreter (a process: marked slow) imports every module below ros/. Transitively too (a package __init__ or a helper pulling in the ROS layer would show here)."""
    script = ("import importlib, sys\n"
              f"for name in {modules_below_ros()!r}:\n"
              "    importlib.import_module(name)\n"
              f"loaded = sorted(m for m in sys.modules if m.split('.')[0] in {sorted(ROS_ONLY)!r})\n"
              "print(loaded)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# -- the rank table of the layers (README, package map): imports only point down ------------------------
BASE = ("radarays_ros", "radarays_ros.errors", "radarays_ros.config_file", "radarays_ros.validate",
        "radarays_ros.limits", "radarays_ros.output_files",
        "radarays_ros.resources", "radarays_ros.threads")
RANKS = [  # (rank, layer, module prefixes); the longest matching prefix decides
    (0, "base", BASE),
    (1, "world", ("radarays_ros.world",)),
    (2, "tracing", ("radarays_ros.tracing",)),
    (3, "radar model", ("radarays_ros.radar",)),
    (3, "lidar model", ("lidar_ros",)),
    (4, "io", ("radarays_ros.io",)),
    (5, "sensors", ("radarays_ros.sensors",)),
    (6, "gazebo", ("radarays_ros.gazebo",)),
    (7, "scenario", ("radarays_ros.scenario",)),
    (8, "ros/cli", ("radarays_ros.ros",)),
]


def all_modules() -> dict[str, Path]:
    out = {}
    for package in ("radarays_ros", "lidar_ros"):
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).with_suffix("")
            if "data" in rel.parts:
                continue
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            out[".".join(parts)] = path
    return out


def layer_of(module: str) -> tuple[int, str]:
    """(rank, layer name) of a module; every command-line module (`cli`, `*_cli`, the `radarays_ros.cli`
    package's modules) is in the top layer."""
    if module.split(".")[-1] == "cli" or module.endswith("_cli") or module.startswith("radarays_ros.cli."):
        return 8, "ros/cli"
    best = None
    for rank, name, prefixes in RANKS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), rank, name)
    assert best is not None, f"{module} is in no layer: add it to RANKS"
    return best[1], best[2]


def imported_modules(module: str, path: Path, known: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, module) of every import of our own modules in a file, at any depth (function-level too)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in known else stem for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import a.b.c` of a name inside a module: its module
                target = target.rpartition(".")[0]
            if target:
                out.append((node.lineno, target))
    return out


def upward_imports() -> list[tuple[str, str, str]]:
    known = all_modules()
    found = []
    for module, path in known.items():
        rank, layer = layer_of(module)
        for line, target in imported_modules(module, path, known):
            target_rank, target_layer = layer_of(target)
            sideways = rank == target_rank and layer != target_layer  # radar model <-> lidar model
            if target_rank > rank or sideways:
                found.append((module, target, f"{module}:{line} ({layer}, rank {rank}) imports {target} "
                                              f"({target_layer}, rank {target_rank})"))
    return found


def test_every_module_is_in_a_layer():
    for module in all_modules():
        layer_of(module)


def test_imports_only_point_down_the_layers():
    # no exceptions: an upward import is fixed where it is made, not listed here
    assert [text for _, _, text in upward_imports()] == []


def test_the_layer_test_sees_an_upward_import(tmp_path):
    """Positive control: an import of the scenario layer from the world layer is reported."""
    fake = tmp_path / "probe.py"
    fake.write_text("from ..scenario import runner\nimport radarays_ros.ros.node\n")
    known = {**all_modules(), "radarays_ros.world.probe": fake}
    targets = [t for _, t in imported_modules("radarays_ros.world.probe", fake, known)]
    assert targets == ["radarays_ros.scenario.runner", "radarays_ros.ros.node"]
    assert all(layer_of(t)[0] > layer_of("radarays_ros.world.probe")[0] for t in targets)


# -- the tests' own layering: helpers live in test/support/, test modules never import each other ---------
def test_test_modules_import_helpers_only_from_support():
    tests = REPO / "test"
    local = {p.stem for p in tests.rglob("*.py") if "support" not in p.relative_to(tests).parts}
    offenders = []
    for path in sorted(tests.rglob("*.py")):
        offenders += [f"{path.relative_to(REPO)}:{line} imports {root} (move it to test/support/)"
                      for line, root in absolute_import_roots(path) if root in local]
    assert offenders == []
