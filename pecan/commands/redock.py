"""`pecan redock MANIFEST.csv --out DIR`: redock each crystal ligand into its receptor with AutoDock Vina.

Each complex starts from an RDKit ETKDG conformer (never the crystal geometry) and is docked into a box
around the crystal ligand. Writes DIR/poses/<complex_id>.sdf (SD property docking_score), DIR/manifest.csv
for `pecan convert DIR/manifest.csv --out SHARDS`, DIR/redock.csv (seed, poses,
best_docking_score, seconds per complex) and DIR/failures.csv. A rerun skips finished complexes. Under torchrun,
srun or flux each rank docks every world_size-th complex of the manifest and the last rank to finish writes the
tables; `--dry-run` prints each rank's share. Needs the dock extra (pip install -e '.[dock]') and Open Babel's
obabel for PDB receptors. See docs/redock.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pecan.commands import add_progress_option, progress_mode
from pecan.commands.shares import add_share_options, place_of, rerun_command, stopped_place
from pecan.runtime.keywords import same_named


def parse_args(argv=None, prog: str | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument("manifest", type=Path, help="CSV: complex_id, receptor, crystal_ligand[, seed, ...]")
    parser.add_argument("--out", type=Path, required=True, help="output directory (poses, manifest.csv, ...)")
    parser.add_argument("--exhaustiveness", type=int, default=8, help="Vina's search effort (default 8)")
    parser.add_argument("--n-poses", type=int, default=20, help="poses kept per complex (default 20)")
    parser.add_argument(
        "--energy-range", type=float, default=10.0, help="kcal/mol above the best pose that are still kept (default 10)"
    )
    parser.add_argument(
        "--box-padding",
        type=float,
        default=4.0,
        help="A added on every side of the crystal ligand's extent (default 4)",
    )
    parser.add_argument(
        "--box-size",
        type=float,
        default=0.0,
        help="a cubic box of this edge (A) instead of extent + padding (default: off)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=1,
        help="run seed; each complex's seed derives from it and its id (recorded in redock.csv)",
    )
    parser.add_argument("--scoring", choices=("vina", "vinardo"), default="vina")
    parser.add_argument("--workers", type=int, default=1, help="complexes docked at once (processes)")
    parser.add_argument("--cpu", type=int, default=1, help="Vina threads per complex")
    parser.add_argument(
        "--timeout",
        type=float,
        default=0.0,
        help="seconds one complex's Vina search may take; past it the complex is recorded as failed "
        "(default 0: no limit)",
    )
    parser.add_argument(
        "--replace",
        action="store_true",
        help="--out holds the poses, records and tables of another plan (other options or manifest): "
        "remove them and write "
        "this plan's (without it such a run is refused; a rerun of the same plan resumes)",
    )
    add_share_options(parser, "complexes")
    add_engine_options(parser)
    add_progress_option(parser)
    return parser.parse_args(argv)


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """--engine, --scheduler-file, --costs: the jobs on a running Dask cluster, longest first (docs/redock.md)."""
    parser.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="local: this process's --workers (default); dask: the Dask cluster of --scheduler-file, each complex "
        "handed to the next free worker, the longest first, a lost worker's complex docked again elsewhere "
        "(the dist extra)",
    )
    parser.add_argument("--scheduler-file", type=Path, help="with --engine dask: the file `dask scheduler` wrote")
    parser.add_argument(
        "--costs",
        type=Path,
        help="with --engine dask: an earlier run's redock.csv; its seconds order the complexes (default: the "
        "ligand's heavy atoms x (1 + rotatable bonds))",
    )


def _check(args: argparse.Namespace) -> str:
    if args.exhaustiveness < 1 or args.n_poses < 1 or args.workers < 1 or args.cpu < 1:
        return "--exhaustiveness, --n-poses, --workers and --cpu must be >= 1"
    if args.energy_range <= 0 or args.box_padding < 0 or args.box_size < 0 or args.timeout < 0:
        return "--energy-range must be > 0, --box-padding, --box-size and --timeout >= 0"
    if (args.engine == "dask") != (args.scheduler_file is not None) or (args.costs and args.engine != "dask"):
        return "--engine dask needs --scheduler-file, and --scheduler-file and --costs need --engine dask"
    return ""


def check_outputs(args: argparse.Namespace) -> None:
    """--out (a directory) and the files written there (manifest.csv, redock.csv, failures.csv, poses/,
    records/, receptors/) may be neither the input manifest nor a file it names (ConfigError, exit 2)."""
    from pecan.redock.run import read_manifest
    from pecan.runtime import outputs

    rows = read_manifest(args.manifest)
    inputs = [("the manifest", args.manifest), *outputs.manifest_files(rows, ("receptor", "crystal_ligand"))]
    names = ("manifest.csv", "redock.csv", "failures.csv", "poses", "records", "receptors")
    written = [("--out", args.out), *((f"its {name}", args.out / name) for name in names)]
    written += [(f"the poses of {cid}", args.out / "poses" / f"{cid}.sdf") for cid in rows["complex_id"]]
    outputs.check_outputs("pecan redock", written, inputs)


def main(argv=None, prog: str | None = None) -> int:
    """Run the redocking and print the summary line; SIGINT or SIGTERM end it with 130 or 143 and a line
    saying how to resume (finished complexes kept, the ones in flight recorded as interrupted)."""
    from pecan.runtime.pool import Stopped, stop_on_signals

    with stop_on_signals():
        try:
            return _run(argv, prog)
        except Stopped as stop:
            from pecan.redock.run import stopped_line

            words = [*(prog or "pecan redock").split(), *(sys.argv[1:] if argv is None else argv)]
            command = rerun_command(words, stopped_place())
            print(stopped_line(stop, command), file=sys.stderr)
            return stop.exit_code


def _run(argv, prog: str | None) -> int:
    from pecan.runtime.errors import OutDirInUse

    args = parse_args(argv, prog)
    problem = _check(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        from pecan.redock.dock import DockOptions
        from pecan.redock.run import dry_run_lines, redock, summary_line

        place = place_of(args)
        options = DockOptions(**same_named(args, DockOptions))  # every field is the flag of its name
        if args.dry_run:
            lines = dry_run_lines(args.manifest, args.out, options, place.world_size)
            print("\n".join(lines) if place.rank == 0 else "", end="\n" if place.rank == 0 else "")
            return 0
        check_outputs(args)
        engine = _engine(args, place)
        summary = redock(
            args.manifest, args.out, options, args.workers, progress_mode(args), place, args.replace, engine
        )
    except ImportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (OSError, ValueError, OutDirInUse) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(summary_line(summary))
    return 0 if summary["complexes"] or not summary["merged"] else 1


def _engine(args: argparse.Namespace, place):
    """None for the local pool; the Dask engine (one client process, never one per launcher rank)."""
    if args.engine == "local":
        return None
    if place.is_distributed:
        raise ValueError(f"--engine dask runs in one process, the cluster's client; this is {place.describe()}")
    from pecan.redock.engine import dask_engine
    from pecan.redock.run import read_manifest

    return dask_engine(read_manifest(args.manifest), args.scheduler_file, args.costs)
