"""`pecan train CONFIG [--set section.key=value ...]`: load config, set up distributed, build, train, clean up.

`python main_app.py CONFIG` is the same command (the card's interface); `--predict CKPT` scores instead.
"""
from __future__ import annotations

import argparse
import logging
import sys

from pecan import config as config_module
from pecan import tracing
from pecan.errors import exit_code


def parse_args(argv=None, prog: str | None = None) -> argparse.Namespace:
    """Command line: a config file and any number of --set overrides."""
    parser = argparse.ArgumentParser(prog=prog, description="Train an EGNN pose classifier on HDF5 shards.")
    parser.add_argument("config", help="YAML config file (see configs/demo.yaml and the README reference)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a config value; the value is parsed as YAML (repeatable)")
    parser.add_argument("--predict", metavar="CHECKPOINT", help="score the configured poses with this checkpoint "
                                                                 "instead of training")
    parser.add_argument("--out", default="scores.csv", help="with --predict: the scores CSV (default scores.csv)")
    return parser.parse_args(argv)


def resolve_device(setting: str, discovered, local_rank: int):
    """train.device: auto keeps what distributed setup chose; a bare 'cuda' means this rank's GPU."""
    import torch

    if setting == "auto":
        return discovered
    if setting == "cuda":
        return torch.device("cuda", local_rank % max(torch.cuda.device_count(), 1))
    return torch.device(setting)


def main(argv=None, prog: str | None = None) -> int:
    """Load config, set up distributed, build, train, clean up."""
    args = parse_args(argv, prog)
    from pecan.train.checkpoint import check_resume_compatible
    from pecan.train.distributed import cleanup_distributed, discover, init_distributed
    from pecan.train.trainer import Trainer

    try:
        config = config_module.load(args.config, args.overrides)
        check_resume_compatible(config)
        env = discover()
    except ValueError as err:  # any bad value before the run starts is a wrong invocation (ConfigError included)
        print(f"error: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO if env.is_main else logging.WARNING,
                        format=f"[pecan r{env.rank}] %(levelname)s %(message)s")
    trainer, finished = None, False
    try:
        device = resolve_device(config.train.device, init_distributed(env), env.local_rank)
        if args.predict:
            from pecan.predict import run_predict

            run_predict(config, env, device, args.predict, args.out)
            finished = True
            return 0
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
    except Exception as err:  # noqa: BLE001 - an expected error type exits with its code (pecan.errors.EXIT_CODES)
        code = exit_code(err)
        if code is None:
            raise
        logging.getLogger("pecan").error("%s", err)
        return code
    finally:
        if trainer is not None:
            trainer.close()
        # Drop the DDP model while the process group is still registered: if the model's reducer held the
        # last reference, the group would be torn down inside its destructor with the GIL held, which can
        # deadlock against gloo's worker thread finishing an earlier collective.
        trainer = None
        tracing.finalize()
        cleanup_distributed(graceful=finished)
