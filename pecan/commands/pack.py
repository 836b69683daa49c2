"""`pecan pack CONFIG [--set data.cache_dir=/shared/team/pecan] [--processes 8]`: build the packs of a run's
shards ahead of time (otherwise rank 0 builds them at first use).

Packs go where a run would look for them: the first writable directory of the location chain
(data.cache_dir, beside the shards, the per-user cache, the per-user temp dir), so read-only data works.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from pecan.commands import add_set_option
from pecan.runtime.errors import exit_code


def parse_args(argv=None, prog: str | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("config", help="YAML run config whose data section names the shards")
    add_set_option(parser)
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="shards packed in parallel")
    return parser.parse_args(argv)


def main(argv=None, prog: str | None = None) -> int:
    """Index the splits, then pack every shard they use; the exit code of an expected error is its type's."""
    args = parse_args(argv, prog)
    from pecan import config as config_module
    from pecan.data.loader import load_split_indexes, prepare_packs

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    try:
        config = config_module.load(args.config, args.overrides)
        start = time.perf_counter()
        indexes = load_split_indexes(config.data, progress=True)
        packs = prepare_packs(config.data, list(indexes), args.processes, progress=True)
    except Exception as err:  # noqa: BLE001 - an expected error type exits with its code (pecan.runtime.errors.EXIT_CODES)
        if exit_code(err) is None:
            raise
        print(f"error: {err}", file=sys.stderr)
        return exit_code(err)
    for shard, pack in packs.items():
        print(f"{shard} -> {pack}")
    print(f"{len(packs)} pack(s) ready in {time.perf_counter() - start:.1f}s")
    return 0
