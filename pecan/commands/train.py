"""`pecan train CONFIG [--set section.key=value ...]`: load config, set up distributed, build, train, clean up.

`python main_app.py CONFIG` is the same command (the card's interface). Scoring has its own verb: `pecan predict`
(`pecan predict CKPT --config CONFIG` scores what a training config names).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys

from pecan import config as config_module
from pecan.commands import add_set_option, expected_error_code
from pecan.runtime import tracing


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


def close_run_logs() -> None:
    """Detach and close the handlers setup_logging added, so the run's log file is not held open after the run
    (a process that trains again, or unmounts out_dir, would otherwise find it busy)."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "pecan_run", False)]:
        root.removeHandler(old)
        old.close()


def setup_logging(rank: int, is_main: bool, out_dir: str) -> None:
    """Console: INFO and above on rank 0, warnings elsewhere (as many ranks would repeat rank 0's lines);
    file: out_dir/logs/rank<k>.log, INFO and above, for every rank, so a failure on rank 5 of 64 has its
    own record. An out_dir that cannot hold the log leaves the console only, with a warning."""
    from pathlib import Path

    root = logging.getLogger()
    close_run_logs()  # an earlier run in this process
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
    logging.getLogger("pecan").info("rank %d, pid %d on %s, logs to %s", rank, os.getpid(), socket.gethostname(), path)


def finished_line(config) -> str:
    """What a rerun of a finished run says: it is done, and which key trains it further."""
    epochs = config.train.epochs
    return (
        f"run in {config.train.out_dir} is finished: all {epochs} epochs are done (checkpoints/last.pt). "
        f"To train more, raise train.epochs (e.g. --set train.epochs={epochs + 5}) and rerun; to start over, "
        "use a new train.out_dir"
    )


def watch_signals(stop_signal: str):
    """SIGTERM, SIGINT and ``stop_signal`` noted from now on (see pecan.train.lifecycle); the trainer's start
    hands them to its lifecycle and has an immediate exit on a second signal release out_dir first."""
    from pecan.train.lifecycle import StopSignals

    return StopSignals(stop_signal).install()


def main(argv=None, prog: str | None = None) -> int:
    """Load config, set up distributed, build, train, clean up."""
    args = parse_args(argv, prog)
    if not os.path.exists(args.config):  # said before torch is imported (the imports below take seconds)
        print(f"error: cannot read config file {args.config}: no such file", file=sys.stderr)
        return 2
    from pecan.engine.distributed import cleanup_distributed, discover, init_distributed, resolve_device
    from pecan.train.checkpoint import check_resume_compatible
    from pecan.train.lifecycle import STOP_EXIT_CODE, RunStopped
    from pecan.train.trainer import Trainer

    try:
        config = config_module.load(args.config, args.overrides)
        check_resume_compatible(config)
        env = discover()
    except ValueError as err:  # any bad value before the run starts is a wrong invocation (ConfigError included)
        print(f"error: {err}", file=sys.stderr)
        return 2
    setup_logging(env.rank, env.is_main, config.train.out_dir)
    trainer, finished, signals, peers = None, False, None, None
    try:
        device = resolve_device(
            config.train.device, init_distributed(env, timeout_s=config.train.collective_timeout_s), env.local_rank
        )
        from pecan.train.peers import start_peer_watch

        peers = start_peer_watch(env.world_size)
        tracing.setup(
            config.trace.enabled,
            config_module.trace_dir(config),
            env.rank,
            data_dir=config.data.data_dir if config.trace.posix else None,
        )
        if config.synthetic.enabled and env.is_main:
            from pecan.synthetic.cache import ensure_from_config  # only demo configs load the generator

            ensure_from_config(config)
        signals = watch_signals(config.train.stop_signal)
        # A failed start releases what it took (the out_dir lock first of all) before its error reaches us.
        trainer = Trainer.from_config(config, env, device, force_unlock=args.force_unlock, signals=signals)
        if trainer.start_epoch >= config.train.epochs and env.is_main:
            print(finished_line(config), flush=True)
        trainer.fit()
        finished = True
        return 0
    except RunStopped as stop:
        finished = True  # every rank stopped after the same step: the closing barrier is reached by all
        if env.is_main:
            print(stop, flush=True)
        return STOP_EXIT_CODE
    except KeyboardInterrupt:  # Ctrl-C before the stop handlers were installed: nothing trained yet
        print("interrupted during start-up; nothing to save: rerun the same command to start", file=sys.stderr)
        return 128 + signal.SIGINT
    except Exception as err:  # an expected error type exits with its code (pecan.runtime.errors.EXIT_CODES)
        return expected_error_code(err)
    finally:
        if trainer is not None:
            trainer.close()
        if signals is not None:
            signals.restore()
        if peers is not None:
            peers.stop()
        # Drop the DDP model while the process group is still registered: if the model's reducer held the
        # last reference, the group would be torn down inside its destructor with the GIL held, which can
        # deadlock against gloo's worker thread finishing an earlier collective.
        trainer = None
        tracing.finalize()
        cleanup_distributed(graceful=finished)
        close_run_logs()
