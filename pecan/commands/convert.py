"""`pecan convert MANIFEST.csv --out OUT_DIR [--workers 4]`: convert the receptor, crystal and pose files a
manifest CSV lists into PECAN shards and their index.

Needs the convert extra (pip install -e '.[convert]'), imported only when this command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pecan.commands import add_progress_option, progress_mode


def parse_args(argv=None, prog: str | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument(
        "manifest", type=Path, help="CSV: complex_id, receptor, poses[, crystal_ligand, affinity, score_property]"
    )
    parser.add_argument("--out", type=Path, required=True, help="output directory for shards and index")
    parser.add_argument("--pocket-radius", type=float, default=8.0, help="receptor atoms kept around each pose (A)")
    parser.add_argument("--rmsd-threshold", type=float, default=2.0, help="label 1 when RMSD is below this (A)")
    parser.add_argument("--complexes-per-shard", type=int, default=50)
    parser.add_argument("--workers", type=int, default=1, help="conversion processes")
    parser.add_argument("--prefix", default="converted", help="shard names <prefix>_0000.hdf5, index <prefix>_all.csv")
    parser.add_argument(
        "--drop-hetero",
        action="store_true",
        help="drop the receptor's HETATM residues (metals, cofactors); waters are always dropped",
    )
    add_progress_option(parser)
    return parser.parse_args(argv)


def main(argv=None, prog: str | None = None) -> int:
    """Run the conversion and print the summary line; 2 for a bad invocation or manifest, 1 when no complex
    converted."""
    args = parse_args(argv, prog)
    from pecan.convert.complexes import Options
    from pecan.convert.run import convert, summary_line

    if args.pocket_radius <= 0 or args.rmsd_threshold <= 0 or args.complexes_per_shard < 1 or args.workers < 1:
        print(
            "error: --pocket-radius and --rmsd-threshold must be > 0, --complexes-per-shard and --workers >= 1",
            file=sys.stderr,
        )
        return 2
    options = Options(
        pocket_radius=args.pocket_radius, rmsd_threshold=args.rmsd_threshold, drop_hetero=args.drop_hetero
    )
    try:
        summary = convert(
            args.manifest,
            args.out,
            options,
            args.prefix,
            args.complexes_per_shard,
            args.workers,
            progress=progress_mode(args),
        )
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(summary_line(summary))
    return 0 if summary["complexes"] else 1
