"""`pecan predict CHECKPOINT [CHECKPOINT ...] --data-dir D [--csv X | --shards GLOB] --out scores.csv`: score
shards with a trained checkpoint, no YAML needed; several checkpoints score as an ensemble (the mean of their
probabilities, ``pecan.scoring.ensemble``).

The run config is rebuilt from the checkpoint itself (its model section, its sample settings, its label
rule), with the inputs named on the command line as the test inputs; ``--config`` starts from a YAML instead,
``--set`` overrides either. Scoring is read-only: no lock, no resume check, nothing of train.out_dir is read.
"""

from __future__ import annotations

import argparse

from pecan import config as config_module
from pecan.commands import add_allow_option, add_set_option


def parse_args(argv=None, prog: str | None = None) -> argparse.Namespace:
    """Command line: a checkpoint, the inputs, where the scores go."""
    parser = argparse.ArgumentParser(prog=prog, description="Score docked poses in shards with a trained checkpoint.")
    parser.add_argument(
        "checkpoint",
        nargs="+",
        help="a checkpoint of a training run (e.g. RUN/checkpoints/best.pt); two or more score as an ensemble: "
        "each pose's score is the mean of their probabilities (they must share every sample setting)",
    )
    parser.add_argument("--data-dir", default="", help="directory of the shards; relative paths resolve here")
    parser.add_argument("--csv", action="append", default=[], metavar="CSV", help="index CSV of the poses (repeatable)")
    parser.add_argument(
        "--shards",
        action="append",
        default=[],
        metavar="GLOB",
        help="shard files or globs (repeatable); default: every *.hdf5 of --data-dir",
    )
    parser.add_argument("--out", default="scores.csv", help="the scores CSV; the metrics JSON goes beside it")
    parser.add_argument(
        "--docking-weight",
        type=float,
        default=0.0,
        metavar="W",
        help="rank each complex's poses by z(model logit) + W * z(-docking score), z standardised over the "
        "complex's poses (pecan_consensus beside pecan_score; docs/scoring.md); default 0: the model alone",
    )
    parser.add_argument("--config", help="start from this YAML instead of the checkpoint's stored run config")
    add_set_option(parser)
    add_allow_option(parser, "score with a pinned setting (e.g. data.edge_cutoff) that differs from the trained one")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default auto)")
    return parser.parse_args(argv)


def build_config(args: argparse.Namespace) -> config_module.Config:
    """The config this command scores under; the inputs on the command line are data.test_*."""
    if args.config:  # read before the checkpoint module (and torch) is imported: a wrong path fails at once
        raw = config_module.load(args.config).to_dict()
        source = args.config
    else:
        from pecan.scoring.checkpoint import mapping_from_checkpoint, read_checkpoint

        first = args.checkpoint[0]  # the members' settings are each checked against this config when scoring
        raw, source = mapping_from_checkpoint(read_checkpoint(first)), f"checkpoint {first}"
    named = args.data_dir or args.csv or args.shards
    if not named and not args.config:
        raise config_module.ConfigError("pecan predict: name the poses to score: --data-dir, --csv or --shards")
    if named:
        # Relative inputs resolve against --data-dir, else the working directory.
        raw.setdefault("data", {}).update(
            data_dir=args.data_dir or ".",
            test_csvs=list(args.csv),
            test_fns=list(args.shards) or ([] if args.csv else ["*.hdf5"]),
        )
    if args.device != "auto" or not args.config:
        raw.setdefault("train", {})["device"] = args.device
    return config_module.load_mapping(raw, args.overrides, source)


def input_paths(args: argparse.Namespace, config: config_module.Config) -> list[tuple[str, str]]:
    """Every file and directory this command reads: the checkpoint, the YAML, the data directory, its index
    CSVs (the labelled index beside the shards), every CSV and shard the config names."""
    import glob
    import os

    from pecan.runtime import outputs

    data = config.data
    base = data.data_dir or "."
    named = [("the checkpoint", path) for path in args.checkpoint]
    named += [("--config", args.config or ""), ("--data-dir", data.data_dir)]
    named += outputs.index_csvs_in(base)
    for csv in [*data.train_csvs, *data.val_csvs, *data.test_csvs]:
        named.append(("an index CSV it reads", os.path.join(base, csv)))
    for pattern in [*data.train_fns, *data.val_fns, *data.test_fns]:
        named += [("a shard it reads", p) for p in glob.glob(os.path.join(base, pattern))]
    return named


def check_outputs(args: argparse.Namespace, config: config_module.Config) -> None:
    """--out and its metrics JSON may be neither an input nor each other (ConfigError, exit 2)."""
    from pathlib import Path

    from pecan.runtime import outputs
    from pecan.scoring.shards import metrics_path

    written = [("--out", args.out), ("the metrics JSON", str(metrics_path(Path(args.out))))]
    outputs.check_outputs("pecan predict", written, input_paths(args, config))
    outputs.check_writable("pecan predict", written)


def prepare(args: argparse.Namespace):
    """The scoring job of ``args``: its config built and its outputs checked."""
    from pecan.engine.harness import Job
    from pecan.scoring.consensus import check_weight

    weight = check_weight(args.docking_weight, "pecan predict: --docking-weight")
    config = build_config(args)
    check_outputs(args, config)

    def body(run) -> None:
        from pecan.scoring.shards import run_predict

        run_predict(config, run.env, run.device, args.checkpoint, args.out, tuple(args.allow), weight)

    return Job(body=body, device=config.train.device)


def main(argv=None, prog: str | None = None) -> int:
    """Score the inputs under the run harness; exit 0, 2 for a wrong invocation or checkpoint, 1 for bad data
    or storage."""
    args = parse_args(argv, prog)
    from pecan.engine.harness import run

    return run(lambda: prepare(args))
