"""`pecan score`: docking output (a receptor and an SDF/mol2 of poses, a directory of them, or a converter
manifest) in, scored poses out as SDF, with scores.csv, the failures file and the metrics JSON beside it.

In one process and streaming: the poses are read one ligand group at a time (``pecan.scoring.inputs``),
featurised as the converter featurises them with the receptor, pockets and ligand topologies prepared once
(``pecan.scoring.featurise``), turned into graphs by the data path's functions and scored in batches with the
checkpoint's model and sample settings (``pecan.scoring.screen``), and written group by group
(``pecan.scoring.output``). No shard, index or pack is written; memory is bounded by a chunk of poses, not by
the input. Under a launcher (torchrun, srun, flux) every rank scores every world-size-th group and rank 0
joins the ranks' outputs in input order (``pecan.scoring.ranks``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pandas as pd

from pecan import config as config_module
from pecan.engine.pins import DEFAULT_SCORE_PROPERTY, score_property_default
from pecan.engine.state import CheckpointState
from pecan.runtime.errors import ConfigError, NotANumber
from pecan.runtime.manifest import check_unique_ids, read_manifest_frame
from pecan.runtime.numbers import read_number
from pecan.scoring.consensus import check_weight
from pecan.scoring.inputs import GROUP_BY, PosesFile, check_scores_present, poses_in
from pecan.scoring.invocation import check_receptor, checkpoint_paths
from pecan.scoring.memory import StageClock
from pecan.scoring.output import output_paths

log = logging.getLogger("pecan")


@dataclass(frozen=True)
class ScoreRequest:
    """What `pecan score` was asked: the checkpoint (several: an ensemble), one complex's files or a manifest,
    the scored SDF."""

    checkpoint: str | tuple[str, ...]
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
    group_by: str = "molecule"
    receptor_hydrogens: str = "add"  # pecan.scoring.receptors.RECEPTOR_HYDROGENS
    batch_size: int = 0  # 0: BATCH_SIZE
    progress: str = "auto"
    threads: int = 0  # 0: OMP_NUM_THREADS when set, else 1
    scores_csv: Optional[str] = None  # the poses' docking scores from a CSV (``pecan.scoring.score_table``)
    score_column: Optional[str] = None
    docking_weight: float = 0.0  # > 0: rank by the consensus with the docking score (pecan.scoring.consensus)


def manifest_rows(args: ScoreRequest, state: CheckpointState) -> pd.DataFrame:
    """The manifest to convert: the given one, or one row from --receptor/--poses/--crystal. Ids are text,
    stripped of surrounding spaces as the converter strips them. A row without a score property gets
    --score-property, else the checkpoint's (``score_property_default``)."""
    rows = _given_rows(args)
    default = args.score_property if args.score_property is not None else score_property_default(state)[0]
    if not default and args.docking_weight:  # a structure-only model ranked with the docking score
        default = DEFAULT_SCORE_PROPERTY
    if "score_property" not in rows:
        rows["score_property"] = ""
    rows["score_property"] = [p.strip() or default for p in rows["score_property"]]
    return rows


def poses_files(args: ScoreRequest, rows: pd.DataFrame) -> list["PosesFile"]:
    """The poses files to read, in order: a manifest's rows, or --poses (a file, or a directory's files)."""
    files = []
    scores = None
    if args.scores_csv:
        from pecan.scoring.score_table import ScoreTable

        scores = ScoreTable.read(Path(args.scores_csv), args.score_column)
    for row in rows.to_dict("records"):
        crystal = row.get("crystal_ligand", "")
        common = {
            "receptor": Path(row["receptor"]),
            "crystal": Path(crystal) if isinstance(crystal, str) and crystal.strip() else None,
            "score_property": row["score_property"],
            "affinity": _affinity(
                row.get("affinity", ""), f"pecan score: --manifest {args.manifest}, complex {row['complex_id']}"
            ),
            "scores": scores,
        }
        path = Path(row["poses"])
        if not args.manifest and path.is_dir():
            files.extend(PosesFile(p, p.stem, **common) for p in poses_in(path))
        else:
            prefix = f"{row['complex_id']}/" if args.manifest else ""
            files.append(PosesFile(path, row["complex_id"], prefix=prefix, **common))
    if scores is not None and not scores.by_file and len(files) > 1:
        raise ConfigError(
            f"pecan score: {len(files)} poses files are scored: --scores-csv {args.scores_csv} needs a 'file' "
            f"column (each pose's poses file name)"
        )
    return files


def _affinity(value, where: str) -> float:
    """A manifest row's affinity: blank is none, else one number (``pecan.runtime.numbers``), or ConfigError."""
    if value is None or not str(value).strip() or (isinstance(value, float) and math.isnan(value)):
        return float("nan")
    try:
        return read_number(value, f"{where}, affinity")
    except NotANumber as err:
        raise ConfigError(str(err)) from None


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
        for complex_id, receptor in zip(rows["complex_id"], rows["receptor"]):
            if receptor.lower().endswith(".pdbqt"):
                check_receptor(Path(receptor), f"--manifest {args.manifest}, complex {complex_id}: receptor")
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


def check_outputs(args: ScoreRequest, rows: pd.DataFrame, files: list) -> None:
    """No output may be an input (checkpoint, receptor, poses or a file of the --poses directory, crystal,
    manifest and its files, the scores CSV given) or another output (``--out X.csv`` would be its own scores CSV)."""
    from pecan.runtime import outputs

    inputs = [
        *[("the checkpoint", str(path)) for path in checkpoint_paths(args.checkpoint)],
        ("--receptor", args.receptor),
        ("--poses", args.poses),
        ("--crystal", args.crystal),
        ("--manifest", args.manifest),
        ("--scores-csv", args.scores_csv),
        *outputs.manifest_files(rows),
        *[("a poses file", str(item.path)) for item in files],
    ]
    outputs.check_outputs("pecan score", output_paths(Path(args.out)).items(), inputs)


def check_options(args: ScoreRequest) -> None:
    """The options no parser checks, and the convert extra: a ConfigError (exit 2) before anything loads."""
    try:
        import pecan.convert.complexes  # noqa: F401
    except ImportError as err:
        raise ConfigError(f"pecan score needs the convert extra (pip install -e '.[convert]'): {err}") from err
    if args.group_by not in GROUP_BY:
        raise ConfigError(f"pecan score: --group-by must be one of {', '.join(GROUP_BY)}, got {args.group_by!r}")
    if args.receptor_hydrogens not in ("add", "keep"):
        raise ConfigError(f"pecan score: --receptor-hydrogens must be add or keep, got {args.receptor_hydrogens!r}")
    if args.batch_size < 0:
        raise ConfigError(f"pecan score: --batch-size must be positive, got {args.batch_size}")
    if args.threads < 0:
        raise ConfigError(f"pecan score: --threads must be positive, got {args.threads}")
    check_weight(args.docking_weight, "pecan score: --docking-weight")


def score_job(args: ScoreRequest, clock: StageClock):
    """The `pecan score` job (pecan.engine.harness.Job): the options, the checkpoint(s), the inputs and the
    outputs checked, the config scoring runs under (the first checkpoint's; every member's settings checked
    against it as `pecan predict` checks them)."""
    from pecan.engine.harness import Job
    from pecan.scoring.checkpoint import mapping_from_checkpoint, read_checkpoint, scoring_config
    from pecan.scoring.ensemble import ensemble_state

    check_options(args)
    paths = checkpoint_paths(args.checkpoint)
    with clock.timed("load"):
        states = [read_checkpoint(path) for path in paths]
    state = ensemble_state(states, paths)  # one member's, or the members' as one (the same docking-score input)
    rows = manifest_rows(args, state)
    if args.manifest:
        check_unique_ids(rows, Path(args.manifest))
    files = poses_files(args, rows)
    check_outputs(args, rows, files)
    check_scores_present(files, score_property_default(state)[1], args.docking_weight)
    raw = mapping_from_checkpoint(states[0])
    raw["data"].update(data_dir=".")  # the config asks for a data source; nothing is read from it
    raw["train"].update(device=args.device)
    given = config_module.load_mapping(raw, (), "pecan score")
    configs = [scoring_config(s, given, path, tuple(args.allow)) for s, path in zip(states, paths)]
    members = list(zip(states, configs, paths))
    return Job(body=lambda run: run_score(run, args, state, members, files, clock), device=configs[0].train.device)


def run_score(run, args: ScoreRequest, state: CheckpointState, members: list, files: list, clock: StageClock) -> None:
    """Under the harness: this rank's torch threads, the checkpoint's model (several: their MeanProbability) on
    the device, then read, convert, score and write (``pecan.scoring.ranks``). ``members`` holds each
    checkpoint's (state, scoring config, path)."""
    import torch

    from pecan.convert.complexes import Options
    from pecan.engine.distributed import threads_from_environment
    from pecan.engine.pins import warn_if_synthetic
    from pecan.scoring import ranks
    from pecan.scoring.checkpoint import build_scoring_model
    from pecan.scoring.ensemble import MeanProbability

    threads = torch.get_num_threads()
    run.on_exit(lambda: torch.set_num_threads(threads))
    torch.set_num_threads(args.threads or threads_from_environment(1))
    models = []
    with clock.timed("load"):
        for member_state, config, path in members:
            try:
                model = build_scoring_model(member_state, config.model, path, run.device)
            except (OSError, ValueError) as err:  # a checkpoint this model cannot take is a wrong invocation
                raise ConfigError(str(err)) from err
            if hasattr(model, "readout_edges_only"):  # the EGNN: only the messages its ligand readout reads
                model.readout_edges_only = True
            models.append(model)
    model = models[0] if len(models) == 1 else MeanProbability(models).eval()
    config = members[0][1]
    options = Options(pocket_radius=args.pocket_radius, rmsd_threshold=config.data.rmsd_threshold)
    for member_state, _, path in members:
        warn_if_synthetic(member_state, path, [])
    ranks.score_files(args, files, state, config, model, run.device, options, run.env, clock)


def score_poses(args: ScoreRequest, clock: Optional[StageClock] = None) -> int:
    """Read, convert, score and write, streaming (no shard, index or pack on disk), under the run harness;
    exit 0, 2 for a wrong invocation, 1 for bad inputs. ``clock`` collects the seconds per stage."""
    from pecan.engine.harness import LABEL_FORMAT, run

    clock = clock if clock is not None else StageClock()
    return run(lambda: score_job(args, clock), console_format=LABEL_FORMAT, quiet_ranks=False)
