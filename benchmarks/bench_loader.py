"""Loader benchmark: every I/O level plus an in-RAM gather, side by side on one generated data set.

    python -m benchmarks.bench_loader --data /tmp/pecan-bench --workers 0 1 2 --samples 4000 --repeats 3 \
        --out bench_loader.json

Stages:
  1. generate (once) >= 100k poses of ~500 atoms with the synthetic generator (pecan synth); pack (once, timed)
  2. for each worker count: one persistent DataLoader per level, one warm-up pass over a fixed random subset
     (fills handle/decode caches, maps packs), then ``repeats`` timed passes, levels interleaved round-robin
     so machine noise hits all of them alike; medians and ratios
  3. strace: openat syscalls per sample for reopen and packed (difference of two run lengths, so start-up
     opens cancel out)
  4. trainer: the trainer's data-wait share of an epoch on the demo model, reopen vs packed
  5. open (only when asked): a later run's first open of the existing packs, ``repeats`` times: look-up,
     the shards' fingerprints and the packs' checksums (pecan.data.integrity), as prepare_packs does them
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from pecan.config import DataConfig
from pecan.data.loader import load_split_indexes, make_dataset, make_loader, prepare_packs
from pecan.data.packed import PackedDataset
from pecan.data.sample import COUNTER_FIELDS, counters_to_dict
from pecan.data.settings import ReaderSettings
from pecan.report import io_ratios

ROOT = Path(__file__).resolve().parents[1]

LEVELS = ("reopen", "handle_cache", "hoist", "decode_cache", "packed", "in_ram")


def parse_args(argv=None) -> argparse.Namespace:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--data",
        default=str(Path(tempfile.gettempdir()) / "pecan-bench"),
        help="data set directory (generated on first use)",
    )
    parser.add_argument("--shards", type=int, default=50)
    parser.add_argument("--complexes-per-shard", type=int, default=100)
    parser.add_argument("--poses-per-complex", default="10:30")
    parser.add_argument("--pocket-atoms", default="420:560", help="pocket size range (atoms per pose ~500)")
    parser.add_argument("--samples", type=int, default=4000, help="fixed random subset measured per level")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--levels", nargs="+", default=list(LEVELS), choices=LEVELS)
    parser.add_argument(
        "--stages",
        nargs="+",
        default=["loader", "strace", "trainer"],
        choices=["loader", "strace", "trainer", "open"],
        help="loader: levels side by side; strace: openat per sample (needs strace); "
        "trainer: the trainer's data-wait share; open: a later run's first open of the existing packs",
    )
    parser.add_argument("--out", default="", help="write all results as JSON here")
    parser.add_argument("--strace-child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--child-samples", type=int, default=0, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def span(text: str) -> tuple[int, int]:
    lo, _, hi = text.partition(":")
    return int(lo), int(hi or lo)


def ensure_data(args) -> DataConfig:
    """Generate the data set once; return a data config over it."""
    from pecan.synthetic import ensure_dataset

    start = time.perf_counter()
    ensure_dataset(
        args.data,
        n_shards=args.shards,
        complexes_per_shard=args.complexes_per_shard,
        poses_per_complex=span(args.poses_per_complex),
        pocket_atoms=span(args.pocket_atoms),
        seed=0,
    )
    print(f"data set ready in {time.perf_counter() - start:.1f}s: {args.data}", flush=True)
    return DataConfig(data_dir=args.data, train_csvs=["index.csv"], val_fraction=0.0)


def build(level: str, cfg: DataConfig, index, packs):
    """The dataset of one level (in_ram: the packed gather over arrays read whole into memory)."""
    if level == "in_ram":
        return PackedDataset(index, packs, ReaderSettings(in_memory=True))
    return make_dataset(cfg, index, packs, io_mode=level)


def one_pass(loader) -> tuple[float, int, np.ndarray]:
    """Seconds, samples and summed counters of one pass over the loader."""
    counts = np.zeros(len(COUNTER_FIELDS), dtype=np.int64)
    samples = 0
    start = time.perf_counter()
    for batch, batch_counts in loader:
        counts += batch_counts
        samples += batch.num_graphs
    return time.perf_counter() - start, samples, counts


def measure(args, cfg, index, packs, subset: list[int]) -> list[dict]:
    """Round-robin timed passes over persistent loaders, one per level and worker count."""
    results = []
    for workers in args.workers:
        loaders, warmup = {}, {}
        for level in args.levels:
            dataset = build(level, cfg, index, packs)
            loaders[level] = make_loader(dataset, subset, args.batch_size, workers)
            seconds, samples, counts = one_pass(loaders[level])
            warmup[level] = counters_to_dict(torch.from_numpy(counts))
            print(
                f"  warm-up {level:<13} workers={workers}: {samples / seconds:9.1f} samples/s, "
                f"{warmup[level]['file_opens']} file opens",
                flush=True,
            )
        timings = {level: [] for level in args.levels}
        steady = {level: np.zeros(len(COUNTER_FIELDS), dtype=np.int64) for level in args.levels}
        for repeat in range(args.repeats):
            for level in args.levels:
                seconds, samples, counts = one_pass(loaders[level])
                timings[level].append(samples / seconds)
                steady[level] += counts
        for level in args.levels:
            counts = counters_to_dict(torch.from_numpy(steady[level]))
            results.append(
                {
                    "level": level,
                    "workers": workers,
                    "samples_per_s": timings[level],
                    "median_samples_per_s": statistics.median(timings[level]),
                    **io_ratios(counts),
                    "counts": counts,
                    "warmup_counts": warmup[level],
                }
            )
        for loader in loaders.values():
            loader.close()
    return results


def table(results: list[dict]) -> str:
    """Markdown table with ratios against reopen and in-RAM at the same worker count."""
    lines = [
        "| workers | level | median samples/s | runs | x reopen | / in-RAM | file opens/sample | "
        "HDF5 calls/sample | KiB/sample |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results:
        same = {r["level"]: r["median_samples_per_s"] for r in results if r["workers"] == row["workers"]}
        rate = row["median_samples_per_s"]
        vs_reopen = f"{rate / same['reopen']:.1f}" if "reopen" in same else "-"
        vs_ram = f"{same['in_ram'] / rate:.2f}" if "in_ram" in same else "-"
        runs = ", ".join(f"{v:.0f}" for v in row["samples_per_s"])
        lines.append(
            f"| {row['workers']} | {row['level']} | {rate:.0f} | {runs} | {vs_reopen} | {vs_ram} | "
            f"{row['file_opens_per_sample']:.4f} | {row['h5_calls_per_sample']:.2f} | "
            f"{row['bytes_read_per_sample'] / 1024:.1f} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------- strace


def strace_child(args) -> None:
    """Run in a child under strace: warm up, then serve ``child_samples`` samples in the main process."""
    cfg = DataConfig(data_dir=args.data, train_csvs=["index.csv"], val_fraction=0.0)
    index, _ = load_split_indexes(cfg)
    packs = prepare_packs(cfg, [index])
    dataset = build(args.strace_child, cfg, index, packs)
    dataset.__getitems__([0])
    rng = np.random.default_rng(1)
    order = rng.choice(len(index), size=args.child_samples, replace=False)
    for start in range(0, len(order), args.batch_size):
        dataset.__getitems__(order[start : start + args.batch_size].tolist())


def openat_count(args, level: str, samples: int) -> int:
    """openat calls of a whole child run (strace -f -c)."""
    with tempfile.NamedTemporaryFile(suffix=".strace") as out:
        subprocess.run(
            [
                "strace",
                "-f",
                "-c",
                "-e",
                "trace=openat",
                "-o",
                out.name,
                sys.executable,
                __file__,
                "--data",
                args.data,
                "--strace-child",
                level,
                "--child-samples",
                str(samples),
                "--batch-size",
                str(args.batch_size),
            ],
            check=True,
            capture_output=True,
        )
        for line in Path(out.name).read_text().splitlines():
            parts = line.split()
            if parts and parts[-1] == "openat":
                return int(parts[3]) if len(parts) >= 6 else int(parts[-2])
    return 0


def strace_stage(args) -> dict:
    """openat per sample = (opens(long run) - opens(short run)) / extra samples."""
    out = {}
    long = min(1200, args.samples_total - 1)
    short = long // 6
    for level in ("reopen", "packed"):
        per_sample = (openat_count(args, level, long) - openat_count(args, level, short)) / (long - short)
        out[level] = per_sample
        print(f"  strace openat per sample, {level}: {per_sample:.3f}", flush=True)
    return out


# ---------------------------------------------------------------------------- trainer


def trainer_stage(args) -> dict:
    """Data-wait share of the demo model's training epoch (epoch 2, steady state), reopen vs packed."""
    out = {}
    for level in ("reopen", "packed"):
        run_dir = Path(tempfile.mkdtemp(prefix=f"pecan-bench-{level}-"))
        command = [
            sys.executable,
            str(ROOT / "main_app.py"),
            str(ROOT / "configs" / "demo.yaml"),
            "--set",
            f"data.data_dir={args.data}",
            "--set",
            f"data.io_mode={level}",
            "--set",
            "train.epochs=2",
            "--set",
            "train.max_steps_per_epoch=60",
            "--set",
            "data.val_fraction=0.01",
            "--set",
            f"train.out_dir={run_dir}",
            "--set",
            "train.progress=false",
            "--set",
            "data.num_workers=-1",
        ]
        subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
        records = [json.loads(line) for line in (run_dir / "epochs.jsonl").read_text().splitlines()]
        steady = records[-1]
        out[level] = {
            k: steady[k]
            for k in (
                "data_wait_share",
                "data_wait_s",
                "forward_s",
                "backward_s",
                "optimizer_s",
                "eval_s",
                "wall_s",
                "file_opens_per_sample",
                "h5_calls_per_sample",
            )
        }
        print(
            f"  trainer {level}: data-wait share {steady['data_wait_share']:.1%} of a {steady['wall_s']:.1f}s "
            f"epoch (60 steps + evaluation of 1% of the samples, eval {steady['eval_s']:.1f}s)",
            flush=True,
        )
    return out


def open_stage(args, cfg, index) -> dict:
    """Seconds a later run spends opening packs that exist (look-up, fingerprints, checksums), and their size."""
    seconds = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        packs = prepare_packs(cfg, [index], processes=os.cpu_count() or 1)
        seconds.append(time.perf_counter() - start)
    pack_bytes = sum(Path(p).stat().st_size for p in packs.values() if p is not None)
    print(f"  open of existing packs ({pack_bytes / 2**20:.0f} MiB): {', '.join(f'{s:.3f}' for s in seconds)} s")
    return {"open_seconds": seconds, "median_open_s": statistics.median(seconds), "pack_bytes": pack_bytes}


def main(argv=None) -> int:
    """Run the stages and print the table."""
    args = parse_args(argv)
    torch.set_num_threads(1)
    if args.strace_child:
        strace_child(args)
        return 0
    cfg = ensure_data(args)
    index, _ = load_split_indexes(cfg)
    start = time.perf_counter()
    packs = prepare_packs(cfg, [index], processes=os.cpu_count() or 1, progress=True)
    pack_seconds = time.perf_counter() - start
    print(
        f"{len(index)} samples in {index['shard'].nunique()} shards; packs ready in {pack_seconds:.1f}s "
        f"(0 if they existed)",
        flush=True,
    )
    subset = np.random.default_rng(0).choice(len(index), size=min(args.samples, len(index)), replace=False)
    everything = {
        "samples_total": len(index),
        "shards": int(index["shard"].nunique()),
        "subset": len(subset),
        "batch_size": args.batch_size,
        "pack_seconds": pack_seconds,
    }
    if "loader" in args.stages:
        everything["results"] = measure(args, cfg, index, packs, subset.tolist())
        print(table(everything["results"]), flush=True)
    args.samples_total = len(index)
    if "strace" in args.stages:
        everything["strace_openat_per_sample"] = strace_stage(args)
    if "trainer" in args.stages:
        everything["trainer"] = trainer_stage(args)
    if "open" in args.stages:
        everything["open"] = open_stage(args, cfg, index)
    if args.out:
        Path(args.out).write_text(json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
