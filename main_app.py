"""PECAN entry point: python main_app.py CONFIG.yaml [--set section.key=value ...]"""
from __future__ import annotations

import argparse
import logging
import sys

from pecan import config as config_module
from pecan import tracing
from pecan.data.index import DataError


def parse_args(argv=None) -> argparse.Namespace:
    """Command line: a config file and any number of --set overrides."""
    parser = argparse.ArgumentParser(description="Train an EGNN pose classifier on HDF5 shards.")
    parser.add_argument("config", help="YAML config file (see configs/demo.yaml and the README reference)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a config value; the value is parsed as YAML (repeatable)")
    return parser.parse_args(argv)


def resolve_device(setting: str, discovered, local_rank: int):
    """train.device: auto keeps what distributed setup chose; a bare 'cuda' means this rank's GPU."""
    import torch

    if setting == "auto":
        return discovered
    if setting == "cuda":
        return torch.device("cuda", local_rank % max(torch.cuda.device_count(), 1))
    return torch.device(setting)


def ensure_synthetic_data(config) -> None:
    """Generate the synthetic data set the config describes into data.data_dir unless it is already there
    (ensure_dataset locks the directory and writes atomically, so concurrent starts generate it once)."""
    from pathlib import Path

    from pecan.data.synthetic import MARKER_NAME, dataset_is_current, ensure_dataset

    data, spec = config.data, config.synthetic
    first_csv = data.train_csvs[0] if data.train_csvs else "index.csv"
    settings = dict(n_shards=spec.shards, complexes_per_shard=spec.complexes_per_shard, seed=spec.seed,
                    rmsd_threshold=data.rmsd_threshold, index_name=Path(first_csv).name)
    directory = Path(data.data_dir)
    foreign = not (directory / MARKER_NAME).exists() and (
        (directory / settings["index_name"]).exists() or any(directory.glob("*.hdf5")))
    if foreign:  # data the generator did not write is never overwritten
        logging.getLogger("pecan").info("%s already holds data not made by the generator; using it as is", directory)
    elif not dataset_is_current(directory, **settings):
        logging.getLogger("pecan").info("generating the synthetic data set into %s (synthetic section of the config)",
                                        data.data_dir)
        ensure_dataset(data.data_dir, progress=config.train.progress, **settings)


def main(argv=None) -> int:
    """Load config, set up distributed, build, train, clean up."""
    args = parse_args(argv)
    from pecan.train.checkpoint import check_resume_compatible
    from pecan.train.distributed import cleanup_distributed, discover, init_distributed
    from pecan.train.run_dir import OutDirInUse, WriteError
    from pecan.train.trainer import Trainer

    try:
        config = config_module.load(args.config, args.overrides)
        check_resume_compatible(config)
        env = discover()
    except (config_module.ConfigError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO if env.is_main else logging.WARNING,
                        format=f"[pecan r{env.rank}] %(levelname)s %(message)s")
    trainer, finished = None, False
    try:
        device = resolve_device(config.train.device, init_distributed(env), env.local_rank)
        tracing.setup(config.trace.enabled, config_module.trace_dir(config), env.rank)
        if config.synthetic.enabled and env.is_main:
            ensure_synthetic_data(config)
        trainer = Trainer(config, env, device)
        trainer.setup()  # trainer is bound first, so a failed start still releases the out_dir lock
        trainer.fit()
        finished = True
        return 0
    except OutDirInUse as err:
        logging.getLogger("pecan").error("%s", err)
        return 2
    except (DataError, config_module.ConfigError, FileNotFoundError, WriteError, FloatingPointError) as err:
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


if __name__ == "__main__":
    sys.exit(main())
