"""``python -m fp8lab.train``: the same as ``fp8lab train``."""

import sys

from .cli import main

sys.exit(main())
