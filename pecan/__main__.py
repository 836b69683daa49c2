"""`python -m pecan ...` is the `pecan` command."""

from pecan.cli import run

run()
