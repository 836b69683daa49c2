"""A checkpoint named on the command line is the one that scores: a path that does not exist is an error
(exit 2, naming it), never a quiet fall-back to the shipped model."""

import logging

import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from pecan.commands import score as score_command
from pecan.convert.examples import prolif_data, vina_poses_with_scores


@pytest.mark.slow
def test_a_checkpoint_that_does_not_exist_is_an_error_not_the_shipped_model(tmp_path, capsys, caplog):
    caplog.set_level(logging.INFO)
    poses = vina_poses_with_scores(tmp_path / "vina.sdf")
    argv = ["--receptor", str(prolif_data() / "vina" / "rec.pdb"), "--poses", str(poses)]
    argv += ["--score-property", "vina_score", "--device", "cpu", "--progress", "off"]
    missing = tmp_path / "runs" / "best.pt"
    assert score_command.main([str(missing), *argv, "--out", str(tmp_path / "named.sdf")]) == 2
    assert f"the checkpoint {missing}: file not found" in capsys.readouterr().err
    assert "shipped model" not in caplog.text
    assert not list(tmp_path.glob("named*"))
    # the same poses score with the shipped model when no checkpoint is named: a fall-back would have succeeded
    assert score_command.main([*argv, "--out", str(tmp_path / "shipped.sdf")]) == 0
    assert "shipped model" in caplog.text
