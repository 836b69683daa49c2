"""`pecan pack CONFIG [--set data.cache_dir=/shared/team/pecan] [--processes 8]`: build the packs of a run's
shards ahead of time (otherwise rank 0 builds them at first use).

Packs go where a run would look for them: the first writable directory of the location chain
(data.cache_dir, beside the shards, the per-user cache, the per-user temp dir), so read-only data works.
"""

from __future__ import annotations

import argparse
import os
import time

from pecan.commands import add_set_option


def parse_args(argv=None, prog: str | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("config", help="YAML run config whose data section names the shards")
    add_set_option(parser)
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="shards packed in parallel")
    return parser.parse_args(argv)


def prepare(args: argparse.Namespace):
    """The packing job of ``args``: its config read."""
    from pecan import config as config_module
    from pecan.engine.harness import Job

    config = config_module.load(args.config, args.overrides)
    return Job(body=lambda run: pack(config, args.processes), process_group=False)


def pack(config, processes: int) -> None:
    """Index the splits, then pack every shard they use; what was packed where."""
    from pecan.data.loader import load_split_indexes, prepare_packs

    start = time.perf_counter()
    indexes = load_split_indexes(config.data, progress=True)
    packs = prepare_packs(config.data, list(indexes), processes, progress=True)
    for shard, path in packs.items():
        print(f"{shard} -> {path}")
    print(f"{len(packs)} pack(s) ready in {time.perf_counter() - start:.1f}s")


def main(argv=None, prog: str | None = None) -> int:
    """Index and pack under the run harness (one process); the exit code of an expected error is its type's."""
    args = parse_args(argv, prog)
    from pecan.engine.harness import run

    return run(lambda: prepare(args), console_format="%(levelname)s %(message)s", quiet_ranks=False)
