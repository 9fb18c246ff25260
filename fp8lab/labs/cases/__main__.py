"""``python -m fp8lab.labs.cases --write | --check``: the shipped lab table from solutions/."""

import sys

from . import main

sys.exit(main())
