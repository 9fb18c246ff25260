"""``python -m fp8lab.labs <subcommand>`` (``make exercises`` runs ``python -m fp8lab.labs generate``)."""

import sys

from .cli import main

sys.exit(main())
