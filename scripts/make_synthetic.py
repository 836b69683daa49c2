#!/usr/bin/env python
"""Write a deterministic synthetic PECAN data set (HDF5 shards + index CSV).

Example: python scripts/make_synthetic.py --out data/demo --shards 4 --complexes-per-shard 10 \
    --poses-per-complex 10:30 --seed 0
"""

import argparse
import pathlib
import sys
import time

try:
    import pecan  # noqa: F401
except ImportError:
    # run from a checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from pecan.data.synthetic import ensure_dataset, generate_dataset  # noqa: E402


def int_range(text):
    """Parse "LO:HI" (inclusive) or a single "N" into a (lo, hi) tuple."""
    parts = text.split(":")
    try:
        values = [int(part) for part in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or LO:HI, got {text!r}") from None
    if len(values) == 1:
        values *= 2
    if len(values) != 2 or values[0] > values[1]:
        raise argparse.ArgumentTypeError(f"expected N or LO:HI with LO <= HI, got {text!r}")
    return tuple(values)


def parse_args(argv=None):
    """Command-line options; names mirror generate_dataset's arguments."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=pathlib.Path, help="output directory")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--complexes-per-shard", type=int, default=10)
    parser.add_argument("--poses-per-complex", type=int_range, default=(10, 30), metavar="LO:HI")
    parser.add_argument("--pocket-atoms", type=int_range, default=(300, 900), metavar="LO:HI")
    parser.add_argument("--ligand-atoms", type=int_range, default=(15, 60), metavar="LO:HI")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rmsd-threshold", type=float, default=2.0)
    parser.add_argument("--index-name", default="index.csv")
    parser.add_argument("--no-crystal", action="store_true", help="omit the pdbbind crystal poses")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--ensure", action="store_true",
                        help="skip generation when --out already holds this exact data set")
    return parser.parse_args(argv)


def main(argv=None):
    """Generate the data set and print where it went and how fast."""
    args = parse_args(argv)
    write = ensure_dataset if args.ensure else generate_dataset
    start = time.perf_counter()
    shards = write(args.out, n_shards=args.shards, complexes_per_shard=args.complexes_per_shard,
                   poses_per_complex=args.poses_per_complex, pocket_atoms=args.pocket_atoms,
                   ligand_atoms=args.ligand_atoms, with_crystal=not args.no_crystal,
                   rmsd_threshold=args.rmsd_threshold, seed=args.seed,
                   index_name=args.index_name, progress=not args.no_progress)
    elapsed = time.perf_counter() - start
    with open(args.out / args.index_name) as index:
        samples = sum(1 for _ in index) - 1
    print(f"{len(shards)} shards, {samples} samples in {args.out} "
          f"({elapsed:.1f} s, {samples / max(elapsed, 1e-9):.0f} samples/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
