"""The subcommands of the `pecan` command; each module has ``main(argv, prog) -> int`` with its own parser.

The options several subcommands share are defined once here. A command that runs a job hands it to the run
harness (``pecan.engine.harness.run``), which sets up the process and chooses the exit code.
"""

from __future__ import annotations

import argparse


def add_set_option(parser: argparse.ArgumentParser) -> None:
    """``--set SECTION.KEY=VALUE`` (repeatable), collected as ``args.overrides``."""
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override a config value; the value is parsed as YAML (repeatable)",
    )


def add_allow_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--allow-setting-change KEY`` (repeatable), collected as ``args.allow``: a setting the checkpoint pins
    that may differ from the trained one."""
    parser.add_argument(
        "--allow-setting-change", dest="allow", action="append", default=[], metavar="KEY", help=help_text
    )


def add_progress_option(parser: argparse.ArgumentParser) -> None:
    """``--progress auto|bar|lines|off`` and its older spelling ``--no-progress``; read back with
    ``progress_mode(args)``."""
    parser.add_argument(
        "--progress",
        choices=("auto", "bar", "lines", "off"),
        default="auto",
        help="auto: a bar on a terminal, else a line every 30 s (never carriage returns in a file)",
    )
    parser.add_argument("--no-progress", action="store_true", help="same as --progress off")


def progress_mode(args: argparse.Namespace) -> str:
    """The progress mode the command line asked for."""
    return "off" if args.no_progress else args.progress
