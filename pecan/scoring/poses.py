"""`pecan score`: docking output (a receptor and an SDF/mol2 of poses, or a converter manifest) in, scored
poses out as SDF, with scores.csv and the metrics JSON beside it.

The poses are featurised by the converter (``pecan.convert``, the `convert` extra), scored with the
checkpoint's model and sample settings as `pecan predict` scores shards, and written back from their input
records (``pecan.scoring.sdf``), each complex's poses sorted by score.
"""

from __future__ import annotations

import logging
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pandas as pd

from pecan import config as config_module
from pecan.errors import ConfigError, DataError, expected_error_code
from pecan.manifest import read_manifest_frame
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


def check_docking_scores(rows: pd.DataFrame, state: dict) -> None:
    """A model that takes docking scores as input needs one on every pose: ConfigError (exit 2) naming the
    SD property and the file that lacks it."""
    from pecan.convert import chemistry as chem

    if not score_property_default(state)[1]:
        return
    for row in rows.itertuples():
        prop = row.score_property
        mols = [m for m in chem.read_ligands(Path(row.poses)) if m is not None]
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
    from pecan import outputs

    inputs = [
        ("the checkpoint", args.checkpoint),
        ("--receptor", args.receptor),
        ("--poses", args.poses),
        ("--crystal", args.crystal),
        ("--manifest", args.manifest),
        *outputs.manifest_files(rows),
    ]
    outputs.check_outputs("pecan score", output_paths(Path(args.out)).items(), inputs)


def shard_config(state: dict, shards: Path, work: Path, device: str) -> config_module.Config:
    """The checkpoint's scoring config over the converted shards; derived files stay in ``work``."""
    from pecan.scoring.checkpoint import mapping_from_checkpoint

    raw = mapping_from_checkpoint(state)
    raw["data"].update(
        data_dir=str(shards), test_fns=["*.hdf5"], cache_dir=str(work / "cache"), index_dir=str(work / "index")
    )
    raw["train"].update(device=device)
    return config_module.load_mapping(raw, (), "pecan score")


def convert_inputs(rows: pd.DataFrame, work: Path, options) -> Path:
    """Convert ``rows`` (absolute paths) into shards under ``work``; logs the failures."""
    from pecan.convert.run import convert, summary_line

    manifest = work / "manifest.csv"
    rows.to_csv(manifest, index=False)
    summary = convert(manifest, work / "shards", options, prefix="score", progress=sys.stderr.isatty())
    failures = pd.read_csv(summary["failures"], dtype=str, keep_default_na=False)
    for failure in failures.itertuples():
        log.warning("not scored: complex %s pose %s: %s", failure.complex, failure.pose or "(all)", failure.reason)
    print(summary_line({**summary, "failures": "the warnings above"}), flush=True)
    if not summary["complexes"]:
        raise DataError("pecan score: no pose could be converted (see the warnings above)")
    return work / "shards"


def score_poses(args: ScoreRequest) -> int:
    """Convert, score, write the scored SDF; exit 0, 2 for a wrong invocation, 1 for bad inputs."""
    from pecan.scoring.checkpoint import read_checkpoint
    from pecan.scoring.shards import score_shards

    try:
        try:
            from pecan.convert.complexes import Options
        except ImportError as err:
            raise ConfigError(f"pecan score needs the convert extra (pip install -e '.[convert]'): {err}") from err
        state = read_checkpoint(Path(args.checkpoint))
        rows = manifest_rows(args, state)
        check_outputs(args, rows)
        check_docking_scores(rows, state)
        rmsd_threshold = float(((state.get("config") or {}).get("data") or {}).get("rmsd_threshold", 2.0))
        options = Options(pocket_radius=args.pocket_radius, rmsd_threshold=rmsd_threshold)
    except (ConfigError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    paths = output_paths(Path(args.out))
    with tempfile.TemporaryDirectory(prefix="pecan-score-") as tmp:
        work = Path(tmp)
        try:
            shards = convert_inputs(rows, work, options)
            config = shard_config(state, shards, work, args.device)
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        except Exception as err:  # bad data (pecan.errors.EXIT_CODES) exits 1 with its message
            return expected_error_code(err)
        code = score_shards(config, args.checkpoint, str(paths["the scores CSV"]), tuple(args.allow))
    if code == 0:
        from pecan.scoring.sdf import read_scores, write_scored_sdf

        try:
            written = write_scored_sdf(rows, read_scores(paths["the scores CSV"]), paths["--out"])
        except Exception as err:
            return expected_error_code(err)
        print(f"wrote {written} scored poses to {paths['--out']}", flush=True)
    return code
