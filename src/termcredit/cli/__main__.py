"""`python -m termcredit.cli`: what the tests and the `termcredit` script run."""

import sys

from . import main

sys.exit(main())
