"""pecan.runtime.out_folder: the plan record of a data-preparation output folder, compared by every rank."""

import json

import pytest

from pecan.runtime import out_folder
from pecan.runtime.errors import ConfigError
from pecan.runtime.out_folder import PLAN_NAME, Plan, own_folder, settle_plan


def _plan(tmp_path, launch="", manifest_text="complex_id\nc0\n", **options):
    manifest = tmp_path / "manifest.csv"
    manifest.write_text(manifest_text)
    plan = Plan.of("pecan convert", {"--radius": 8.0, **options}, manifest, ("shard_*.h5", "index.csv"))
    return Plan(plan.command, plan.options, plan.manifest, plan.manifest_sha256, plan.outputs, launch)


def test_launch_ids_of_torchrun_slurm_and_flux():
    assert out_folder.launch_id({"TORCHELASTIC_RUN_ID": "r1"}) == "r1"
    assert out_folder.launch_id({"SLURM_JOB_ID": "42", "SLURM_STEP_ID": "3"}) == "42:3"
    assert out_folder.launch_id({"FLUX_JOB_ID": "f2Bq"}) == "f2Bq"
    assert out_folder.launch_id({"RANK": "0"}) == ""


def test_the_digest_covers_options_and_manifest_bytes_not_the_launch(tmp_path):
    base = _plan(tmp_path)
    assert _plan(tmp_path, launch="other").digest == base.digest
    assert _plan(tmp_path, **{"--radius": 6.0}).digest != base.digest
    assert _plan(tmp_path, manifest_text="complex_id\nc1\n").digest != base.digest


def test_ranks_of_one_launch_that_disagree_are_refused_even_with_replace(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    assert settle_plan(out, _plan(tmp_path, launch="L"), 0, "rank 0 of 2", False) == "new"
    assert settle_plan(out, _plan(tmp_path, launch="L"), 1, "rank 1 of 2", False) == "same"
    with pytest.raises(ConfigError, match=r"disagree .*--radius 8.0 there, 6.0 here \(recorded by rank 0 of 2"):
        settle_plan(out, _plan(tmp_path, launch="L", **{"--radius": 6.0}), 1, "rank 1 of 2", True)


def test_replace_removes_only_what_the_earlier_plan_listed(tmp_path):
    out = tmp_path / "out"
    lock = own_folder(out, _plan(tmp_path))
    lock.release()
    for name in ("shard_0.h5", "shard_1.h5", "index.csv", "notes.txt"):
        (out / name).write_text("x")
    (out / ".ranks").mkdir()
    other = _plan(tmp_path, **{"--radius": 6.0})
    with pytest.raises(ConfigError, match="holds the outputs of another plan: --radius 8.0 there, 6.0 here"):
        own_folder(out, other)
    assert (out / "shard_1.h5").exists() and not (out / ".pecan.lock").exists()
    ownership = own_folder(out, other, replace=True)
    ownership.release()
    assert ownership.outcome == "replaced"
    assert sorted(p.name for p in out.iterdir()) == [PLAN_NAME, "notes.txt"]
    assert json.loads((out / PLAN_NAME).read_text())["digest"] == other.digest


def test_a_later_rank_of_a_replacing_run_waits_for_rank_0(tmp_path, monkeypatch):
    out = tmp_path / "out"
    own_folder(out, _plan(tmp_path)).release()
    monkeypatch.setattr(out_folder, "REPLACE_WAIT_S", 0.2)
    with pytest.raises(ConfigError, match="rank 0 did not record this run's plan"):
        settle_plan(out, _plan(tmp_path, **{"--radius": 6.0}), 1, "rank 1 of 2", True)
    assert (out / PLAN_NAME).exists()  # a later rank never removes outputs


def test_a_damaged_plan_record_is_named(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / PLAN_NAME).write_text("[1, 2")
    with pytest.raises(ConfigError, match=rf"{PLAN_NAME} cannot be read"):
        own_folder(out, _plan(tmp_path))
    assert not (out / ".pecan.lock").exists()
