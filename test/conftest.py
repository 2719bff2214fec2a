"""Puts this folder on sys.path so every test folder imports the shared helpers from the `support` package
(test/support/: test modules import helpers only from there, never from each other); marks process-starting
tests `slow`."""
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


def pytest_collection_modifyitems(config, items):
    """Tests that start ROS 2 nodes or a Gazebo transport peer are `slow` too (colcon and wheel installs are
    marked where they are written): `pytest -m "not slow"` leaves every process-starting test out."""
    import pytest

    for item in items:
        if item.get_closest_marker("ros") is not None or "gz_peer" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
