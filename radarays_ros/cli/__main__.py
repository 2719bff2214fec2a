"""`python -m radarays_ros.cli ...`: the `radarays` command."""
import sys

from . import main

sys.exit(main())
