"""No `--out` overwrites what its command reads (pecan.runtime.outputs): the checkpoint, an index, a manifest, a poses
file, a run's records, or another output of the same command. Each is refused with exit 2 and one line naming
both, before anything is written."""

import hashlib
import shutil

import pandas as pd
import pytest

from pecan.commands import convert as convert_command
from pecan.commands import predict as predict_command
from pecan.commands import redock as redock_command
from pecan.runs import plot as plot_module
from pecan.runs import trace as trace_module
from pecan.runtime import outputs
from pecan.runtime.errors import ConfigError


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refused(capsys, code, *words):
    """Exit 2 with one error line holding ``words``."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1, err
    assert all(word in lines[0] for word in words), lines[0]


def test_helper_compares_resolved_paths(tmp_path, monkeypatch):
    (tmp_path / "best.pt").write_text("x")
    (tmp_path / "link.pt").symlink_to(tmp_path / "best.pt")
    monkeypatch.chdir(tmp_path)
    for alias in ("best.pt", "./sub/../best.pt", "link.pt", str(tmp_path / "best.pt")):
        with pytest.raises(outputs.ConfigError, match="is the checkpoint"):
            outputs.check_outputs("cmd", [("--out", alias)], [("the checkpoint", "best.pt")])
    with pytest.raises(outputs.ConfigError, match="also where --out goes"):
        outputs.check_outputs("cmd", [("--out", "a.csv"), ("the scores CSV", "./a.csv")], [])
    outputs.check_outputs("cmd", [("--out", "scores.csv")], [("the checkpoint", "best.pt"), ("--config", "")])


@pytest.fixture
def scoring_copy(trained_run, tmp_path):
    """A checkpoint and a data directory (shards and labelled index.csv) of the session's run, copied."""
    shutil.copytree(trained_run.root / "data", tmp_path / "data")
    shutil.copy(trained_run.checkpoint, tmp_path / "best.pt")
    return tmp_path


@pytest.mark.parametrize("target", ["best.pt", "data/index.csv", "data/shard_0.hdf5", "data"])
def test_predict_refuses_an_out_that_is_an_input(scoring_copy, capsys, target):
    path = scoring_copy / target
    before = digest(path) if path.is_file() else None
    argv = [str(scoring_copy / "best.pt"), "--data-dir", str(scoring_copy / "data"), "--out", str(path)]
    refused(capsys, predict_command.main([*argv, "--device", "cpu"]), "pecan predict", "--out", "overwritten")
    assert before is None or digest(path) == before


def test_predict_refuses_a_metrics_json_onto_its_checkpoint(scoring_copy, capsys):
    shutil.copy(scoring_copy / "best.pt", scoring_copy / "s.metrics.json")
    argv = [str(scoring_copy / "s.metrics.json"), "--data-dir", str(scoring_copy / "data"), "--out"]
    code = predict_command.main([*argv, str(scoring_copy / "s.csv"), "--device", "cpu"])
    refused(capsys, code, "the metrics JSON", "the checkpoint")


def test_score_refuses_its_own_scores_csv_and_its_inputs(scoring_copy, capsys):
    pytest.importorskip("rdkit", reason="needs the convert extra")
    from pecan.commands import score as score_command
    from pecan.convert.examples import prolif_data, vina_poses_with_scores

    poses = vina_poses_with_scores(scoring_copy / "poses.sdf")
    before = digest(poses)
    base = [str(scoring_copy / "best.pt"), "--receptor", str(prolif_data() / "vina" / "rec.pdb"), "--poses", str(poses)]
    refused(capsys, score_command.main([*base, "--out", str(scoring_copy / "X.csv")]), "the scores CSV", "--out")
    refused(capsys, score_command.main([*base, "--out", str(poses)]), "--out", "is --poses")
    refused(capsys, score_command.main([*base, "--out", str(scoring_copy / "best.pt")]), "is the checkpoint")
    assert digest(poses) == before and not (scoring_copy / "X.csv").exists()


def write_manifest(path, **row):
    pd.DataFrame([row]).to_csv(path, index=False)
    return path


def test_convert_refuses_to_overwrite_its_manifest(tmp_path, capsys):
    pytest.importorskip("rdkit", reason="needs the convert extra")
    manifest = write_manifest(tmp_path / "failures.csv", complex_id="a", receptor="r.pdb", poses="p.sdf")
    before = digest(manifest)
    refused(capsys, convert_command.main([str(manifest), "--out", str(tmp_path)]), "pecan convert", "the manifest")
    (tmp_path / "converted_0000.hdf5").write_text("not mine")  # a manifest's poses file under a shard name
    other = write_manifest(tmp_path / "m.csv", complex_id="a", receptor="r.pdb", poses="converted_0000.hdf5")
    refused(capsys, convert_command.main([str(other), "--out", str(tmp_path)]), "a shard it writes")
    assert digest(manifest) == before


def test_redock_refuses_to_overwrite_its_manifest(tmp_path, capsys):
    manifest = write_manifest(tmp_path / "manifest.csv", complex_id="a", receptor="r.pdb", crystal_ligand="l.sdf")
    before = digest(manifest)
    code = redock_command.main([str(manifest), "--out", str(tmp_path)])
    refused(capsys, code, "pecan redock", "its manifest.csv", "the manifest")
    assert digest(manifest) == before and not (tmp_path / "redock.csv").exists()


def test_runs_plot_and_trace_refuse_their_inputs(trained_run, tmp_path, capsys):
    trained_run.copy_to(tmp_path)
    run = tmp_path / "run"
    before = digest(run / "epochs.jsonl")
    args = plot_module_args(run, run / "plots")
    (run / "plots").mkdir(exist_ok=True)
    (run / "plots" / "run.png").write_bytes(b"png")
    with pytest.raises(ConfigError, match="pecan runs plot: .*the plot of"):  # the command maps it to exit 2
        plot_module.run(args)
    code = trace_module.main([str(run), "--json", str(run / "epochs.jsonl")])
    refused(capsys, code, "pecan runs trace", "--json", "epochs.jsonl")
    code = trace_module.main([str(run), "--json", str(tmp_path / "t.json"), "--perfetto", str(tmp_path / "t.json")])
    refused(capsys, code, "--json", "also where --perfetto goes")
    assert digest(run / "epochs.jsonl") == before


def plot_module_args(run, out):
    import argparse

    parser = argparse.ArgumentParser()
    plot_module.add_arguments(parser)
    return parser.parse_args([str(run), "--out", str(out)])
