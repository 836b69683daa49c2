"""`pecan score`: docking output (a receptor and an SDF/mol2 of poses, or a converter manifest) in, scored
poses out as SDF, with scores.csv and the metrics JSON beside it.

In memory, in one process: each poses file is parsed once and its records kept (``read_records``), featurised
by the converter (``pecan.convert``, the `convert` extra) from those records, turned into graphs by the data
path's functions (``pecan.scoring.memory``) and scored with the checkpoint's model and sample settings by the
evaluation loop `pecan predict` runs; the scored SDF is written from the kept records (``pecan.scoring.sdf``),
each complex's poses sorted by score. No shard, index, pack or temporary file is written.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pandas as pd

from pecan import config as config_module
from pecan.runtime.errors import ConfigError, DataError, expected_error_code
from pecan.runtime.manifest import check_unique_ids, read_manifest_frame
from pecan.scoring.figures import split_metrics
from pecan.scoring.memory import StageClock
from pecan.scoring.sdf import write_scored_sdf
from pecan.scoring.settings import score_property_default

log = logging.getLogger("pecan")


@dataclass(frozen=True)
class ScoreRequest:
    """What `pecan score` was asked: the checkpoint, one complex's files or a manifest, the scored SDF."""

    checkpoint: str
    out: str
    receptor: Optional[str] = None
    poses: Optional[str] = None
    crystal: Optional[str] = None
    complex_id: Optional[str] = None
    score_property: Optional[str] = None
    manifest: Optional[str] = None
    pocket_radius: float = 8.0
    allow: tuple[str, ...] = ()
    device: str = "auto"


def manifest_rows(args: ScoreRequest, state: dict) -> pd.DataFrame:
    """The manifest to convert: the given one, or one row from --receptor/--poses/--crystal. Ids are text,
    stripped of surrounding spaces as the converter strips them. A row without a score property gets
    --score-property, else the checkpoint's (``score_property_default``)."""
    rows = _given_rows(args)
    default = args.score_property if args.score_property is not None else score_property_default(state)[0]
    if "score_property" not in rows:
        rows["score_property"] = ""
    rows["score_property"] = [p.strip() or default for p in rows["score_property"]]
    return rows


def read_records(rows: pd.DataFrame) -> list[Optional[list]]:
    """Each row's poses file parsed once (``chemistry.read_ligands``), kept for conversion and the scored SDF;
    None for a file that cannot be read (the converter records why)."""
    from pecan.convert import chemistry as chem

    records = []
    for row in rows.itertuples():
        try:
            records.append(chem.read_ligands(Path(row.poses)))
        except chem.ConversionError:
            records.append(None)
    return records


def check_docking_scores(rows: pd.DataFrame, state: dict, records: list[Optional[list]]) -> None:
    """A model that takes docking scores as input needs one on every pose: ConfigError (exit 2) naming the
    SD property and the file that lacks it."""
    if not score_property_default(state)[1]:
        return
    for row, parsed in zip(rows.itertuples(), records):
        prop = row.score_property
        mols = [m for m in parsed or [] if m is not None]
        missing = [k for k, mol in enumerate(mols, start=1) if not prop or not mol.HasProp(prop)]
        if missing:
            raise ConfigError(
                f"pecan score: the checkpoint's model takes each pose's docking score (model.use_docking_score), "
                f"but {len(missing)} of {len(mols)} records of {row.poses} have no SD property {prop!r} "
                f"(first: record {missing[0]}); name the property holding it with --score-property"
            )


def _given_rows(args: ScoreRequest) -> pd.DataFrame:
    if args.manifest:
        if args.receptor or args.poses:
            raise ConfigError("pecan score: give --manifest or --receptor/--poses, not both")
        rows = read_manifest_frame(Path(args.manifest), ("complex_id", "receptor", "poses"), ())
        base = Path(args.manifest).resolve().parent
        for column in ("receptor", "poses", "crystal_ligand"):
            if column in rows:  # relative paths resolve against the manifest's directory, as the converter's
                rows[column] = [str((base / p.strip()).resolve()) if p.strip() else "" for p in rows[column]]
        rows["complex_id"] = rows["complex_id"].str.strip()
        return rows
    if not (args.receptor and args.poses):
        raise ConfigError("pecan score: give --receptor and --poses (or --manifest)")
    row = {
        "complex_id": (args.complex_id if args.complex_id is not None else Path(args.poses).stem).strip(),
        "receptor": str(Path(args.receptor).resolve()),
        "poses": str(Path(args.poses).resolve()),
        "score_property": "",
        "crystal_ligand": str(Path(args.crystal).resolve()) if args.crystal else "",
    }
    if not row["complex_id"]:
        raise ConfigError("pecan score: --complex-id is empty")
    return pd.DataFrame([row])


def output_paths(out: Path) -> dict[str, Path]:
    """What `pecan score --out X.sdf` writes: the SDF, X.csv and X.metrics.json."""
    from pecan.scoring.shards import metrics_path

    scores_csv = out.with_suffix(".csv")
    return {"--out": out, "the scores CSV": scores_csv, "the metrics JSON": metrics_path(scores_csv)}


def check_outputs(args: ScoreRequest, rows: pd.DataFrame) -> None:
    """No output may be an input (checkpoint, receptor, poses, crystal, manifest and its files) or another
    output (``--out X.csv`` would be its own scores CSV)."""
    from pecan.runtime import outputs

    inputs = [
        ("the checkpoint", args.checkpoint),
        ("--receptor", args.receptor),
        ("--poses", args.poses),
        ("--crystal", args.crystal),
        ("--manifest", args.manifest),
        *outputs.manifest_files(rows),
    ]
    outputs.check_outputs("pecan score", output_paths(Path(args.out)).items(), inputs)


def scoring_setup(args: ScoreRequest, state: dict):
    """The config scoring runs under (the checkpoint's, checked as `pecan predict` checks it), its model on
    the device, and the conversion options (the checkpoint's label threshold)."""
    from pecan.convert.complexes import Options
    from pecan.scoring.checkpoint import build_scoring_model, mapping_from_checkpoint, scoring_config
    from pecan.train.distributed import discover, init_distributed, resolve_device

    env = discover()
    if env.is_distributed:
        raise ConfigError(
            "pecan score runs in one process; under a launcher convert the poses (pecan convert) and score "
            "the shards with pecan predict"
        )
    raw = mapping_from_checkpoint(state)
    raw["data"].update(data_dir=".")  # the config asks for a data source; nothing is read from it
    raw["train"].update(device=args.device)
    path = Path(args.checkpoint)
    config = scoring_config(state, config_module.load_mapping(raw, (), "pecan score"), path, tuple(args.allow))
    device = resolve_device(config.train.device, init_distributed(env), env.local_rank)
    model = build_scoring_model(state, config.model, path, device)
    return config, model, device, Options(pocket_radius=args.pocket_radius, rmsd_threshold=config.data.rmsd_threshold)


def convert_rows(rows: pd.DataFrame, records: list, options, base: Path) -> list:
    """Each row converted from its kept records (``convert_complex``); failures logged one by one, a
    DataError when no pose converts."""
    from pecan.convert.complexes import convert_complex, manifest_entries

    converted, skipped = [], 0
    for entry, parsed in zip(manifest_entries(rows, base), records):
        item = convert_complex(entry, options, records=parsed)
        for failure in item.failures:
            pose = failure["pose_id"]
            log.warning("not scored: complex %s pose %s: %s", failure["complex_id"], pose or "(all)", failure["reason"])
            skipped += bool(pose)
        if item.poses:
            converted.append(item)
    poses = sum(len(c.poses) for c in converted)
    positives = sum(int(s.attrs.get("label", 0)) for c in converted for s in c.poses)
    print(
        f"converted {len(converted)} complexes, {poses} poses ({positives} near-native), skipped "
        f"{len(rows) - len(converted)} complexes and {skipped} poses (see the warnings above)",
        flush=True,
    )
    if not converted:
        raise DataError("pecan score: no pose could be converted (see the warnings above)")
    return converted


def score_converted(converted: list, config, model, device, clock: StageClock) -> pd.DataFrame:
    """Logits of every converted pose through the evaluation loop: index rows, graphs in memory, batches."""
    from pecan.data.loader import make_loader, make_sampler
    from pecan.runtime.progress import resolve_mode
    from pecan.scoring.evaluate import score_share
    from pecan.scoring.memory import MemoryPoseDataset, converted_index
    from pecan.scoring.shards import check_unique_poses, scored_poses

    frame, samples = converted_index(converted, config.data)
    check_unique_poses(frame)
    dataset = MemoryPoseDataset(frame, samples, config.data, clock)
    sampler = make_sampler(dataset, config.data, train=False, rank=0, world_size=1, seed=config.train.seed)
    loader = make_loader(dataset, sampler, config.data.batch_size, 0)
    with clock.timed("graph+model"):
        logits, ids = score_share(model, loader, device, config.train.amp, resolve_mode(config.train.progress))
    clock.seconds["model"] = clock.seconds.pop("graph+model") - clock.seconds.get("graph", 0.0)
    return scored_poses(dataset, frame, logits.cpu().numpy(), ids.cpu().numpy())


def score_poses(args: ScoreRequest, clock: Optional[StageClock] = None) -> int:
    """Parse, convert, score and write in memory (no shard, index or pack on disk); exit 0, 2 for a wrong
    invocation, 1 for bad inputs. ``clock`` collects the seconds per stage."""
    from pecan.scoring.checkpoint import read_checkpoint
    from pecan.scoring.settings import assign_splits, warn_if_synthetic
    from pecan.scoring.shards import write_outputs

    clock = clock if clock is not None else StageClock()
    try:
        try:
            import pecan.convert.complexes  # noqa: F401
        except ImportError as err:
            raise ConfigError(f"pecan score needs the convert extra (pip install -e '.[convert]'): {err}") from err
        with clock.timed("load"):
            state = read_checkpoint(Path(args.checkpoint))
        rows = manifest_rows(args, state)
        if args.manifest:
            check_unique_ids(rows, Path(args.manifest))
        check_outputs(args, rows)
        with clock.timed("parse"):
            records = read_records(rows)
        check_docking_scores(rows, state, records)
        with clock.timed("load"):
            config, model, device, options = scoring_setup(args, state)
    except (ConfigError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    paths = output_paths(Path(args.out))
    try:
        with clock.timed("convert"):
            converted = convert_rows(rows, records, options, Path(args.manifest or ".").resolve().parent)
        warn_if_synthetic(state, Path(args.checkpoint), [])
        scores = score_converted(converted, config, model, device, clock)
        scores["split"] = assign_splits(scores["complex_id"], state.get("complexes"), set(scores["complex_id"]))
        values = {**split_metrics(scores), "checkpoint": str(args.checkpoint), "scores": str(paths["the scores CSV"])}
        with clock.timed("write"):
            write_outputs(scores, values, paths["the scores CSV"], state)
            written = write_scored_sdf(rows, scores, paths["--out"], records)
    except Exception as err:  # bad data (pecan.runtime.errors.EXIT_CODES) exits 1 with its message
        return expected_error_code(err)
    print(f"wrote {written} scored poses to {paths['--out']}", flush=True)
    return 0
