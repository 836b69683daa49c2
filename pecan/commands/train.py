"""`pecan train CONFIG [--set section.key=value ...]`: read the command line and the config, then train under the
run harness (``pecan.engine.harness``: process set-up, per-rank logs, signals, exit code, clean-up).

`python main_app.py CONFIG` is the same command (the card's interface). Scoring has its own verb: `pecan predict`
(`pecan predict CKPT --config CONFIG` scores what a training config names).
"""

from __future__ import annotations

import argparse
import os

from pecan import config as config_module
from pecan.commands import add_set_option
from pecan.runtime import tracing
from pecan.runtime.errors import ConfigError

INTERRUPTED = "interrupted during start-up; nothing to save: rerun the same command to start"
"""Ctrl-C before the stop handlers were installed: nothing trained yet."""


def parse_args(argv=None, prog: str | None = None) -> argparse.Namespace:
    """Command line: a config file and any number of --set overrides."""
    parser = argparse.ArgumentParser(prog=prog, description="Train an EGNN pose classifier on HDF5 shards.")
    parser.add_argument("config", help="YAML config file (see configs/demo.yaml and docs/configuration.md)")
    add_set_option(parser)
    parser.add_argument(
        "--force-unlock",
        action="store_true",
        help="take over out_dir's .pecan.lock even if its owner looks alive (only when you know "
        "that run is gone; see docs/time-limits.md)",
    )
    return parser.parse_args(argv)


def finished_line(config) -> str:
    """What a rerun of a finished run says: it is done, and which key trains it further."""
    epochs = config.train.epochs
    return (
        f"run in {config.train.out_dir} is finished: all {epochs} epochs are done (checkpoints/last.pt). "
        f"To train more, raise train.epochs (e.g. --set train.epochs={epochs + 5}) and rerun; to start over, "
        "use a new train.out_dir"
    )


def prepare(args: argparse.Namespace):
    """The training job of ``args``: its config read and checked against the run it resumes."""
    if not os.path.exists(args.config):  # said before torch is imported (the imports below take seconds)
        raise ConfigError(f"cannot read config file {args.config}: no such file")
    from pecan.engine.harness import Job
    from pecan.train.checkpoint import check_resume_compatible

    config = config_module.load(args.config, args.overrides)
    check_resume_compatible(config)
    return Job(
        body=lambda run: train(run, config, args.force_unlock),
        device=config.train.device,
        collective_timeout_s=config.train.collective_timeout_s,
        log_dir=config.train.out_dir,
        interrupted=INTERRUPTED,
    )


def train(run, config, force_unlock: bool) -> int:
    """Peers watched, tracing on, the demo data made, the stop signals noted, then build and train."""
    from pecan.train.lifecycle import StopSignals
    from pecan.train.peers import start_peer_watch
    from pecan.train.trainer import Trainer

    env = run.env
    peers = start_peer_watch(env.world_size)  # None in one process
    if peers is not None:
        run.on_exit(peers.stop)
    data_dir = config.data.data_dir if config.trace.posix else None
    tracing.setup(config.trace.enabled, config_module.trace_dir(config), env.rank, data_dir=data_dir)
    if config.synthetic.enabled and env.is_main:
        from pecan.synthetic.cache import ensure_from_config  # only demo configs load the generator

        ensure_from_config(config)
    # SIGTERM, SIGINT and train.stop_signal noted from now on (pecan.train.lifecycle); the trainer hands them to
    # its lifecycle, and an immediate exit on a second signal releases out_dir first.
    signals = run.watch_signals(StopSignals(config.train.stop_signal))
    # A failed start releases what it took (the out_dir lock first of all) before its error reaches the harness.
    trainer = Trainer.from_config(config, env, run.device, force_unlock=force_unlock, signals=signals)
    run.on_exit(trainer.close)
    if trainer.start_epoch >= config.train.epochs and env.is_main:
        print(finished_line(config), flush=True)
    trainer.fit()
    return 0


def main(argv=None, prog: str | None = None) -> int:
    """Read the command line, then train under the run harness; the exit code."""
    args = parse_args(argv, prog)
    from pecan.engine.harness import run

    return run(lambda: prepare(args))
