"""The options `pecan redock` and `pecan convert` share for taking a rank's share of a manifest."""

from __future__ import annotations

import argparse

from pecan.runtime.shares import Place


def discover_place() -> Place:
    """Rank and world size from the launcher's environment (torchrun, srun, flux), else one rank; a malformed
    environment is a ValueError naming the variable."""
    from pecan.engine.launchers import discover

    env = discover()
    return Place(env.rank, env.world_size, env.launcher)


def add_share_options(parser: argparse.ArgumentParser, unit: str) -> None:
    """``--dry-run`` (print each rank's share of the plan's ``unit`` and stop) and ``--ranks N`` (plan the
    dry run for N ranks instead of the launcher's)."""
    parser.add_argument("--dry-run", action="store_true", help=f"print each rank's share of the {unit} and run nothing")
    parser.add_argument(
        "--ranks",
        type=int,
        default=0,
        help="with --dry-run: the number of ranks to plan for (default: the launcher's, else 1)",
    )


def place_of(args: argparse.Namespace) -> Place:
    """This process's rank and world size from the launcher (ValueError naming a malformed variable); a dry
    run's ``--ranks`` overrides the world size."""
    if args.ranks < 0 or (args.ranks and not args.dry_run):
        raise ValueError("--ranks needs --dry-run and must be >= 1 (a real run takes its ranks from the launcher)")
    place = discover_place()
    return Place(0, args.ranks, "--ranks") if args.ranks else place
