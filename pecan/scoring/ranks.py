"""Running `pecan score`'s loop (``pecan.scoring.screen``) over the inputs: the progress lines, the outputs'
commit and the summary."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any, Optional

from pecan.engine.pins import score_property_default
from pecan.engine.state import CheckpointState
from pecan.runtime.errors import ConfigError, DataError
from pecan.runtime.progress import Progress
from pecan.scoring.featurise import GroupConverter
from pecan.scoring.inputs import iter_groups
from pecan.scoring.invocation import checkpoint_fields
from pecan.scoring.memory import StageClock
from pecan.scoring.output import ScoredOutput
from pecan.scoring.receptors import receptor_reader
from pecan.scoring.screen import BATCH_SIZE, CHUNK_POSES, Scored, ScreenRun, chunks, counter_factory

log = logging.getLogger("pecan")


def score_files(
    args, files: list, state: CheckpointState, config, model, device, options, env, clock: StageClock
) -> Optional[dict]:
    """Score every group of ``files`` and write the outputs; the metrics values on rank 0 (None elsewhere).

    Under a launcher rank ``r`` of ``W`` scores the groups numbered ``r, r + W, ...`` into its own part (a
    hidden ``.X.sdf.ranks/`` folder beside ``--out``); when every rank is done, rank 0 joins the parts in input
    order into the outputs and removes the folder. A rank that fails makes every rank fail, with its error."""
    distributed = env is not None and env.is_distributed
    out = Path(args.out)
    parts = out.parent / f".{out.name}.ranks"
    if not distributed:
        output = ScoredOutput(out)
        run = _run(args, files, state, config, model, device, options, output, clock, 0, 1)
        values = _values(args, output, run.scored, output.failed_poses, output.failed_ligands)
        _commit(output, values)
        report(values, output, state)
        return values
    from pecan.runtime.collectives import all_gather_object, barrier

    parts.mkdir(parents=True, exist_ok=True)
    part = parts / f"rank{env.rank}.sdf"
    outcome: dict[str, Any] = {"error": None}
    try:
        output = ScoredOutput(part, part=True)
        run = _run(args, files, state, config, model, device, options, output, clock, env.rank, env.world_size)
        output.commit({})
        outcome.update(scored=run.scored, failed=(output.failed_poses, output.failed_ligands))
    except Exception as err:  # every rank must reach the gather below, whatever this one met
        outcome["error"] = (type(err).__name__, str(err))
    outcomes = all_gather_object(outcome, "pecan score: the ranks' results")
    errors = [(rank, o["error"]) for rank, o in enumerate(outcomes) if o["error"] is not None]
    if errors:
        rank, (kind, message) = errors[0]
        error = ConfigError if kind == "ConfigError" else DataError
        raise error(f"rank {rank} of {env.world_size}: {message}")
    values = None
    if env.is_main:
        scored = Scored.merged([o["scored"] for o in outcomes])
        output = ScoredOutput(out)
        try:
            output.merge_parts([parts / f"rank{r}.sdf" for r in range(env.world_size)])
            values = _values(args, output, scored, output.failed_poses, output.failed_ligands)
            _commit(output, values)
        finally:
            shutil.rmtree(parts, ignore_errors=True)
        report(values, output, state)
    barrier("pecan score: outputs written")
    return values


def _run(args, files, state, config, model, device, options, output, clock, rank: int, world_size: int) -> ScreenRun:
    """The scoring loop over this rank's groups, into ``output``."""
    try:
        run = ScreenRun(
            config,
            model,
            device,
            GroupConverter(options, counter_factory(), receptor_reader=receptor_reader(args.receptor_hydrogens)),
            output,
            state=state,
            batch_size=args.batch_size or BATCH_SIZE,
            needs_docking_score=score_property_default(state)[1],
            clock=clock,
            docking_weight=args.docking_weight,
        )
        progress_mode = args.progress if rank == 0 else "off"
        with Progress(None, "scoring", "pose", progress_mode, every_s=30.0) as progress:
            for chunk in chunks(iter_groups(files, args.group_by, rank, world_size), CHUNK_POSES, clock):
                progress.update(run.score_chunk(chunk))
    except BaseException as err:
        output.abort(err)
        raise
    return run


def _values(args, output: ScoredOutput, scored: Scored, failed_poses: int, failed_ligands: int) -> dict[str, Any]:
    """The metrics JSON's values; a DataError (the outputs discarded) when no pose was scored."""
    if not scored.poses:
        error = DataError(f"pecan score: no pose could be scored{_first_failure(output)}; nothing was written")
        output.abort(error)
        raise error
    values = scored.values()
    values.update(checkpoint_fields(args.checkpoint))
    values["scores"] = str(output.paths["the scores CSV"])
    if args.docking_weight:
        values["docking_weight"] = args.docking_weight
    values["failures"] = {"poses": failed_poses, "ligands": failed_ligands}
    return values


def _first_failure(output: ScoredOutput) -> str:
    """': N failures, the first: REASON (every one is logged above)' ('' when none was recorded)."""
    count = output.failed_poses + output.failed_ligands
    if not count:
        return ""
    return f": {count} failure(s), the first: {output.first_failure} (each is logged above as 'not scored')"


def _commit(output: ScoredOutput, values: dict[str, Any]) -> None:
    try:
        output.commit(values)
    except BaseException as err:
        output.abort(err)
        raise


def report(values: dict[str, Any], output: ScoredOutput, state: CheckpointState) -> None:
    """The summary lines, the warnings on the split, and what was written."""
    # figures, not shards: shards imports the data loader and PyG (3 s of imports at the end of a run)
    from pecan.scoring.figures import report_figures

    report_figures(values, state.complexes)
    if output.failed_poses or output.failed_ligands:
        print(
            f"not scored: {output.failed_poses} poses and {output.failed_ligands} whole ligands "
            f"(reasons in {output.paths['the failures CSV']})",
            flush=True,
        )
    paths = output.paths
    print(f"wrote {paths['the scores CSV']}, {paths['the failures CSV']} and {paths['the metrics JSON']}", flush=True)
    print(f"wrote {output.written} scored poses to {paths['--out']}", flush=True)
