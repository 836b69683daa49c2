"""The distillation study's pieces: the teacher column of run.py --teacher and the fit/transfer summary."""

import json

import numpy as np
import pandas as pd
import pytest

from studies.distill import consensus, ensemble, fit, last_epoch, memorise, seed_mean, transfer, where
from studies.realdock.teacher import COLUMN, with_teacher


def _index():
    return pd.DataFrame(
        {
            "complex_id": ["1abc", "1abc", "1abc", "2def"],
            "pose_id": ["1abc_crystal", "1abc_pose1", "1abc_pose2", "2def_pose1"],
            "is_crystal": ["1", "0", "0", "0"],
        }
    )


def _peers(tmp_path, rows):
    path = tmp_path / "peers.csv"
    pd.DataFrame(rows, columns=["complex_id", "pose_id", "cnn_score_default"]).to_csv(path, index=False)
    return path


def test_teacher_column_takes_each_docked_pose_score_and_leaves_the_crystal_empty(tmp_path):
    peers = _peers(tmp_path, [("1abc", "1abc_pose1", 0.9), ("1abc", "1abc_pose2", 0.2), ("2def", "2def_pose1", 0.5)])
    out = with_teacher(_index(), peers, "cnn_score_default")
    assert np.isnan(out[COLUMN].iloc[0])
    assert out[COLUMN].iloc[1:].tolist() == [0.9, 0.2, 0.5]


def test_a_docked_pose_without_a_teacher_score_is_an_error_naming_it(tmp_path):
    peers = _peers(tmp_path, [("1abc", "1abc_pose1", 0.9), ("1abc", "1abc_pose2", 0.2)])
    with pytest.raises(SystemExit, match=r"1 docked pose\(s\) have no cnn_score_default.*2def/2def_pose1"):
        with_teacher(_index(), peers, "cnn_score_default")


def test_a_missing_teacher_column_is_an_error_naming_it(tmp_path):
    peers = _peers(tmp_path, [("1abc", "1abc_pose1", 0.9)])
    with pytest.raises(SystemExit, match="no column 'cnn_affinity'"):
        with_teacher(_index(), peers, "cnn_affinity")


def test_agreement_counts_the_student_first_pose_against_the_teacher_first():
    scores = pd.DataFrame(
        {
            "complex_id": ["a", "a", "a", "b", "b"],
            "pose_id": ["a1", "a2", "a3", "b1", "b2"],
            "pecan_score": [0.9, 0.5, 0.1, 0.2, 0.8],
            "docking_score": [-9.0, -8.0, -7.0, -6.0, -5.0],
            "label": [1, 0, 0, 1, 0],
            "teacher": [0.8, 0.6, 0.1, 0.9, 0.3],
        }
    )
    table = fit.first_agreement(scores, "teacher").set_index("complex_id")
    assert table["agrees"].tolist() == [True, False]
    assert table["docking_agrees"].tolist() == [True, True]
    assert table["student_top1"].tolist() == [1, 0]
    assert table["docking_top1"].tolist() == [1, 1]
    assert table["teacher_top1"].tolist() == [1, 1]
    assert table.loc["a", "spearman"] == pytest.approx(1.0)
    assert table.loc["b", "spearman"] == pytest.approx(-1.0)


def test_the_best_record_is_the_epoch_best_pt_was_written_at(tmp_path):
    from pecan.engine.state import CheckpointState

    records = [{"epoch": 1, "val_auc": 0.7}, {"epoch": 2, "val_auc": 0.9}, {"epoch": 3, "val_auc": 0.8}]
    (tmp_path / "epochs.jsonl").write_text("\n".join(json.dumps(r) for r in [*records, {"event": "stop"}]) + "\n")
    read = fit.epoch_records(tmp_path)
    assert len(read) == 3
    (tmp_path / "checkpoints").mkdir()
    CheckpointState(model={}, epoch=1).save(tmp_path / "checkpoints" / "best.pt")  # not the highest val_auc
    assert fit.best_record(tmp_path, read)["epoch"] == 1
    CheckpointState(model={}, epoch=7).save(tmp_path / "checkpoints" / "best.pt")
    with pytest.raises(SystemExit, match="best.pt is from epoch 7"):
        fit.best_record(tmp_path, read)


def test_subset_keeps_every_row_of_the_chosen_complexes_and_is_seeded(tmp_path):
    rows = pd.DataFrame({"pdbid": [f"c{i // 3}" for i in range(30)], "poseid": [f"p{i}" for i in range(30)]})
    rows.to_csv(tmp_path / "train.csv", index=False)
    first = pd.read_csv(memorise.subset(tmp_path / "train.csv", tmp_path / "a.csv", 4, 0))
    again = pd.read_csv(memorise.subset(tmp_path / "train.csv", tmp_path / "b.csv", 4, 0))
    assert first["pdbid"].nunique() == 4
    assert len(first) == 12
    assert first.equals(again)


def test_curve_reads_the_fit_fields_of_every_epoch(tmp_path):
    records = [
        {"epoch": 1, "train_loss": 1.0, "fit_teacher_top1": 0.5, "fit_top1": 0.6},
        {"event": "stop"},
        {"epoch": 2, "train_loss": 0.8, "fit_teacher_top1": 0.7, "fit_top1": 0.8},
    ]
    (tmp_path / "epochs.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    out = memorise.curve(tmp_path)
    assert [r["fit_teacher_top1"] for r in out] == [0.5, 0.7]
    assert out[1]["fit_docking_top1"] is None


def test_an_unknown_lever_is_refused_naming_the_known_ones(capsys):
    with pytest.raises(SystemExit):
        memorise.main(["--levers", "bigger", "--collect"])
    assert "unknown lever(s) bigger" in capsys.readouterr().err


def _hits(model, docking, gnina=0, gnina2018=0):
    return {"model_top1": model, "docking_top1": docking, "gnina_top1": gnina, "gnina2018_top1": gnina2018}


def test_transfer_counts_hits_and_pairs_the_student_with_vina_and_the_recipe():
    student = {"a": _hits(1, 0, 1), "b": _hits(1, 1), "c": _hits(0, 1, 1, 1), "d": _hits(1, 0)}
    recipe = {"a": _hits(0, 0), "b": _hits(1, 1), "c": _hits(0, 1), "d": _hits(0, 0)}
    part = transfer.part_summary(student, recipe, ["a", "b", "c", "d"], n_boot=200)
    assert (part["model_top1"], part["docking_top1"], part["gnina_top1"], part["recipe_top1"]) == (3, 2, 2, 1)
    assert part["model_minus_vina"]["mean"] == pytest.approx(25.0)
    assert part["model_minus_recipe"]["mean"] == pytest.approx(50.0)
    low, high = part["model_minus_recipe"]["ci95"]
    assert 0.0 <= low <= 50.0 <= high <= 100.0


def test_last_epoch_scores_only_folds_that_run_py_finished(tmp_path):
    still_training = tmp_path / "folds" / "0" / "tag" / "checkpoints"
    still_training.mkdir(parents=True)
    (still_training / "last.pt").write_bytes(b"")  # a run mid-way has a last.pt but no scores stamp yet
    peers = _peers(tmp_path, [("1abc", "1abc_pose1", 0.9)])
    frame = pd.read_csv(peers).assign(cnn_score_default2018=0.5)
    frame.to_csv(peers, index=False)
    with pytest.raises(SystemExit, match="no fold of tag .* has finished"):
        last_epoch.main(["tag", "--work", str(tmp_path), "--peer-scores", str(peers), "--results", str(tmp_path)])


def _converted(tmp_path, complexes):
    """<shards>/<id>/<id>_all.csv as run.py's convert writes them: (pose, rmsd, Vina score) per complex."""
    for complex_id, poses in complexes.items():
        rows = [dict(pdbid=complex_id, poseid=f"{complex_id}_crystal", rmsd=0.0, score=0.0, is_crystal=1)]
        rows += [dict(pdbid=complex_id, poseid=p, rmsd=r, score=s, is_crystal=0) for p, r, s in poses]
        (tmp_path / "shards" / complex_id).mkdir(parents=True)
        pd.DataFrame(rows).to_csv(tmp_path / "shards" / complex_id / f"{complex_id}_all.csv", index=False)


def test_where_lists_complexes_whose_teacher_first_is_near_native_and_vina_first_is_not(tmp_path, capsys):
    _converted(
        tmp_path,
        {
            "good": [("good_p1", 4.0, -9.0), ("good_p2", 1.0, -8.0)],  # Vina first 4 A, teacher first 1 A: listed
            "both": [("both_p1", 1.5, -9.0), ("both_p2", 5.0, -8.0)],  # both first poses near-native
            "none": [("none_p1", 3.0, -9.0), ("none_p2", 2.0, -8.0)],  # teacher's first at exactly 2 A: not near
            "gone": [("gone_p1", 3.0, -9.0), ("gone_p2", 1.0, -8.0)],  # not in --only
        },
    )
    teacher = {"good_p1": 0.1, "good_p2": 0.9, "both_p1": 0.8, "both_p2": 0.3, "none_p1": 0.2, "none_p2": 0.7}
    teacher["gone_p2"] = 0.9
    teacher["gone_p1"] = 0.1
    rows = [(pose.split("_")[0], pose, score) for pose, score in teacher.items()]
    peers = _peers(tmp_path, rows)
    pd.DataFrame({"complex_id": ["good", "both", "none"]}).to_csv(tmp_path / "only.csv", index=False)
    out = tmp_path / "where.csv"
    argv = ["--shards", str(tmp_path / "shards"), "--peer-scores", str(peers), "--only", str(tmp_path / "only.csv")]
    assert where.main([*argv, "--out", str(out)]) == 0
    chosen = pd.read_csv(out)
    assert chosen.to_dict("records") == [{"complex_id": "good", "teacher_first_rmsd": 1.0, "vina_first_rmsd": 4.0}]
    assert "1 of 3 complexes" in capsys.readouterr().out


def test_where_names_a_pose_without_a_teacher_score(tmp_path):
    _converted(tmp_path, {"good": [("good_p1", 4.0, -9.0), ("good_p2", 1.0, -8.0)]})
    peers = _peers(tmp_path, [("good", "good_p1", 0.5)])
    pd.DataFrame({"complex_id": ["good"]}).to_csv(tmp_path / "only.csv", index=False)
    argv = ["--shards", str(tmp_path / "shards"), "--peer-scores", str(peers), "--only", str(tmp_path / "only.csv")]
    with pytest.raises(SystemExit, match="have no cnn_score_default.*good/good_p2"):
        where.main([*argv, "--out", str(tmp_path / "where.csv")])


def _fold_scores(work, fold, tag, scores):
    """<work>/folds/<fold>/<tag>_scores.csv (and run.py's stamp) for two complexes of two poses each:
    pose 1 of each complex is the near-native one."""
    directory = work / "folds" / fold
    directory.mkdir(parents=True, exist_ok=True)
    rows = [
        dict(
            complex_id=c,
            pose_id=f"{c}_p{k}",
            split="test",
            pecan_score=s,
            pecan_rank=0,
            docking_score=-k,
            rmsd=1.0 if k == 1 else 5.0,
            label=int(k == 1),
        )
        for (c, k), s in zip([("a", 1), ("a", 2), ("b", 1), ("b", 2)], scores)
    ]
    pd.DataFrame(rows).to_csv(directory / f"{tag}_scores.csv", index=False)
    (directory / f"{tag}_scores.json").write_text("{}")


def test_ensemble_averages_the_members_probabilities_per_pose(tmp_path):
    # member x ranks a right and b wrong, y the other way; their mean ranks both right
    _fold_scores(tmp_path, "0", "x", [0.9, 0.1, 0.40, 0.45])
    _fold_scores(tmp_path, "0", "y", [0.45, 0.50, 0.9, 0.1])
    peers = _peers(tmp_path, [("a", "a_p1", 0.9), ("a", "a_p2", 0.1), ("b", "b_p1", 0.2), ("b", "b_p2", 0.8)])
    pd.read_csv(peers).assign(cnn_score_default2018=0.5).to_csv(peers, index=False)
    argv = ["xy", "x", "y", "--work", str(tmp_path), "--peer-scores", str(peers), "--results", str(tmp_path)]
    assert ensemble.main([*argv, "--n-boot", "10"]) == 0
    result = json.loads((tmp_path / "xy.json").read_text())
    assert result["members_top1"] == {"x": 1, "y": 1}
    # the teacher's first poses are a_p1 and b_p2: x picks both, y neither, the ensemble one of two
    assert result["held_out"]["teacher_first"] == 0.5
    assert {m: v["teacher_first"] for m, v in result["members_held_out"].items()} == {"x": 1.0, "y": 0.0}
    assert result["pooled"]["model_top1"]["hits"] == 2 and result["folds"]["0"]["per_complex"]["b"]["gnina_top1"] == 0
    _fold_scores(tmp_path, "1", "x", [0.9, 0.1, 0.4, 0.45])  # x has finished a fold y has not
    with pytest.raises(SystemExit, match="y has not finished fold"):
        ensemble.main(argv)
    with pytest.raises(SystemExit):
        ensemble.main(["x", "x", "y", "--work", str(tmp_path)])  # its JSON would replace a member's


def _two_pose_fold(model_right: bool, docking_right: bool, name: str) -> pd.DataFrame:
    """One complex of two poses (p1 near-native): the model and the docking score each rank it right or not,
    the model narrowly (0.55 against 0.45), the docking score by far."""
    first, second = (0.55, 0.45) if model_right else (0.45, 0.55)
    docking = (-9.0, -5.0) if docking_right else (-5.0, -9.0)
    return pd.DataFrame(
        {
            "complex_id": [name, name],
            "pose_id": [f"{name}_p1", f"{name}_p2"],
            "pecan_score": [first, second],
            "docking_score": list(docking),
            "rmsd": [1.0, 5.0],
            "label": [1, 0],
        }
    )


def test_consensus_weights_are_chosen_on_the_other_folds_only():
    # fold 0: the model is wrong and the docking score right; fold 1: the other way round
    folds = {"0": _two_pose_fold(False, True, "a"), "1": _two_pose_fold(True, False, "b")}
    chosen = consensus.choose_weights(folds, [0.0, 2.0])
    assert chosen == {"0": 0.0, "1": 2.0}  # each fold's weight is what served the other fold
    assert consensus.top1_hits(consensus.consensus(folds["0"], 2.0)) == 1
    assert consensus.top1_hits(consensus.consensus(folds["0"], 0.0)) == 0
    tie = {"0": _two_pose_fold(True, True, "a"), "1": _two_pose_fold(True, True, "b")}
    assert consensus.choose_weights(tie, [2.0, 0.5]) == {"0": 0.5, "1": 0.5}  # ties: the smaller weight


def test_consensus_writes_run_py_results_with_the_weights(tmp_path, capsys):
    _fold_scores(tmp_path, "0", "x", [0.9, 0.1, 0.40, 0.45])
    _fold_scores(tmp_path, "1", "x", [0.9, 0.1, 0.40, 0.45])
    peers = _peers(tmp_path, [("a", "a_p1", 0.9), ("a", "a_p2", 0.1), ("b", "b_p1", 0.2), ("b", "b_p2", 0.8)])
    pd.read_csv(peers).assign(cnn_score_default2018=0.5).to_csv(peers, index=False)
    argv = ["xv", "x", "--work", str(tmp_path), "--peer-scores", str(peers), "--results", str(tmp_path)]
    assert consensus.main([*argv, "--n-boot", "10", "--weight", "0"]) == 0
    result = json.loads((tmp_path / "xv.json").read_text())
    assert result["docking_weights"] == {"0": 0.0, "1": 0.0} and result["folds"]["0"]["model_top1"]["hits"] == 1
    assert result["folds"]["0"]["per_complex"]["a"]["model_top1"] == 1
    with pytest.raises(SystemExit):
        consensus.main([*argv, "--weights", "1,-2"])
    assert "finite weights >= 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        consensus.main(["x", "x", "--work", str(tmp_path)])  # its JSON would replace the member's


def test_seed_mean_averages_per_complex_hits_and_transfer_counts_the_mean(tmp_path):

    def results(name, a, b):
        table = {"a": _hits(a, 1), "b": _hits(b, 0)}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"folds": {"0": {"per_complex": table}}, "pooled": {"model_auc": 0.5}}))
        return path

    paths = [results("s0", 1, 0), results("s1", 1, 1), results("s2", 0, 1)]
    assert seed_mean.main(["mean", *map(str, paths), "--results", str(tmp_path)]) == 0
    mean = json.loads((tmp_path / "mean.json").read_text())
    assert mean["folds"]["0"]["per_complex"]["a"]["model_top1"] == pytest.approx(2 / 3)
    assert mean["folds"]["0"]["per_complex"]["b"]["docking_top1"] == 0
    part = transfer.part_summary(
        transfer.per_complex(tmp_path / "mean.json"), transfer.per_complex(paths[0]), ["a", "b"], 20
    )
    assert part["model_top1"] == 1.3 and part["recipe_top1"] == 1  # 4/3 hits: the mean seed's count
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"folds": {"0": {"per_complex": {"a": _hits(1, 1)}}}, "pooled": {"model_auc": 0.5}}))
    with pytest.raises(SystemExit, match="same complexes in fold 0"):
        seed_mean.main(["bad", str(paths[0]), str(other), "--results", str(tmp_path)])
