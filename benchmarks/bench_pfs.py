"""The data path on a parallel-file-system stand-in: every I/O level read through benchmarks/slowfs.py (one metadata
server, a set latency per metadata op) beside the same run on local disk.

    python -m benchmarks.bench_pfs --latency-ms 1 --workers 1 2 4 --ranks 2 --out benchmarks/bench_pfs.json

One generated data set (``--shards`` x ``--complexes-per-shard`` complexes, ~500 atoms per pose) lies in
``ROOT/data`` on local disk; the slow view of ``ROOT`` is mounted at ``ROOT-mnt``. For each latency, worker count and
level, two persistent loaders over the same fixed random subset are built, one reading local disk and one the
mount, and timed alternately: time to the first batch (dataset and loader built, workers started, first batch
out), the first epoch, then ``--repeats`` steady-state epochs (median samples/s). Levels:

  reopen, handle_cache, hoist, decode_cache   the HDF5 levels, shards read where the storage holds them
  packed         packs built (timed) from the storage's shards into a pack directory on the same storage,
                 then mapped from there
  packed_staged  the same packs, staged (timed, data.stage_dir's copy) into a local directory and mapped there

The packed levels' cold start ("first epoch incl. packing") adds the pack build and the staging to the first
epoch. The FUSE server counts what it serves, so the metadata ops per sample of each level are counted, not
assumed. ``--ranks 2`` adds a multi-rank run per storage: 2 processes started with the env:// variables torchrun
sets, a gloo process group, each rank reading its half of the subset through its own loader (1 worker).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from benchmarks.slowfs import SlowFS
from pecan.config import DataConfig
from pecan.data.loader import load_split_indexes, make_dataset, make_loader, prepare_packs
from pecan.data.packed import pack_is_intact
from pecan.data.staging import stage

LEVELS = ("reopen", "handle_cache", "hoist", "decode_cache", "packed", "packed_staged")
STORAGES = ("local", "pfs")


def parse_args(argv=None) -> argparse.Namespace:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", default=str(Path(tempfile.gettempdir()) / "pecan-pfs"), help="local directory")
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--complexes-per-shard", type=int, default=25)
    parser.add_argument("--samples", type=int, default=1000, help="fixed random subset read per epoch")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[1.0])
    parser.add_argument("--levels", nargs="+", default=list(LEVELS), choices=LEVELS)
    parser.add_argument("--repeats", type=int, default=2, help="steady-state epochs after the first")
    parser.add_argument("--ranks", type=int, default=0, help="also a run with this many ranks (0: none)")
    parser.add_argument("--rank-levels", nargs="+", default=["reopen", "packed"], choices=LEVELS)
    parser.add_argument("--rank-repeats", type=int, default=2, help="steady-state epochs of the multi-rank run")
    parser.add_argument("--out", default="")
    parser.add_argument("--rank-child", default="", help=argparse.SUPPRESS)  # JSON job of one rank
    return parser.parse_args(argv)


def ensure_data(root: Path, shards: int, complexes: int) -> Path:
    """Generate the data set once into ROOT/data."""
    from pecan.synthetic import ensure_dataset

    data = root / "data"
    ensure_dataset(
        data, n_shards=shards, complexes_per_shard=complexes, poses_per_complex=(10, 30), pocket_atoms=(420, 560)
    )
    return data


def data_config(base: Path, stage_dir: str = "", cache: str = "packs") -> DataConfig:
    """The data section over the storage rooted at ``base`` (ROOT or the mount): shards in data/, packs in
    ``cache``/."""
    return DataConfig(
        data_dir=str(base / "data"),
        train_csvs=["index.csv"],
        val_fraction=0.0,
        cache_dir=str(base / cache),
        index_dir=str(base / "index"),
        stage_dir=stage_dir,
    )


def cold_packs(cfg: DataConfig, index, stage_dir: Path) -> dict:
    """Build the packs from the storage's shards (timed, from nothing), then stage them into ``stage_dir``
    (timed, from nothing)."""
    shutil.rmtree(cfg.cache_dir, ignore_errors=True)
    shutil.rmtree(stage_dir, ignore_errors=True)
    start = time.perf_counter()
    packs = prepare_packs(cfg, [index], processes=os.cpu_count() or 1)
    pack_s = time.perf_counter() - start
    start = time.perf_counter()
    report = stage([p for p in packs.values() if p is not None], stage_dir, check=pack_is_intact)
    stage_s = time.perf_counter() - start
    if report.fallback:
        raise RuntimeError(f"staging fell back to reading in place: {report.fallback}")
    staged = {shard: Path(report.mapping[str(path)]) for shard, path in packs.items()}
    return {"packs": packs, "staged": staged, "pack_s": pack_s, "stage_s": stage_s}


class Storage:
    """One storage's config, index and packs; ``fs`` is the slow mount (None for local disk)."""

    def __init__(self, name: str, base: Path, stage_dir: Path, fs=None) -> None:
        self.name, self.fs = name, fs
        self.cfg = data_config(base, cache=f"packs-{name}")
        self.index, _ = load_split_indexes(self.cfg)
        self.cold = cold_packs(self.cfg, self.index, stage_dir)
        print(
            f"  {name}: packs built in {self.cold['pack_s']:.2f}s, staged in {self.cold['stage_s']:.2f}s",
            flush=True,
        )

    def dataset(self, level: str):
        """The dataset of one level on this storage."""
        if level == "packed":
            return make_dataset(self.cfg, self.index, self.cold["packs"], io_mode="packed")
        if level == "packed_staged":
            return make_dataset(self.cfg, self.index, self.cold["staged"], io_mode="packed")
        return make_dataset(self.cfg, self.index, io_mode=level)

    def reset_ops(self) -> None:
        if self.fs is not None:
            self.fs.reset()

    def ops(self) -> int:
        return self.fs.metadata_ops() if self.fs is not None else 0


def timed_epoch(loader) -> tuple[float, float, int]:
    """Seconds to the first batch, seconds of the whole epoch, samples."""
    samples, first = 0, None
    start = time.perf_counter()
    for batch, _ in loader:
        if first is None:
            first = time.perf_counter() - start
        samples += batch.num_graphs
    return first, time.perf_counter() - start, samples


def measure_pair(storages: list[Storage], level: str, workers: int, subset: list[int], args) -> list[dict]:
    """One level at one worker count on each storage: first batch, first epoch, steady epochs, ops."""
    rows, loaders = {}, {}
    for storage in storages:
        storage.reset_ops()
        start = time.perf_counter()
        loaders[storage.name] = make_loader(storage.dataset(level), subset, args.batch_size, workers)
        built = time.perf_counter() - start
        first_batch, epoch, samples = timed_epoch(loaders[storage.name])
        cold = {"packed": ("pack_s",), "packed_staged": ("pack_s", "stage_s")}.get(level, ())
        rows[storage.name] = {
            "storage": storage.name,
            "level": level,
            "workers": workers,
            "first_batch_s": built + first_batch,
            "first_epoch_s": built + epoch,
            "cold_start_s": sum(storage.cold[k] for k in cold),
            "first_epoch_metadata_ops": storage.ops(),
            "samples_per_s": [],
            "steady_metadata_ops": 0,
            "samples": samples,
        }
    for repeat in range(args.repeats):
        # alternated, in turned order every other round (ABBA), so machine noise and position hit both alike
        for storage in storages if repeat % 2 == 0 else storages[::-1]:
            storage.reset_ops()
            _, seconds, samples = timed_epoch(loaders[storage.name])
            row = rows[storage.name]
            row["samples_per_s"].append(samples / seconds)
            row["steady_metadata_ops"] += storage.ops()
    for storage in storages:
        loaders[storage.name].close()
        row = rows[storage.name]
        row["median_samples_per_s"] = statistics.median(row["samples_per_s"])
        row["metadata_ops_per_sample_first"] = row["first_epoch_metadata_ops"] / row["samples"]
        row["metadata_ops_per_sample_steady"] = row["steady_metadata_ops"] / (row["samples"] * args.repeats)
        row["first_epoch_cold_s"] = row["first_epoch_s"] + row["cold_start_s"]
    local, pfs = rows["local"], rows["pfs"]
    print(
        f"  {level:<13} workers={workers}: steady {local['median_samples_per_s']:7.0f} local, "
        f"{pfs['median_samples_per_s']:7.0f} pfs ({pfs['median_samples_per_s'] / local['median_samples_per_s']:.2f}x); "
        f"first epoch {local['first_epoch_cold_s']:.2f}s local, {pfs['first_epoch_cold_s']:.2f}s pfs; "
        f"pfs metadata ops/sample {pfs['metadata_ops_per_sample_first']:.2f} first, "
        f"{pfs['metadata_ops_per_sample_steady']:.2f} steady",
        flush=True,
    )
    return [local, pfs]


# ---------------------------------------------------------------------------- ranks


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rank_child(job: dict) -> None:
    """One rank: its half of the subset through its own loader; rank 0 writes every rank's figures."""
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    cfg = DataConfig(**job["cfg"])
    index, _ = load_split_indexes(cfg)
    packs = {k: Path(v) for k, v in job["packs"].items()} if job["packs"] else None
    dist.barrier()
    start = time.perf_counter()
    loader = make_loader(make_dataset(cfg, index, packs, io_mode=job["io_mode"]), job["subset"][rank::world], 32, 1)
    first_batch, epoch, samples = timed_epoch(loader)
    built_and_first = time.perf_counter() - start - epoch + first_batch
    rates = []
    for _ in range(job["repeats"]):
        dist.barrier()
        _, seconds, samples = timed_epoch(loader)
        rates.append(samples / seconds)
    loader.close()
    figures = {"first_batch_s": built_and_first, "first_epoch_s": time.perf_counter() - start, "rates": rates}
    gathered = [None] * world
    dist.all_gather_object(gathered, figures)
    if rank == 0:
        Path(job["out"]).write_text(json.dumps(gathered))
    dist.destroy_process_group()


def run_ranks(storage: Storage, level: str, ranks: int, subset: list[int], repeats: int) -> dict:
    """``ranks`` processes with torchrun's env:// variables; per-rank and summed figures."""
    packs = None
    if level in ("packed", "packed_staged"):
        packs = {k: str(v) for k, v in storage.cold["staged" if level == "packed_staged" else "packs"].items()}
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "ranks.json"
        cfg = {k: getattr(storage.cfg, k) for k in ("data_dir", "train_csvs", "val_fraction", "cache_dir", "index_dir")}
        job = {"cfg": cfg, "packs": packs, "io_mode": "packed" if packs else level, "subset": subset}
        job.update(repeats=repeats, out=str(out))
        env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "WORLD_SIZE": str(ranks)}
        env["LOCAL_WORLD_SIZE"] = str(ranks)
        storage.reset_ops()
        start = time.perf_counter()
        children = [
            subprocess.Popen(
                [sys.executable, "-m", "benchmarks.bench_pfs", "--rank-child", json.dumps(job)],
                env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
                cwd=Path(__file__).resolve().parents[1],
            )
            for r in range(ranks)
        ]
        codes = [child.wait() for child in children]
        wall = time.perf_counter() - start
        if any(codes):
            raise RuntimeError(f"a rank of the {ranks}-rank run failed: exit codes {codes}")
        per_rank = json.loads(out.read_text())
    steady = [statistics.median(r["rates"]) for r in per_rank]
    row = {
        "storage": storage.name,
        "level": level,
        "ranks": ranks,
        "wall_s": wall,
        "first_batch_s": max(r["first_batch_s"] for r in per_rank),
        "first_epoch_s": max(r["first_epoch_s"] for r in per_rank),
        "per_rank_samples_per_s": steady,
        "samples_per_s": sum(steady),
        "metadata_ops": storage.ops(),
    }
    print(
        f"  {ranks} ranks, {level:<13} {storage.name}: {row['samples_per_s']:7.0f} samples/s in all, "
        f"first batch {row['first_batch_s']:.2f}s, first epoch {row['first_epoch_s']:.2f}s",
        flush=True,
    )
    return row


# ---------------------------------------------------------------------------- main


def table(rows: list[dict]) -> str:
    """Markdown: each level and worker count, local beside the stand-in."""
    lines = [
        "| latency | workers | level | steady samples/s local | pfs | pfs / local | first batch s local | pfs | "
        "first epoch s (cold) local | pfs | metadata ops/sample first | steady |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for local, pfs in zip(rows[::2], rows[1::2]):
        lines.append(
            f"| {pfs['latency_ms']} ms | {pfs['workers']} | {pfs['level']} | {local['median_samples_per_s']:.0f} | "
            f"{pfs['median_samples_per_s']:.0f} | {pfs['median_samples_per_s'] / local['median_samples_per_s']:.2f} | "
            f"{local['first_batch_s']:.2f} | {pfs['first_batch_s']:.2f} | {local['first_epoch_cold_s']:.2f} | "
            f"{pfs['first_epoch_cold_s']:.2f} | {pfs['metadata_ops_per_sample_first']:.2f} | "
            f"{pfs['metadata_ops_per_sample_steady']:.2f} |"
        )
    return "\n".join(lines)


def run_latency(args, latency_ms: float, subset: list[int]) -> dict:
    """Mount the stand-in at one latency and measure every level beside local disk."""
    root = Path(args.root)
    result = {"latency_ms": latency_ms, "rows": [], "ranks": []}
    with SlowFS(root, f"{root}-mnt", latency=latency_ms / 1000) as fs:
        storages = [
            Storage("local", root, root / "stage-local"),
            Storage("pfs", fs.mountpoint, root / "stage-pfs", fs),
        ]
        result["cold"] = {s.name: {"pack_s": s.cold["pack_s"], "stage_s": s.cold["stage_s"]} for s in storages}
        for workers in args.workers:
            for level in args.levels:
                for row in measure_pair(storages, level, workers, subset, args):
                    result["rows"].append({**row, "latency_ms": latency_ms})
        if args.ranks:
            for level in args.rank_levels:
                for storage in storages:
                    row = run_ranks(storage, level, args.ranks, subset, args.rank_repeats)
                    result["ranks"].append({**row, "latency_ms": latency_ms})
    return result


def main(argv=None) -> int:
    """Generate once, then every latency; print the tables and write the JSON."""
    args = parse_args(argv)
    torch.set_num_threads(1)
    if args.rank_child:
        rank_child(json.loads(args.rank_child))
        return 0
    root = Path(args.root)
    ensure_data(root, args.shards, args.complexes_per_shard)
    index, _ = load_split_indexes(data_config(root))
    subset = np.random.default_rng(0).choice(len(index), size=min(args.samples, len(index)), replace=False).tolist()
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    everything = {
        "samples_total": len(index),
        "shards": args.shards,
        "subset": len(subset),
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "cpu": next((line.split(":", 1)[1].strip() for line in cpu.splitlines() if "Model name" in line), ""),
        "load_before": os.getloadavg(),
        "latencies": [],
    }
    print(f"{len(index)} samples in {args.shards} shards; subset {len(subset)}", flush=True)
    for latency_ms in args.latency_ms:
        print(f"latency {latency_ms} ms per metadata op", flush=True)
        everything["latencies"].append(run_latency(args, latency_ms, subset))
        print(table(everything["latencies"][-1]["rows"]), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
