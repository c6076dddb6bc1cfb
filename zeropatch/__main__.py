"""``python -m zeropatch``: the same command line as ``zeropatch``."""

import sys

from zeropatch._cli import main

sys.exit(main())
