"""The leave-one-family-out benchmark script on a tiny slice of the committed redocked complexes."""

import json
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="the benchmark converts poses: needs the convert extra")
pytest.importorskip("prolif", reason="the benchmark converts poses: needs the convert extra")

ROOT = Path(__file__).resolve().parents[2]
STUDY = ROOT / "studies" / "realdock"
SLICE = {"1ac8": "oxidoreductase", "1p2y": "oxidoreductase", "1uw6": "binding_protein", "1lrh": "binding_protein"}


def _benchmark_module():
    """The harness, imported once rdkit and prolif are known to be there (it converts poses)."""
    from studies.realdock import run

    return run


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """The slice's inputs, poses and records from the study's archives (digests checked first), laid out as the
    study's own folder is, with the study's docked manifest restricted to the slice."""
    from studies import archive

    dest = tmp_path_factory.mktemp("realdock")

    def in_slice(member):
        return any(f"/{c}/" in member or f"/{c}." in member for c in SLICE)

    archive.verify("realdock")
    for name, folders in archive.ARCHIVES["realdock"].items():
        archive.extract(archive.archive_path("realdock", name), dest, folders, keep=in_slice)
    manifest = pd.read_csv(STUDY / "docked" / "manifest.csv", dtype=str, keep_default_na=False)
    manifest[manifest["complex_id"].isin(SLICE)].to_csv(dest / "docked" / "manifest.csv", index=False)
    return dest


@pytest.mark.slow
def test_two_folds_on_four_complexes(study, tmp_path, capsys, monkeypatch):
    docked = study / "docked"
    manifest = pd.read_csv(docked / "manifest.csv", dtype=str)
    assert sorted(manifest["complex_id"]) == sorted(SLICE)
    for column in ("receptor", "poses", "crystal_ligand"):
        manifest[column] = [str((docked / p).resolve()) for p in manifest[column]]
    (tmp_path / "docked").mkdir()
    manifest.to_csv(tmp_path / "docked" / "manifest.csv", index=False)
    argv = [
        "--docked",
        str(tmp_path / "docked"),
        "--work",
        str(tmp_path / "work"),
        "--results",
        str(tmp_path),
        "--tag",
        "slice",
        "--families",
        "oxidoreductase,binding_protein",
        "--n-boot",
        "50",
        "--set",
        "train.epochs=1",
        "--set",
        "data.val_fraction=0.5",
        "--set",
        "model.hidden=8",
        "--set",
        "model.layers=1",
        "--set",
        "train.plots=false",  # the figures here are the JSON and the table
    ]
    code = _benchmark_module().main(argv)
    assert code == 0
    result = json.loads((tmp_path / "slice.json").read_text())
    assert set(result["folds"]) == {"oxidoreductase", "binding_protein"}
    pooled = result["pooled"]
    assert pooled["complexes"] == 4 and all(f["complexes"] == 2 for f in result["folds"].values())
    for ranker in ("model", "docking"):  # top-1 <= top-3 <= ceiling holds for every complex
        assert pooled[f"{ranker}_top1"]["hits"] <= pooled[f"{ranker}_top3"]["hits"] <= pooled["ceiling"]["hits"]
    scores = pd.read_csv(tmp_path / "work" / "folds" / "binding_protein" / "slice_scores.csv")
    assert set(scores["complex_id"]) == {"1uw6", "1lrh"}  # the held-out family only, scored by pecan predict
    assert "| **pooled** | 4 |" in capsys.readouterr().out
    # --reuse: the same tag, recipe and fold files reuse the scores (no training); another setting trains again
    written = {p: p.stat().st_mtime_ns for p in (tmp_path / "work" / "folds").glob("*/slice_scores.csv")}
    assert len(written) == 2
    assert _benchmark_module().main([*argv, "--reuse"]) == 0
    assert capsys.readouterr().out.count("reusing") == 2
    assert {p: p.stat().st_mtime_ns for p in written} == written
    assert json.loads((tmp_path / "slice.json").read_text())["pooled"] == pooled
    changed = [*argv, "--reuse", "--families", "binding_protein", "--set", "train.lr=0.001"]
    module, commands = _benchmark_module(), []

    def train_started(command, **kwargs):  # the fold trains again: its first command is main_app.py
        commands.append(command)
        raise RuntimeError("training started")

    monkeypatch.setattr(module.subprocess, "run", train_started)
    with pytest.raises(RuntimeError, match="training started"):
        module.main(changed)
    assert "reusing" not in capsys.readouterr().out
    assert commands[0][1].endswith("main_app.py") and "train.lr=0.001" in commands[0]


def _scores(values):
    return pd.DataFrame(
        {
            "complex_id": ["a", "a", "b", "b"],
            "pose_id": ["a1", "a2", "b1", "b2"],
            "pecan_score": values,
            "docking_score": [-9.0, -8.0, -7.0, -6.0],
            "label": [0, 1, 1, 0],
        }
    )


def test_the_ensemble_averages_each_poses_score_over_the_seeds():
    run = _benchmark_module()
    first, second = _scores([0.9, 0.2, 0.6, 0.1]), _scores([0.1, 0.6, 0.4, 0.5]).iloc[::-1]  # other row order
    mean = run.ensemble([first, second])
    assert mean.set_index("pose_id")["pecan_score"].to_dict() == pytest.approx(
        {"a1": 0.5, "a2": 0.4, "b1": 0.5, "b2": 0.3}
    )
    spread = run.seed_spread({"0": [first], "1": [second]}, n_boot=20)
    # seed 0 ranks a1 (decoy) and b1 (near-native) first: 1/2; seed 1 ranks a2 and b2 first: 1/2.
    assert spread["range"]["model_top1"] == [0.5, 0.5]
    assert spread["pooled"]["0"]["per_complex"]["a"]["model_top1"] == 0  # a1, a decoy, ranked first
    assert spread["pooled"]["1"]["per_complex"]["a"]["model_top1"] == 1
    with pytest.raises(ValueError, match="same poses"):
        run.ensemble([first, _scores([0.1, 0.2, 0.3, 0.4]).assign(pose_id=["x", "a2", "b1", "b2"])])


def test_extra_poses_go_to_training_complexes_only_and_validation_keeps_docked_poses(tmp_path):
    from pecan.data.index import split_by_complex
    from pecan.data.index_rows import read_index_rows

    complexes = [f"c{k}" for k in range(10)]
    families = {c: ("held" if k < 2 else "train") for k, c in enumerate(complexes)}

    def rows(suffix):
        return pd.DataFrame(
            {
                "shard": [f"{c}.hdf5" for c in complexes for _ in range(2)],
                "complex_id": [c for c in complexes for _ in range(2)],
                "pose_id": [f"{c}_{suffix}{k}" for c in complexes for k in range(2)],
                "label": [1, 0] * len(complexes),
                "docking_score": -5.0,
            }
        )

    docked, extra = rows("pose"), rows("aug")
    run = _benchmark_module()
    train, test, tested = run.fold_csvs(docked, families, "held", tmp_path, "t", None, extra, (0.25, 3))
    assert tested == 2
    train_rows, val_rows = read_index_rows(train), read_index_rows(tmp_path / "t_val.csv")
    _, expected_val = split_by_complex(docked[docked["complex_id"].map(families) == "train"], 0.25, 3)
    assert sorted(val_rows["pose_id"]) == sorted(expected_val["pose_id"])  # the recipe's own split, docked only
    val_complexes = set(val_rows["complex_id"])
    assert not val_complexes & set(train_rows["complex_id"])
    assert not {"c0", "c1"} & set(train_rows["complex_id"])  # nothing of the held-out fold is trained on
    trained = set(train_rows["complex_id"])
    assert trained == {f"c{k}" for k in range(2, 10)} - val_complexes
    assert all(train_rows["pose_id"].str.contains("_aug").groupby(train_rows["complex_id"]).sum() == 2)
    run.fold_csvs(docked, families, "held", tmp_path, "t")  # without extra poses: the recipe's split again
    assert not (tmp_path / "t_val.csv").exists()


def test_train_fraction_samples_whole_training_complexes_and_keeps_the_held_out_fold(tmp_path):
    from pecan.data.index_rows import read_index_rows

    complexes = [f"c{k}" for k in range(12)]
    families = {c: ("held" if k < 2 else "train") for k, c in enumerate(complexes)}
    docked = pd.DataFrame(
        {
            "shard": [f"{c}.hdf5" for c in complexes for _ in range(3)],
            "complex_id": [c for c in complexes for _ in range(3)],
            "pose_id": [f"{c}_p{k}" for c in complexes for k in range(3)],
            "label": [1, 0, 0] * len(complexes),
            "docking_score": -5.0,
        }
    )
    run = _benchmark_module()
    train, test, tested = run.fold_csvs(docked, families, "held", tmp_path, "half", train_fraction=0.5)
    rows = read_index_rows(train)
    assert tested == 2 and set(read_index_rows(test)["complex_id"]) == {"c0", "c1"}
    assert rows["complex_id"].nunique() == 5 and set(rows["complex_id"]) <= set(complexes[2:])
    assert (rows.groupby("complex_id").size() == 3).all()  # whole complexes, every pose
    again = read_index_rows(run.fold_csvs(docked, families, "held", tmp_path, "other", train_fraction=0.5)[0])
    assert set(again["complex_id"]) == set(rows["complex_id"])  # the same sample for every tag
    quarter = read_index_rows(run.fold_csvs(docked, families, "held", tmp_path, "q", train_fraction=0.25)[0])
    assert set(quarter["complex_id"]) < set(rows["complex_id"])  # nested: a quarter lies within the half
    full = read_index_rows(run.fold_csvs(docked, families, "held", tmp_path, "all")[0])
    assert set(full["complex_id"]) == set(complexes[2:])
    with pytest.raises(SystemExit):
        run.parse_args(["--train-fraction", "0"])


def _one_complex(study, tmp_path, complex_id="1uw6"):
    """A docked-output folder holding one realdock complex, its poses file copied (tests change it)."""
    source = study / "docked"
    manifest = pd.read_csv(source / "manifest.csv", dtype=str, keep_default_na=False)
    row = manifest[manifest["complex_id"] == complex_id].copy()
    docked = tmp_path / "docked"
    (docked / "poses").mkdir(parents=True)
    (docked / "poses" / f"{complex_id}.sdf").write_text((source / row["poses"].iloc[0]).read_text())
    for column in ("receptor", "crystal_ligand"):
        row[column] = str((source / row[column].iloc[0]).resolve())
    row["poses"] = f"poses/{complex_id}.sdf"
    row.to_csv(docked / "manifest.csv", index=False)
    return docked


def test_peer_scores_of_other_poses_are_refused(study, tmp_path, capsys):
    from studies.realdock import peers as module

    docked = _one_complex(study, tmp_path)
    digest = module.poses_digest(docked / "poses" / "1uw6.sdf")
    args = _benchmark_module().parse_args(["--docked", str(docked), "--peer-scores", str(tmp_path / "peers.csv")])
    peers = pd.DataFrame({"complex_id": ["1uw6", "1uw6"], "pose_id": ["a", "b"], "poses_sha256": [digest, digest]})
    peers.to_csv(tmp_path / "peers.csv", index=False)
    module.check_peer_poses(args, {"1uw6"})  # the same file: accepted
    peers.assign(poses_sha256="0123456789abcdef").to_csv(tmp_path / "peers.csv", index=False)
    module.check_peer_poses(args, {"other"})  # not scored in this run: not checked
    with pytest.raises(SystemExit, match="other versions of 1 poses file.*1uw6"):
        module.check_peer_poses(args, {"1uw6"})
    peers.drop(columns="poses_sha256").to_csv(tmp_path / "peers.csv", index=False)
    module.check_peer_poses(args, {"1uw6"})
    assert "no poses_sha256 column" in capsys.readouterr().out


@pytest.mark.slow
def test_a_changed_poses_file_is_converted_again(study, tmp_path, capsys):
    from studies.realdock import conversion as module

    docked = _one_complex(study, tmp_path)
    first = module.convert(docked, tmp_path / "shards")
    again = module.convert(docked, tmp_path / "shards")  # unchanged: reused
    assert "converting again" not in capsys.readouterr().out
    pd.testing.assert_frame_equal(first, again)
    poses = docked / "poses" / "1uw6.sdf"
    records = poses.read_text().split("$$$$\n")
    poses.write_text("$$$$\n".join(records[:3]) + "$$$$\n")  # redocked since: fewer poses
    changed = module.convert(docked, tmp_path / "shards")
    assert "differs from the converted poses; converting again" in capsys.readouterr().out
    assert len(changed[changed["is_crystal"].astype(int) == 0]) == 3 < len(first[first["is_crystal"].astype(int) == 0])


def test_a_teacher_with_extra_poses_needs_their_teacher_scores(tmp_path):
    """--teacher with --train-extra and no --teacher-extra stops before any conversion, naming the option."""
    argv = ["--docked", str(tmp_path / "docked"), "--work", str(tmp_path / "work"), "--results", str(tmp_path)]
    argv += ["--train-extra", str(tmp_path / "extra"), "--peer-scores", str(tmp_path / "peers.csv")]
    with pytest.raises(SystemExit, match="give --teacher-extra"):
        _benchmark_module().main([*argv, "--teacher", "cnn_score_default"])
    assert not (tmp_path / "work").exists()
