"""Moved to `radarays_ros.cli.scenario` (the command line lives at the top of the package, models hold models).
This path stays for old imports: it is that module (the same object, private names included)."""
import sys

from radarays_ros.cli import scenario as _moved

sys.modules[__name__] = _moved
