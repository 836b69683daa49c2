"""`python -m pecan ...` is the `pecan` command."""

import sys

from pecan.cli import main

sys.exit(main())
