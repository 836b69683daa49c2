"""`pecan score`'s in-memory path: each poses file parsed once, no shard, index, pack or temporary directory
written, the same scores as `pecan predict` on the converted shards of the same poses."""

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from pecan.commands import predict as predict_command
from pecan.convert.complexes import Options
from pecan.convert.examples import write_prolif_manifest
from pecan.convert.run import convert
from pecan.scoring.memory import StageClock
from pecan.scoring.poses import ScoreRequest, score_poses


@pytest.fixture(scope="module")
def shard_path(trained_run, tmp_path_factory):
    """The ProLIF manifest and `pecan predict`'s scores of its poses converted to shards."""
    tmp = tmp_path_factory.mktemp("score_memory")
    manifest = write_prolif_manifest(tmp / "prolif")
    convert(manifest, tmp / "shards", Options(), prefix="real", progress=False)
    scores = tmp / "shard_scores.csv"
    argv = [str(trained_run.checkpoint), "--data-dir", str(tmp / "shards"), "--out", str(scores), "--device", "cpu"]
    assert predict_command.main(argv) == 0
    return tmp, trained_run.checkpoint, manifest, pd.read_csv(scores, dtype={"complex_id": str, "pose_id": str})


def no_disk_scratch(*args, **kwargs):
    raise AssertionError("the in-memory path writes no shard, index, pack or temporary file")


@pytest.mark.slow
def test_in_memory_scores_equal_predict_on_the_shards_and_nothing_else_is_written(shard_path, monkeypatch):
    tmp, checkpoint, manifest, shard_scores = shard_path
    parsed = []
    from pecan.scoring import inputs

    iter_records = inputs.iter_records
    monkeypatch.setattr(
        inputs, "iter_records", lambda path, *rest: parsed.append(Path(path).name) or iter_records(path, *rest)
    )
    monkeypatch.setattr("pecan.data.layout.write_shard", no_disk_scratch)
    monkeypatch.setattr("pecan.data.loader.prepare_job_data", no_disk_scratch)
    monkeypatch.setattr("pecan.data.loader.prepare_packs", no_disk_scratch)
    monkeypatch.setattr("pecan.data.index_derived.write_derived_index", no_disk_scratch)
    monkeypatch.setattr(tempfile, "mkdtemp", no_disk_scratch)
    out_dir = tmp / "memory"
    out_dir.mkdir()
    clock = StageClock()
    # 1s2g's receptor has no hydrogens: `pecan convert` takes it as given, and so must the score compared
    request = ScoreRequest(
        str(checkpoint), str(out_dir / "all.sdf"), manifest=str(manifest), device="cpu", receptor_hydrogens="keep"
    )
    assert score_poses(request, clock) == 0
    assert sorted(p.name for p in out_dir.iterdir()) == ["all.csv", "all.failures.csv", "all.metrics.json", "all.sdf"]
    poses_files = [name for name in parsed if name in ("vina_scored.sdf", "1.D_protonated.sdf")]
    assert sorted(poses_files) == ["1.D_protonated.sdf", "vina_scored.sdf"]  # each poses file parsed once
    assert {"parse", "load", "convert", "graph", "model", "write"} <= set(clock.seconds)
    scores = pd.read_csv(out_dir / "all.csv", dtype={"complex_id": str, "pose_id": str})
    merged = scores.merge(shard_scores, on=["complex_id", "pose_id"], suffixes=("", "_shards"), validate="one_to_one")
    assert len(merged) == len(shard_scores) == len(scores) == 10
    np.testing.assert_allclose(merged["pecan_score"], merged["pecan_score_shards"], rtol=0, atol=1e-6)
    assert (merged["pecan_rank"] == merged["pecan_rank_shards"]).all()
    for column in ("rmsd", "label", "docking_score", "split"):
        assert merged[column].equals(merged[f"{column}_shards"]), column
