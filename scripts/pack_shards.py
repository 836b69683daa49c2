"""Build the packs of a run's shards ahead of time (otherwise rank 0 builds them at first use).

    python scripts/pack_shards.py CONFIG.yaml [--set data.cache_dir=/shared/team/pecan] [--processes 8]

Packs go where a run would look for them: the first writable directory of the location chain
(data.cache_dir, beside the shards, the per-user cache, the per-user temp dir), so read-only data works.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pecan import config as config_module  # noqa: E402
from pecan.data.index import DataError  # noqa: E402
from pecan.data.loader import load_split_frames, prepare_packs  # noqa: E402


def main(argv=None) -> int:
    """Index the splits, then pack every shard they use."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="shards packed in parallel")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    try:
        config = config_module.load(args.config, args.overrides)
        start = time.perf_counter()
        frames = load_split_frames(config.data, progress=True)
        packs = prepare_packs(config.data, list(frames), args.processes, progress=True)
    except (config_module.ConfigError, DataError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for shard, pack in packs.items():
        print(f"{shard} -> {pack}")
    print(f"{len(packs)} pack(s) ready in {time.perf_counter() - start:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
