"""Cost of the shards' content fingerprint (whole-file BLAKE2b, pecan.data.identity) against pack-open time.

Measures, on a synthetic set generated once (the shape of benchmarks/bench_loader.py's set, fewer shards by
default): hashing every shard; the first open (packs built, fingerprints included); a re-open with valid
packs (stat records unchanged: no hashing); a re-open after every shard's ctime changed (``os.utime`` to
its own times: the stat shortcut misses and every shard is hashed again); and the sampled hash packs used
before (first + last 256 KiB), for comparison. The page cache is warm for every figure but the first open.

    python -m benchmarks.bench_fingerprint --data /tmp/pecan-bench-fp --shards 10 --pack-shards 2 --processes 1 \
        --out benchmarks/bench_fingerprint.json
    python -m benchmarks.bench_fingerprint ... --reuse-packs --repeats 5 --out benchmarks/bench_fingerprint_reopen.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

from pecan.config import DataConfig
from pecan.data import identity
from pecan.data.loader import pack_params
from pecan.data.packed import map_pack
from pecan.data.packing import ensure_packed


def parse_args(argv=None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="/tmp/pecan-bench-fp")
    parser.add_argument("--shards", type=int, default=10)
    parser.add_argument("--complexes-per-shard", type=int, default=100)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument(
        "--pack-shards",
        type=int,
        default=0,
        help="time the first open and re-opens on only the first N shards (0: all)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--reuse-packs",
        action="store_true",
        help="keep the packs of an earlier run (no first-open figure): re-open figures only",
    )
    parser.add_argument("--out", default="")
    return parser.parse_args(argv)


def sampled_hash(path: Path, span: int = 1 << 18) -> str:
    """The fingerprint packs used before: SHA-256 of the first and last 256 KiB."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        digest.update(handle.read(span))
        handle.seek(max(span, path.stat().st_size - span))
        digest.update(handle.read(span))
    return digest.hexdigest()


def timed(step) -> float:
    """Seconds ``step()`` took (hash memo cleared first, so nothing is reused from an earlier step)."""
    identity.forget_hashes()
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def reopen(shards, params, cache_dir) -> None:
    """What a start does with valid packs: validate each (fingerprint check) and map it."""
    for path in ensure_packed(shards, params, cache_dir):
        map_pack(path)


def main(argv=None) -> int:
    """Generate (once), measure, print and optionally write JSON."""
    args = parse_args(argv)
    from pecan.synthetic import ensure_dataset

    shards = ensure_dataset(
        args.data,
        n_shards=args.shards,
        complexes_per_shard=args.complexes_per_shard,
        pocket_atoms=(420, 560),
        poses_per_complex=(10, 30),
        seed=0,
        progress=False,
    )
    shards = shards[: args.pack_shards] if args.pack_shards else shards
    total = sum(s.stat().st_size for s in shards)
    params, cache_dir = pack_params(DataConfig()), str(Path(args.data) / "packs")
    first_open = None
    if not args.reuse_packs:
        shutil.rmtree(cache_dir, ignore_errors=True)
        first_open = timed(lambda: ensure_packed(shards, params, cache_dir, processes=args.processes))
    runs = {"hash_all": [], "sampled_hash_all": [], "reopen_stat_hit": [], "reopen_rehash": []}
    for _ in range(args.repeats):
        runs["hash_all"].append(timed(lambda: [identity.content_hash(s) for s in shards]))
        runs["sampled_hash_all"].append(timed(lambda: [sampled_hash(s) for s in shards]))
        runs["reopen_stat_hit"].append(timed(lambda: reopen(shards, params, cache_dir)))
        for shard in shards:  # same times again: only ctime moves, so every check must hash
            stat = shard.stat()
            os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        runs["reopen_rehash"].append(timed(lambda: reopen(shards, params, cache_dir)))
    median = {k: statistics.median(v) for k, v in runs.items()}
    result = {
        "command": sys.argv,
        "load_average_1min": os.getloadavg()[0],
        "shards": len(shards),
        "bytes": total,
        "first_open_s": first_open,
        "runs": runs,
        "median": median,
        "hash_gb_per_s": total / 1e9 / median["hash_all"],
        "hash_share_of_first_open": median["hash_all"] / first_open if first_open else None,
    }
    print(json.dumps(result, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
