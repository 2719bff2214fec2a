"""Layering: only radarays_ros/ros/ may import rclpy (or ROS message packages); everything else runs without ROS."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROS_ONLY = {"rclpy", "rcl_interfaces", "std_msgs", "sensor_msgs", "geometry_msgs", "nav_msgs", "tf2_msgs",
            "tf2_ros", "rosgraph_msgs", "diagnostic_msgs", "builtin_interfaces", "launch", "launch_ros"}


def modules_below_ros() -> list[str]:
    """Dotted names of every module of radarays_ros (outside radarays_ros/ros/) and lidar_ros."""
    names = []
    for package in ("radarays_ros", "lidar_ros"):
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).with_suffix("")
            if rel.parts[:2] == ("radarays_ros", "ros"):
                continue
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            names.append(".".join(parts))
    return names


def test_no_module_below_ros_names_a_ros_package():
    offenders = []
    for name in modules_below_ros():
        path = REPO / Path(*name.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = [node.module.split(".")[0]]
            else:
                continue
            offenders += [f"{name}:{node.lineno} imports {root}" for root in roots if root in ROS_ONLY]
    assert offenders == []


def test_importing_everything_below_ros_loads_no_rclpy():
    """Transitively too (a package __init__ or a helper pulling in the ROS layer would show here)."""
    script = ("import importlib, sys\n"
              f"for name in {modules_below_ros()!r}:\n"
              "    importlib.import_module(name)\n"
              f"loaded = sorted(m for m in sys.modules if m.split('.')[0] in {sorted(ROS_ONLY)!r})\n"
              "print(loaded)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
