"""Reading finished (or running) run directories: compare, plot, report, trace (`pecan runs ...`)."""

from __future__ import annotations

import argparse
from typing import Callable


def standalone_main(
    description: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
    argv=None,
    prog: str | None = None,
) -> int:
    """One action as a command of its own (its module's ``main``): the options ``add_arguments`` adds,
    parsed from ``argv`` and handed to ``run`` (the same two functions `pecan runs ACTION` uses)."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    from pecan.engine.harness import invoke

    return invoke(lambda: run(args))  # a damaged or empty record file: named, exit 1
