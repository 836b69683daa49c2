"""`pecan train CONFIG [--set section.key=value ...]`: load config, set up distributed, build, train, clean up.

`python main_app.py CONFIG` is the same command (the card's interface); `--predict CKPT` scores instead.
"""
from __future__ import annotations

import argparse
import logging
import os
import socket
import sys

from pecan import config as config_module
from pecan import tracing
from pecan.data.index import DataError


def parse_args(argv=None, prog: str | None = None) -> argparse.Namespace:
    """Command line: a config file and any number of --set overrides."""
    parser = argparse.ArgumentParser(prog=prog, description="Train an EGNN pose classifier on HDF5 shards.")
    parser.add_argument("config", help="YAML config file (see configs/demo.yaml and docs/configuration.md)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a config value; the value is parsed as YAML (repeatable)")
    parser.add_argument("--predict", metavar="CHECKPOINT", help="score the configured poses with this checkpoint "
                                                                 "instead of training")
    parser.add_argument("--out", default="scores.csv", help="with --predict: the scores CSV (default scores.csv)")
    parser.add_argument("--allow-setting-change", dest="allow", action="append", default=[], metavar="KEY",
                        help="with --predict: score with the config's value of a setting the checkpoint pins "
                             "(e.g. data.edge_cutoff) although it differs from the trained one (repeatable)")
    return parser.parse_args(argv)


def resolve_device(setting: str, discovered, local_rank: int):
    """train.device: auto keeps what distributed setup chose; a bare 'cuda' means this rank's GPU."""
    import torch

    if setting == "auto":
        return discovered
    if setting == "cuda":
        return torch.device("cuda", local_rank % max(torch.cuda.device_count(), 1))
    return torch.device(setting)


def setup_logging(rank: int, is_main: bool, out_dir: str) -> None:
    """Console: INFO and above on rank 0, warnings elsewhere (as many ranks would repeat rank 0's lines);
    file: out_dir/logs/rank<k>.log, INFO and above, for every rank, so a failure on rank 5 of 64 has its
    own record. An out_dir that cannot hold the log leaves the console only, with a warning."""
    from pathlib import Path

    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "pecan_run", False)]:  # an earlier run in this process
        root.removeHandler(old)
        old.close()
    console = logging.StreamHandler()
    console.setLevel(logging.INFO if is_main else logging.WARNING)
    console.setFormatter(logging.Formatter(f"[pecan r{rank}] %(levelname)s %(message)s"))
    console.pecan_run = True
    root.setLevel(logging.INFO)
    root.addHandler(console)
    path = Path(out_dir) / "logs" / f"rank{rank}.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    except OSError as err:
        logging.getLogger("pecan").warning("no per-rank log %s: %s", path, err.strerror or err)
        return
    handler.setLevel(logging.INFO)
    handler.pecan_run = True
    handler.setFormatter(logging.Formatter(f"%(asctime)s [pecan r{rank}] %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    logging.getLogger("pecan").info("rank %d, pid %d on %s, logs to %s", rank, os.getpid(), socket.gethostname(),
                                    path)


def main(argv=None, prog: str | None = None) -> int:
    """Load config, set up distributed, build, train, clean up."""
    args = parse_args(argv, prog)
    from pecan.fileio import StorageError
    from pecan.train.checkpoint import check_resume_compatible
    from pecan.train.distributed import cleanup_distributed, discover, init_distributed
    from pecan.train.run_dir import OutDirInUse
    from pecan.train.trainer import Trainer

    try:
        config = config_module.load(args.config, args.overrides)
        if args.predict:  # scoring is read-only: the run's resume state and lock are none of its business
            from pecan.commands.predict import score

            return score(config, args.predict, args.out, tuple(args.allow))
        check_resume_compatible(config)
        env = discover()
    except (config_module.ConfigError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    setup_logging(env.rank, env.is_main, config.train.out_dir)
    trainer, finished = None, False
    try:
        device = resolve_device(config.train.device, init_distributed(env), env.local_rank)
        tracing.setup(config.trace.enabled, config_module.trace_dir(config), env.rank,
                      data_dir=config.data.data_dir if config.trace.posix else None)
        if config.synthetic.enabled and env.is_main:
            from pecan.synthetic.cache import ensure_from_config  # only demo configs load the generator

            ensure_from_config(config)
        trainer = Trainer(config, env, device)
        trainer.setup()  # trainer is bound first, so a failed start still releases the out_dir lock
        trainer.fit()
        finished = True
        return 0
    except OutDirInUse as err:
        logging.getLogger("pecan").error("%s", err)
        return 2
    except (DataError, config_module.ConfigError, FileNotFoundError, StorageError, FloatingPointError) as err:
        logging.getLogger("pecan").error("%s", err)
        return 1
    finally:
        if trainer is not None:
            trainer.close()
        # Drop the DDP model while the process group is still registered: if the model's reducer held the
        # last reference, the group would be torn down inside its destructor with the GIL held, which can
        # deadlock against gloo's worker thread finishing an earlier collective.
        trainer = None
        tracing.finalize()
        cleanup_distributed(graceful=finished)
