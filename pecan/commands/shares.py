"""The options `pecan redock` and `pecan convert` share for taking a rank's share of a manifest."""

from __future__ import annotations

import argparse
from pathlib import Path

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


def rerun_command(words: list[str], place: Place, launcher_line: list[str] | None = None) -> str:
    """The command line that resumes this run, with its launcher as it was started: torchrun's agent command
    (read from the parent process), ``srun -n N`` or ``flux run -n N`` before ``words``; one rank: ``words``."""
    import shlex

    if place.launcher == "torchrun":
        agent = _parent_command() if launcher_line is None else launcher_line
        if any(Path(word).name == "torchrun" or word == "torch.distributed.run" for word in agent[:3]):
            return shlex.join(agent)
        return shlex.join(words) + f" (on each of the {place.world_size} ranks, as torchrun started them)"
    if place.launcher == "slurm":
        return shlex.join(["srun", "-n", str(place.world_size), *words])
    if place.launcher == "flux":
        return shlex.join(["flux", "run", "-n", str(place.world_size), *words])
    return shlex.join(words)


def _parent_command() -> list[str]:
    """The parent process's command line ([] where /proc cannot tell)."""
    import os

    try:
        raw = Path(f"/proc/{os.getppid()}/cmdline").read_bytes()
    except OSError:
        return []
    return [word.decode(errors="replace") for word in raw.split(b"\0") if word]


def stopped_place() -> Place:
    """This process's place for a stop message (one rank where the launcher's environment cannot be read)."""
    try:
        return discover_place()
    except ValueError:
        return Place()
