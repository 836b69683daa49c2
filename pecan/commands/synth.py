"""`pecan synth --out DIR | --config RUN.yaml [options]`: write a deterministic synthetic PECAN data set (HDF5
shards + index CSV).

Example: pecan synth --out data/demo --shards 4 --complexes-per-shard 10 --poses-per-complex 10:30 --seed 0
With --config RUN.yaml the output directory, index name and RMSD threshold come from the run's data
section (data_dir, train_csvs[0], rmsd_threshold) and generation is skipped when that directory
already holds the same data set (--ensure), so `make demo` can call it on every run.
"""

from __future__ import annotations

import argparse
import pathlib
import time

from pecan.synthetic import dataset_is_current, ensure_dataset, generate_dataset


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


def parse_args(argv=None, prog=None):
    """Command-line options; names mirror generate_dataset's arguments."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, help="output directory")
    parser.add_argument(
        "--config", type=pathlib.Path, help="run config whose data section names the output (implies --ensure)"
    )
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--complexes-per-shard", type=int, default=10)
    parser.add_argument("--poses-per-complex", type=int_range, default=(10, 30), metavar="LO:HI")
    parser.add_argument("--pocket-atoms", type=int_range, default=(300, 900), metavar="LO:HI")
    parser.add_argument("--ligand-atoms", type=int_range, default=(15, 60), metavar="LO:HI")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rmsd-threshold", type=float, help="default 2.0, or the config's")
    parser.add_argument("--index-name", help="default index.csv, or the config's first train CSV")
    parser.add_argument("--no-crystal", action="store_true", help="omit the pdbbind crystal poses")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument(
        "--ensure", action="store_true", help="skip generation when --out already holds this exact data set"
    )
    args = parser.parse_args(argv)
    if args.config is None and args.out is None:
        parser.error("one of --out or --config is required")
    return args


def apply_config(args):
    """Fill output directory, index name and threshold from a run config's data section."""
    if args.config is not None:
        from pecan.config import load

        data = load(args.config).data
        if args.out is None and not data.data_dir:
            raise SystemExit(f"{args.config}: data.data_dir is empty; pass --out")
        args.out = args.out or pathlib.Path(data.data_dir)
        first_csv = data.train_csvs[0] if data.train_csvs else ""
        if args.index_name is None and first_csv and pathlib.Path(first_csv).name == first_csv:
            args.index_name = first_csv
        if args.rmsd_threshold is None:
            args.rmsd_threshold = data.rmsd_threshold
        args.ensure = True
    args.index_name = args.index_name or "index.csv"
    args.rmsd_threshold = 2.0 if args.rmsd_threshold is None else args.rmsd_threshold
    return args


def main(argv=None, prog=None) -> int:
    """Generate the data set and print where it went and how fast."""
    args = apply_config(parse_args(argv, prog))
    settings = dict(
        n_shards=args.shards,
        complexes_per_shard=args.complexes_per_shard,
        poses_per_complex=args.poses_per_complex,
        pocket_atoms=args.pocket_atoms,
        ligand_atoms=args.ligand_atoms,
        with_crystal=not args.no_crystal,
        rmsd_threshold=args.rmsd_threshold,
        seed=args.seed,
        index_name=args.index_name,
    )
    if args.ensure and dataset_is_current(args.out, **settings):
        print(f"{args.out} already holds this synthetic data set; nothing to do")
        return 0
    write = ensure_dataset if args.ensure else generate_dataset
    start = time.perf_counter()
    shards = write(args.out, progress=not args.no_progress, **settings)
    elapsed = time.perf_counter() - start
    with open(args.out / args.index_name) as index:
        samples = sum(1 for _ in index) - 1
    print(
        f"{len(shards)} shards, {samples} samples in {args.out} "
        f"({elapsed:.1f} s, {samples / max(elapsed, 1e-9):.0f} samples/s)"
    )
    return 0
