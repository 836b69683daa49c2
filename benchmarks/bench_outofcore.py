"""Out-of-core benchmark: every data.shuffle order over a pack set several times larger than the memory its
reader may use (a cgroup v1 memory limit bounds the page cache), against the same order with the packs in
the page cache.

    python -m benchmarks.bench_outofcore --data /work/pecan-outofcore --total-gb 2 --memory-mb 512 --seconds 20 \
        --repeats 3 --out benchmarks/bench_outofcore.json

Stages:
  1. data (once): a synthetic data set of 8 shards, packed, and the packs copied until the set holds
     ``--total-gb`` (each copy is its own file, so its pages are its own in the page cache; copies get their
     own shard names and complexes, as a larger data set would have)
  2. per order, ``--repeats`` times, 2 then 3 back to back: ``echo 3 > /proc/sys/vm/drop_caches``, then one
     reader process in a fresh memory cgroup
     (``memory.limit_in_bytes`` = ``--memory-mb``: the reader's own memory plus the page cache it may keep)
     gathers batches in the order's sequence for up to ``--seconds``; its ``/proc/self/io`` read_bytes
     (bytes the block layer read for it, readahead included) over the samples it served is the disk bytes
     per sample; the gathered bytes per sample (the pack gather's own counter) is the sample's size
  3. per order: the same reader, outside the cgroup, after every pack was read once into the page cache:
     the in-memory speed of that order

Needs root and cgroup v1's memory controller at /sys/fs/cgroup/memory; without them it says why and stops.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from pecan.runtime import fileio

CGROUP_ROOT = Path("/sys/fs/cgroup/memory")
# "+prefetch": the sampler hands each shard's id to PagePrefetch about one window before its first sample
# (benchmarks/prefetch.py).
ORDERS = ("global", "block", "block+prefetch", "window", "window+prefetch", "complex", "balanced")


def parse_args(argv=None) -> argparse.Namespace:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "pecan-outofcore"))
    parser.add_argument("--total-gb", type=float, default=2.0, help="size of the pack set")
    parser.add_argument("--memory-mb", type=int, default=512, help="the reader's cgroup memory limit")
    parser.add_argument("--orders", nargs="+", default=list(ORDERS))
    parser.add_argument("--window", type=int, default=8, help="shards per window of the window order")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60.0, help="longest read per run (a prefix of the epoch)")
    parser.add_argument("--repeats", type=int, default=3, help="out-of-core/in-memory pairs per order")
    parser.add_argument("--out", default="")
    parser.add_argument("--reader", default="", help=argparse.SUPPRESS)  # internal: one reader run, JSON out
    parser.add_argument("--index", default="", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def prepare(args) -> Path:
    """The base shards and packs, their copies and the index over all copies (built once)."""
    from pecan.config import DataConfig
    from pecan.data.loader import load_split_indexes, prepare_packs
    from pecan.synthetic import ensure_dataset

    data = Path(args.data)
    index_path = data / f"index-{args.total_gb:g}gb.pkl"
    if index_path.exists():
        return index_path
    base = data / "base"
    ensure_dataset(base, n_shards=8, complexes_per_shard=20, poses_per_complex=(10, 30), pocket_atoms=(420, 560))
    cfg = DataConfig(data_dir=str(base), train_csvs=["index.csv"], val_fraction=0.0, cache_dir=str(base / "packs"))
    index, _ = load_split_indexes(cfg)
    packs = prepare_packs(cfg, [index], processes=2)
    copies, parts, total, copy = data / "copies", [], 0, 0
    copies.mkdir(parents=True, exist_ok=True)
    while total < args.total_gb * 2**30:
        for shard, pack in packs.items():
            name = f"c{copy:03d}-{Path(shard).name}"
            target = copies / f"{name}.pecanpack"
            if not target.exists():
                shutil.copyfile(pack, target)
            total += target.stat().st_size
            parts.append(index[index["shard"] == shard].assign(shard=str(copies / name), pack=str(target)))
        copy += 1
    pd.concat(parts, ignore_index=True).to_pickle(index_path)
    print(f"{copy} copies of {len(packs)} packs: {total / 2**30:.2f} GiB in {copies}", flush=True)
    return index_path


def read_bytes() -> int:
    """Bytes the block layer read for this process so far (page-cache misses and their readahead)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("read_bytes:"):
            return int(line.split()[1])
    raise OSError("/proc/self/io has no read_bytes line")


def reader(args) -> dict:
    """One run: gather batches in the order's sequence (rank 0 of 1, epoch 0) for up to ``--seconds``."""
    from benchmarks.prefetch import PagePrefetch, PrefetchingSampler
    from pecan.data.packed import PackedDataset
    from pecan.data.sample import COUNTER_FIELDS

    index = pd.read_pickle(args.index)
    dataset = PackedDataset(index.drop(columns="pack"), dict(zip(index["shard"], index["pack"])))
    table = dataset.table
    # A complex of one copy is its own complex (a larger data set has distinct complexes in every shard).
    complexes = pd.factorize(pd.Series(table.shard_id.astype(np.int64) << 32 | table.complex_code))[0]
    mode, _, prefetch = args.reader.partition("+")
    sampler = PrefetchingSampler(
        len(dataset), shard_ids=table.shard_id, complex_codes=complexes, mode=mode, window=args.window
    )
    if prefetch:
        sampler.prefetch = PagePrefetch(dataset.pack_paths)
    indices = iter(sampler)
    gathered_field = COUNTER_FIELDS.index("bytes_read")
    samples = gathered = 0
    disk_before, start = read_bytes(), time.perf_counter()
    while batch_indices := list(itertools.islice(indices, args.batch_size)):
        batch = dataset.__getitems__(batch_indices)
        samples += batch.num_graphs
        gathered += int(batch.io_counts[gathered_field])
        if time.perf_counter() - start > args.seconds:
            break
    seconds = time.perf_counter() - start
    disk = read_bytes() - disk_before
    return {
        "samples": samples,
        "epoch_samples": len(sampler),
        "seconds": seconds,
        "samples_per_s": samples / seconds,
        "sample_bytes": gathered / samples,
        "disk_bytes_per_sample": disk / samples,
        "disk_to_sample_ratio": disk / gathered,
    }


class MemoryCgroup:
    """A cgroup v1 memory group with a limit; processes started with ``enter`` run (and cache pages) in it."""

    def __init__(self, name: str, limit_mb: int) -> None:
        self.path = CGROUP_ROOT / name
        if self.path.exists():
            self.path.rmdir()
        self.path.mkdir()
        (self.path / "memory.limit_in_bytes").write_text(f"{limit_mb}M")

    def enter(self) -> None:
        """Run in the child between fork and exec: move it into the group."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def peak_bytes(self) -> int:
        """The group's highest charge (the reader's memory plus its page cache)."""
        return int((self.path / "memory.max_usage_in_bytes").read_text())

    def remove(self) -> None:
        """Delete the group (its cached pages move to the parent)."""
        self.path.rmdir()


def cgroup_unavailable() -> str:
    """Why no memory cgroup can be made here (empty when one can)."""
    if not (CGROUP_ROOT / "memory.limit_in_bytes").exists():
        return f"no cgroup v1 memory controller at {CGROUP_ROOT}"
    try:
        MemoryCgroup("pecan-outofcore-probe", 64).remove()
    except OSError as err:
        return f"cannot create a memory cgroup under {CGROUP_ROOT}: {err}"
    return ""


def drop_caches() -> bool:
    """Empty the page cache (root only); whether it was done."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3")
    except OSError:
        return False
    return True


def warm(index_path: Path) -> None:
    """Read every pack once, so the in-memory runs find it in the page cache."""
    for pack in sorted(set(pd.read_pickle(index_path)["pack"])):
        with open(pack, "rb") as stream:
            while stream.read(1 << 24):
                pass


def run_reader(args, index_path: Path, order: str, cgroup: MemoryCgroup | None) -> dict:
    """One reader process (in ``cgroup`` when given); its result."""
    command = [sys.executable, "-m", "benchmarks.bench_outofcore", "--reader", order, "--index", str(index_path)]
    command += ["--window", str(args.window), "--batch-size", str(args.batch_size), "--seconds", str(args.seconds)]
    result = subprocess.run(
        command, capture_output=True, text=True, preexec_fn=cgroup.enter if cgroup else None, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"reader {order} failed ({result.returncode}): {result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def one_pair(args, index_path: Path, order: str) -> tuple[dict, dict]:
    """The order out of core (caches dropped, in the cgroup), then in memory (every pack cached)."""
    dropped = drop_caches()
    cgroup = MemoryCgroup("pecan-outofcore", args.memory_mb)
    try:
        out = run_reader(args, index_path, order, cgroup)
        out["cgroup_peak_bytes"] = cgroup.peak_bytes()
    finally:
        cgroup.remove()
    out["caches_dropped"] = dropped
    warm(index_path)
    return out, run_reader(args, index_path, order, None)


def median_of(runs: list[dict], key: str) -> float:
    """The median of one figure over the repeats."""
    return statistics.median(run[key] for run in runs)


def measure(args, index_path: Path, report: dict) -> None:
    """Per order, ``repeats`` pairs back to back (so both halves of a pair meet the same machine load);
    medians, and the median of the pairs' speed ratios. The report is written after every order."""
    for order in args.orders:
        pairs = [one_pair(args, index_path, order) for _ in range(args.repeats)]
        out, cached = [p[0] for p in pairs], [p[1] for p in pairs]
        result = {
            "out_of_core_samples_per_s": median_of(out, "samples_per_s"),
            "in_memory_samples_per_s": median_of(cached, "samples_per_s"),
            "speed_ratio": statistics.median(o["samples_per_s"] / c["samples_per_s"] for o, c in pairs),
            "disk_bytes_per_sample": median_of(out, "disk_bytes_per_sample"),
            "sample_bytes": median_of(out, "sample_bytes"),
            "disk_to_sample_ratio": median_of(out, "disk_to_sample_ratio"),
            "out_of_core_runs": out,
            "in_memory_runs": cached,
        }
        report["orders"][order] = result
        print(
            f"{order:<16} out of core {result['out_of_core_samples_per_s']:8.0f} samples/s, "
            f"{result['disk_to_sample_ratio']:7.2f}x the sample's bytes from disk | in memory "
            f"{result['in_memory_samples_per_s']:8.0f} samples/s | ratio {result['speed_ratio']:.2f}",
            flush=True,
        )
        if args.out:
            fileio.write_text(Path(args.out), json.dumps(report, indent=2) + "\n")


def machine() -> dict:
    """CPU model, cores and load."""
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "")
    return {"cpu": cpu, "cores": os.cpu_count(), "load_1min": os.getloadavg()[0]}


def main(argv=None) -> int:
    """Entry point."""
    args = parse_args(argv)
    if args.reader:
        print(json.dumps(reader(args)))
        return 0
    reason = cgroup_unavailable()
    if reason:
        print(f"bench_outofcore skipped: {reason} (needs root and cgroup v1's memory controller)")
        return 0
    index_path = prepare(args)
    sizes = [os.path.getsize(p) for p in set(pd.read_pickle(index_path)["pack"])]
    report = {
        "command": "python -m benchmarks.bench_outofcore " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine(),
        "pack_set_bytes": sum(sizes),
        "packs": len(sizes),
        "median_pack_bytes": statistics.median(sizes),
        "memory_limit_bytes": args.memory_mb * 2**20,
        "window_shards": args.window,
        "batch_size": args.batch_size,
        "seconds_per_run": args.seconds,
        "repeats": args.repeats,
        "orders": {},
    }
    measure(args, index_path, report)
    report["machine"]["load_1min_after"] = os.getloadavg()[0]
    if args.out:
        fileio.write_text(Path(args.out), json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
