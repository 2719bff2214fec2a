"""Puts this folder on sys.path so every test folder can import the shared plumbing (netns_common)."""
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: starts processes (servers, nodes, builds); deselect with -m 'not slow'")
