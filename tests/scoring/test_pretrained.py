"""The shipped pretrained model (pecan/pretrained): a scoring-only checkpoint, its model card, pecan score's
default."""

import json
import subprocess
import sys

import pytest
import torch

from pecan import pretrained
from pecan.engine.state import TRAINING_ONLY, CheckpointState


def _shipped():
    return torch.load(pretrained.CHECKPOINT, map_location="cpu", weights_only=True)


def test_the_shipped_checkpoint_loads_with_weights_only_and_holds_scoring_keys_only():
    state = CheckpointState.from_dict(_shipped(), pretrained.CHECKPOINT)
    assert all(getattr(state, key) is None for key in TRAINING_ONLY) and not state.extra
    assert state.feature_layout is not None and state.model_config is not None  # what scoring's pins check
    assert pretrained.CHECKPOINT.stat().st_size < 5e6  # small enough to commit
    record = state.training_data
    assert record["kind"] == "real" and record["complexes"] >= 50
    assert record["docking_score"]["property"] == "docking_score"


def test_the_shipped_description_names_the_checkpoint_and_its_consensus_weight():
    description = json.loads(pretrained.SHIPPED.read_text())
    assert pretrained.default_checkpoints() == (pretrained.CHECKPOINT,)
    weight = pretrained.default_docking_weight()
    assert description["docking_weight"] == weight > 0  # the student reads no docking score: the consensus adds it
    assert not CheckpointState.from_dict(_shipped()).model_config["use_docking_score"]
    card = pretrained.CARD.read_text()
    assert f"shipped weight {weight:g} in `shipped.json`" in card and "`--docking-weight 0`" in card


def test_the_card_names_the_teacher_and_its_licence():
    card = pretrained.CARD.read_text()
    for named in ("GNINA 1.0", "gninatorch 0.0.2", "MIT licence", "GPL-2.0 and Apache-2.0", "holds\n  none of GNINA"):
        assert named in card, named
    assert "`data.target_column=teacher`" in card and "`cnn_score_default`" in card


def test_the_shipped_checkpoint_names_no_build_machine_folder():
    config = _shipped()["config"]
    paths = [config["data"]["data_dir"], *config["data"]["train_csvs"], config["train"]["out_dir"]]
    assert paths and not any(p.startswith("/") for p in paths), paths


@pytest.mark.slow
def test_pecan_score_without_a_checkpoint_uses_the_shipped_model(tmp_path):
    """The gnina --score_only of PECAN: docking output in, scored poses out, no checkpoint to find."""
    pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")
    from rdkit import Chem

    from pecan.convert.examples import prolif_data, write_prolif_manifest
    from tests.procs import clean_env

    def run_clean(args, cwd):
        return subprocess.run(
            [sys.executable, *args], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=300
        )

    write_prolif_manifest(tmp_path / "prolif")
    data = prolif_data() / "vina"
    out = tmp_path / "out" / "scored.sdf"
    command = ["-m", "pecan", "score", "--receptor", str(data / "rec.pdb"), "--poses"]
    command += [str(tmp_path / "prolif" / "vina_scored.sdf"), "--crystal", str(data / "lig.pdb")]
    done = run_clean([*command, "--score-property", "vina_score", "--out", str(out)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "shipped model" in done.stderr and str(pretrained.CHECKPOINT) in done.stderr
    weight = json.loads(out.with_suffix(".metrics.json").read_text())["docking_weight"]
    assert weight == pretrained.default_docking_weight()  # the shipped consensus, without being asked
    assert f"wrote 9 scored poses to {out}" in done.stdout  # printed before the process's quick exit
    poses = list(Chem.SDMolSupplier(str(out)))
    assert len(poses) == 9 and all(0.0 <= float(m.GetProp("pecan_score")) <= 1.0 for m in poses)
    assert all(m.HasProp("pecan_consensus") for m in poses)
    ranks = {int(m.GetProp("pecan_rank")): int(m.GetProp("label")) for m in poses}
    assert max(ranks[k] for k in (1, 2, 3)) == 1  # the near-native pose is among the three best-scored
    # Without the docking score its consensus takes, the shipped model refuses, naming the property and file.
    missing = run_clean([*command, "--out", str(tmp_path / "o2" / "s.sdf")], cwd=tmp_path)
    assert missing.returncode == 2 and "docking_score" in missing.stderr and "vina_scored.sdf" in missing.stderr


def test_setup_installs_every_file_of_the_shipped_model():
    """A non-editable install copies package_data only: a shipped file it misses (shipped.json: the consensus
    weight) would leave the installed model scoring otherwise than the checkout's."""
    import ast
    import fnmatch
    from pathlib import Path

    setup = Path(pretrained.__file__).resolve().parents[2] / "setup.py"
    call = next(n for n in ast.walk(ast.parse(setup.read_text())) if isinstance(n, ast.Call) and n.keywords)
    data = ast.literal_eval(next(k.value for k in call.keywords if k.arg == "package_data"))
    patterns = data["pecan.pretrained"]
    shipped = [p.name for p in pretrained.HERE.iterdir() if p.is_file() and p.suffix != ".py"]
    assert pretrained.SHIPPED.name in shipped and pretrained.CHECKPOINT.name in shipped
    missed = [name for name in shipped if not any(fnmatch.fnmatch(name, pattern) for pattern in patterns)]
    assert not missed, f"setup.py package_data misses {missed}"


def test_the_card_calls_no_score_a_probability_and_names_its_in_sample_sets():
    card = pretrained.CARD.read_text()
    assert "the probability" not in card and "model's probability" not in card
    assert card.count("not a calibrated") >= 2
    assert "PoseBusters, Astex and CASF-2013 complexes" in card and "in-sample" in card
    assert "pooled over every pose of every complex" in card


def test_the_package_holds_look_ups_only():
    """Building, slimming and carding the model is release tooling (release/), not part of what is installed."""
    assert not any(hasattr(pretrained, name) for name in ("card_text", "slim_checkpoint", "portable_config"))
