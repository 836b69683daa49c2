"""`pecan convert MANIFEST.csv --out OUT_DIR [--workers 4]`: convert the receptor, crystal and pose files a
manifest CSV lists into PECAN shards and their index.

Under torchrun, srun or flux each rank converts every world_size-th shard of the plan (the shards and their
contents do not depend on the number of ranks); the last rank to finish writes the index and failures.csv.
`--dry-run` prints each rank's share and converts nothing. See docs/own-data.md.

Needs the convert extra (pip install -e '.[convert]'), imported only when this command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pecan.commands import add_progress_option, progress_mode
from pecan.commands.shares import add_share_options, place_of, rerun_command, stopped_place


def parse_args(argv=None, prog: str | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument(
        "manifest", type=Path, help="CSV: complex_id, receptor, poses[, crystal_ligand, affinity, score_property]"
    )
    parser.add_argument("--out", type=Path, required=True, help="output directory for shards and index")
    parser.add_argument("--pocket-radius", type=float, default=8.0, help="receptor atoms kept around each pose (A)")
    parser.add_argument("--rmsd-threshold", type=float, default=2.0, help="label 1 when RMSD is below this (A)")
    parser.add_argument(
        "--complexes-per-shard",
        type=int,
        default=500,
        help="complexes per shard file (default 500: a 19,000-complex set is 38 files)",
    )
    parser.add_argument("--workers", type=int, default=1, help="conversion processes")
    parser.add_argument("--prefix", default="converted", help="shard names <prefix>_0000.hdf5, index <prefix>_all.csv")
    parser.add_argument(
        "--drop-hetero",
        action="store_true",
        help="drop the receptor's HETATM residues (metals, cofactors); waters are always dropped",
    )
    parser.add_argument(
        "--replace",
        action="store_true",
        help="--out holds the shards, index and failures.csv of another plan (other options or manifest): "
        "remove them and write "
        "this plan's (without it such a run is refused; a rerun of the same plan resumes)",
    )
    add_share_options(parser, "shards")
    parser.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="local: this process's --workers (default); dask: each complex to the next free worker of the Dask "
        "cluster of --scheduler-file, the largest poses file first, a lost worker's complex converted again "
        "elsewhere (the dist extra)",
    )
    parser.add_argument("--scheduler-file", type=Path, help="with --engine dask: the file `dask scheduler` wrote")
    add_progress_option(parser)
    return parser.parse_args(argv)


def check_outputs(args: argparse.Namespace) -> None:
    """--out (a directory) and the files it gets may be neither the manifest nor a file the manifest names
    (ConfigError, exit 2); shards this converter wrote there before are its own and may be replaced."""
    from pecan.convert.complexes import OPTIONAL_COLUMNS, REQUIRED_COLUMNS
    from pecan.runtime import outputs
    from pecan.runtime.manifest import read_manifest_frame

    rows = read_manifest_frame(args.manifest, REQUIRED_COLUMNS, OPTIONAL_COLUMNS)
    base = args.manifest.resolve().parent
    for column in ("receptor", "poses", "crystal_ligand"):
        if column in rows:
            rows[column] = [str(base / p.strip()) if p.strip() else "" for p in rows[column]]
    inputs = [("the manifest", args.manifest), *outputs.manifest_files(rows)]
    written = [("--out", args.out), ("its failures.csv", args.out / "failures.csv")]
    written.append(("its index", args.out / f"{args.prefix}_all.csv"))
    written += [("a shard it writes", p) for _, p in inputs if _is_shard_name(Path(p), args)]
    outputs.check_outputs("pecan convert", written, inputs)


def _is_shard_name(path: Path, args: argparse.Namespace) -> bool:
    """Whether ``path`` is in --out under a shard name this conversion uses (<prefix>_NNNN.hdf5)."""
    from pecan.runtime.outputs import real

    stem = path.name[len(args.prefix) + 1 : -len(".hdf5")]
    in_out = real(path.parent) == real(args.out)
    return in_out and path.name.startswith(f"{args.prefix}_") and path.suffix == ".hdf5" and stem.isdigit()


def main(argv=None, prog: str | None = None) -> int:
    """Run the conversion and print the summary line; 2 for a bad invocation or manifest, 1 when no complex
    converted. SIGINT or SIGTERM stop every worker and end it with 130 or 143 and a line saying how to resume
    (shards are written whole or not at all; a rerun reuses the finished ones)."""
    from pecan.runtime.pool import Stopped, stop_on_signals

    with stop_on_signals():
        try:
            return _run(argv, prog)
        except Stopped as stop:
            words = [*(prog or "pecan convert").split(), *(sys.argv[1:] if argv is None else argv)]
            print(
                f"stopped by {stop.name}: the shards finished so far are kept; resume with the same command: "
                + rerun_command(words, stopped_place()),
                file=sys.stderr,
            )
            return stop.exit_code


def _run(argv, prog: str | None) -> int:
    from pecan.runtime.errors import OutDirInUse, StorageError

    args = parse_args(argv, prog)
    from pecan.convert.complexes import Options
    from pecan.convert.run import convert, dry_run_lines, summary_line

    if args.pocket_radius <= 0 or args.rmsd_threshold <= 0 or args.complexes_per_shard < 1 or args.workers < 1:
        print(
            "error: --pocket-radius and --rmsd-threshold must be > 0, --complexes-per-shard and --workers >= 1",
            file=sys.stderr,
        )
        return 2
    if (args.engine == "dask") != (args.scheduler_file is not None):
        print("error: --engine dask needs --scheduler-file, and --scheduler-file needs --engine dask", file=sys.stderr)
        return 2
    options = Options(
        pocket_radius=args.pocket_radius, rmsd_threshold=args.rmsd_threshold, drop_hetero=args.drop_hetero
    )
    try:
        place = place_of(args)
        if args.dry_run:
            lines = dry_run_lines(
                args.manifest, args.out, options, args.prefix, args.complexes_per_shard, place.world_size
            )
            print("\n".join(lines) if place.rank == 0 else "", end="\n" if place.rank == 0 else "")
            return 0
        check_outputs(args)
        summary = convert(
            args.manifest,
            args.out,
            options,
            args.prefix,
            args.complexes_per_shard,
            args.workers,
            progress=progress_mode(args),
            place=place,
            replace=args.replace,
            engine=_engine(args, place),
        )
    except StorageError as err:  # a disk that fills or fails while shards are written: the run's fault, not the call's
        print(
            f"error: cannot write {err.strerror or err}; the shards finished so far are kept, rerun to resume",
            file=sys.stderr,
        )
        return 1
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
    from pecan.convert.engine import dask_engine

    return dask_engine(args.scheduler_file)
