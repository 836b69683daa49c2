"""Peer baseline (studies/peers): GNINA CNN scoring of docked poses and its evaluation."""

import ast
import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from studies.peers import evaluate
from studies.peers import gnina_parts as parts_lib

ROOT = Path(__file__).resolve().parents[2]
PEERS = ROOT / "studies" / "peers"
GNINA_PYTHON = PEERS / ".venv-gnina" / "bin" / "python"
REALDOCK_MANIFEST = ROOT / "studies" / "realdock" / "docked" / "manifest.csv"
GNINA_SCORE = ["-m", "studies.peers.gnina_score"]  # run from the repository root: pecan is not installed there


needs_gnina = pytest.mark.skipif(
    not GNINA_PYTHON.exists(),
    reason="GNINA peer environment absent: run studies/peers/setup.sh to create studies/peers/.venv-gnina",
)
COLUMNS = ["complex_id", "record", "pose_id", "poses_sha256", "cnn_score_default2018", "cnn_affinity_default2018"]


def _rows(complex_id, digest, scores):
    return [
        {
            "complex_id": complex_id,
            "record": k,
            "pose_id": f"{complex_id}_{k}",
            "poses_sha256": digest,
            "cnn_score_default2018": f"{s:.6f}",
            "cnn_affinity_default2018": "5.000000",
        }
        for k, s in enumerate(scores)
    ]


def test_parts_round_trip_and_a_changed_poses_file(tmp_path):
    parts = parts_lib.parts_dir(tmp_path / "scores.csv")
    assert parts == tmp_path / "scores.csv.parts"
    parts.mkdir()
    tag = parts_lib.set_tag(["default2018"], 3)
    assert tag == "default2018.limit3"
    parts_lib.write_part(parts, "a", tag, COLUMNS, _rows("a", "d1", [0.9, 0.2]), {"poses": 2, "seconds": 1.0})
    rows, timing, note = parts_lib.read_part(parts, "a", tag, "d1")
    assert [r["cnn_score_default2018"] for r in rows] == ["0.900000", "0.200000"] and timing["poses"] == 2
    assert note == ""
    # the poses were redocked since: the part scored other poses and is not taken
    rows, timing, note = parts_lib.read_part(parts, "a", tag, "d2")
    assert rows is None and timing is None and "another version" in note
    # another tag (other score sets or limit) is another part
    assert parts_lib.read_part(parts, "a", parts_lib.set_tag(["default2018"], None), "d1")[2] == "not scored"
    # a part without its timing file (a rank killed between the two writes) is not finished
    parts_lib.part_paths(parts, "a", tag)[1].unlink()
    assert parts_lib.read_part(parts, "a", tag, "d1")[0] is None
    assert not list(parts.glob(".*.tmp"))  # atomic writes leave no temp behind


def test_join_keeps_plan_order_and_names_what_is_missing(tmp_path):
    parts = tmp_path / "p"
    parts.mkdir()
    tag = "default2018"
    parts_lib.write_part(parts, "b", tag, COLUMNS, _rows("b", "db", [0.1]), {"poses": 1, "seconds": 0.5})
    parts_lib.write_part(parts, "a", tag, COLUMNS, _rows("a", "da", [0.7, 0.3]), {"poses": 2, "seconds": 1.5})
    parts_lib.write_failure(parts, "c", tag, "RuntimeError: molgrid read 0 examples")
    rows, timings, failures = parts_lib.join([("a", "da"), ("b", "db"), ("c", "dc"), ("d", "dd")], parts, tag)
    assert [(r["complex_id"], r["record"]) for r in rows] == [("a", "0"), ("a", "1"), ("b", "0")]
    assert set(timings) == {"a", "b"}
    assert failures == {"c": "RuntimeError: molgrid read 0 examples", "d": "not scored"}
    # scoring it later clears the recorded failure
    parts_lib.write_part(parts, "c", tag, COLUMNS, _rows("c", "dc", [0.5]), {"poses": 1, "seconds": 0.1})
    assert parts_lib.failure_reason(parts, "c", tag) == ""
    out = tmp_path / "scores.csv"
    parts_lib.write_scores(out, COLUMNS, rows)
    assert list(csv.DictReader(out.read_text().splitlines())) == [{k: str(v) for k, v in r.items()} for r in rows]


def test_plan_key_changes_with_the_complexes_their_order_and_the_tag():
    key = parts_lib.plan_key(["a", "b"], "default")
    assert key == parts_lib.plan_key(["a", "b"], "default")
    assert len({key, parts_lib.plan_key(["b", "a"], "default"), parts_lib.plan_key(["a", "b"], "default2018")}) == 3


GNINA_ENVIRONMENT = {"molgrid", "torch", "gninatorch", "numpy", "hostlist"}  # what setup.sh installs


def _gnina_score_imports() -> tuple[set[str], list[str]]:
    """gnina_score.py's top-level imports: the third-party top names, and its pecan/studies import statements."""
    source = (PEERS / "gnina_score.py").read_text(encoding="utf-8")
    third_party, ours = set(), []
    for node in ast.parse(source).body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        names += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        for name in names:
            top = name.split(".")[0]
            if top in ("pecan", "studies"):
                ours.append(ast.get_source_segment(source, node))
            elif top not in sys.stdlib_module_names and top != "__future__":
                third_party.add(top)
    return third_party, ours


def test_gnina_score_imports_only_what_the_gnina_environment_has():
    """The GNINA environment (numpy<2) has no pecan install and none of pecan's dependencies: gnina_score runs
    from the repository root, so its pecan and studies imports must pull in nothing but the standard library
    and python-hostlist."""
    third_party, ours = _gnina_score_imports()
    assert third_party <= GNINA_ENVIRONMENT, third_party - GNINA_ENVIRONMENT
    assert "from studies.peers import gnina_parts" in ours and any(line.startswith("from pecan.") for line in ours)
    probe = "\n".join(["import sys", *ours, "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"])
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = {m for m in done.stdout.split() if m not in sys.stdlib_module_names and not m.startswith("_")}
    assert loaded <= {"pecan", "studies", "hostlist"}, loaded


@pytest.mark.slow
@needs_gnina
def test_gnina_score_on_three_poses(tmp_path):
    out = tmp_path / "scores.csv"
    # 1uw6 of the realdock benchmark, its poses file copied (the test changes it below)
    from studies import archive

    study = tmp_path / "realdock"  # 1uw6's receptor and poses from the study's digest-checked archives
    for name, folders in archive.ARCHIVES["realdock"].items():
        archive.extract(archive.archive_path("realdock", name), study, folders, keep=lambda m: "1uw6" in m)
    source = pd.read_csv(REALDOCK_MANIFEST, dtype=str, keep_default_na=False)
    row = source[source["complex_id"] == "1uw6"].copy()
    poses = tmp_path / "1uw6.sdf"
    poses.write_text((study / "docked" / row["poses"].iloc[0]).read_text())
    row["receptor"] = str((study / "docked" / row["receptor"].iloc[0]).resolve())
    row["poses"] = str(poses)
    manifest = tmp_path / "manifest.csv"
    row[["complex_id", "receptor", "poses"]].to_csv(manifest, index=False)
    command = [str(GNINA_PYTHON), *GNINA_SCORE, "--manifest", str(manifest)]
    command += ["--out", str(out), "--complexes", "1uw6", "--limit", "3", "--threads", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[1/1] 1uw6: 3 poses" in done.stdout

    with open(out, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == [
        "complex_id",
        "record",
        "pose_id",
        "poses_sha256",
        "cnn_score_default",
        "cnn_affinity_default",
        "cnn_variance_default",
        "cnn_score_default2018",
        "cnn_affinity_default2018",
    ]
    assert [row["record"] for row in rows] == ["0", "1", "2"]
    assert [row["complex_id"] for row in rows] == ["1uw6"] * 3
    assert {row["poses_sha256"] for row in rows} == {hashlib.sha256(poses.read_bytes()).hexdigest()[:16]}
    titles = poses.read_text().split("$$$$\n")
    assert [row["pose_id"] for row in rows] == [text.splitlines()[0].strip() for text in titles[:3]]
    for row in rows:
        for column in ("cnn_score_default", "cnn_score_default2018"):
            assert 0.0 <= float(row[column]) <= 1.0
        assert np.isfinite(float(row["cnn_affinity_default"])) and float(row["cnn_variance_default"]) >= 0.0

    timing = json.loads(out.with_suffix(".timing.json").read_text())
    assert timing["poses"] == 3 and timing["seconds_per_pose"] > 0
    assert timing["models"]["default"] == [
        "dense",
        "general_default2018_3",
        "dense_3",
        "crossdock_default2018",
        "redock_default2018_2",
    ]

    # A second run keeps the finished complex instead of scoring it again.
    again = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert again.returncode == 0 and "3 poses kept" in again.stdout
    assert list(csv.DictReader(out.read_text().splitlines())) == rows

    # Poses redocked since (the file differs): the kept part scored other poses, so the complex is scored again.
    poses.write_text("$$$$\n".join(titles[:4]) + "$$$$\n")
    third = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert third.returncode == 0, third.stdout + third.stderr
    assert "changed since" in third.stdout and "[1/1] 1uw6: 3 poses in" in third.stdout
    rescored = list(csv.DictReader(out.read_text().splitlines()))
    assert {row["poses_sha256"] for row in rescored} == {hashlib.sha256(poses.read_bytes()).hexdigest()[:16]}


@pytest.mark.slow
@needs_gnina
def test_gnina_score_on_two_ranks_writes_what_one_process_writes(tmp_path):
    from studies import archive

    study = tmp_path / "realdock"
    wanted = ("1ac8", "1uw6", "1p2y")
    for name, folders in archive.ARCHIVES["realdock"].items():
        archive.extract(
            archive.archive_path("realdock", name), study, folders, keep=lambda m: any(c in m for c in wanted)
        )
    source = pd.read_csv(REALDOCK_MANIFEST, dtype=str, keep_default_na=False)
    rows = source[source["complex_id"].isin(wanted)].copy()
    rows["receptor"] = [str((study / "docked" / r).resolve()) for r in rows["receptor"]]
    rows["poses"] = [str((study / "docked" / r).resolve()) for r in rows["poses"]]
    manifest = tmp_path / "manifest.csv"
    rows[["complex_id", "receptor", "poses"]].to_csv(manifest, index=False)
    options = ["--manifest", str(manifest), "--limit", "2", "--models", "default2018", "--threads", "1"]
    one = tmp_path / "one.csv"
    done = subprocess.run(
        [str(GNINA_PYTHON), *GNINA_SCORE, *options, "--out", str(one)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    two = tmp_path / "two.csv"
    torchrun = GNINA_PYTHON.parent / "torchrun"
    launched = subprocess.run(
        [
            str(torchrun),
            "--standalone",
            "--nproc-per-node",
            "2",
            *GNINA_SCORE,
            *options,
            "--out",
            str(two),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert launched.returncode == 0, launched.stdout + launched.stderr
    assert "rank 0 of 2 (torchrun): 2 of 3 complexes" in launched.stdout
    assert "rank 1 of 2 (torchrun): 1 of 3 complexes" in launched.stdout
    # the first rank to finish leaves the join to the other (both join, to the same bytes, only when they finish
    # at the same moment)
    joined = launched.stdout.count("wrote 6 rows to")
    assert joined == 2 or (joined == 1 and "is written by the last rank to finish" in launched.stdout)
    assert two.read_text() == one.read_text()  # same rows, same order, same scores
    assert sorted(p.name for p in (tmp_path / "two.csv.parts" / ".ranks").iterdir()) == [
        "rank0-of-2.json",
        "rank1-of-2.json",
    ]
    timing = json.loads(two.with_suffix(".timing.json").read_text())
    assert timing["complexes"] == 3 and timing["poses"] == 6 and timing["failures"] == {}


# complex a: the CNN's best pose (0.9) is near-native, the docking score's best (-9) is not.
# complex b: both rank a wrong pose first; the near-native pose is second for both.
# complex c: no near-native pose at all (a failure for every scorer).
TABLE = pd.DataFrame(
    {
        "complex_id": ["a", "a", "a", "b", "b", "b", "b", "c", "c"],
        "record": [0, 1, 2, 0, 1, 2, 3, 0, 1],
        "cnn_score_default": [0.9, 0.1, 0.5, 0.8, 0.7, 0.2, 0.1, 0.3, 0.4],
        "docking_score": [-7.0, -9.0, -8.0, -10.0, -9.5, -6.0, -5.0, -8.0, -7.0],
        "label": [1, 0, 0, 0, 1, 0, 0, 0, 0],
    }
)


def test_top_k_and_auc_on_a_hand_built_table():
    summary = evaluate.summarize(TABLE.sample(frac=1.0, random_state=0))  # row order must not matter
    assert summary["complexes"] == 3 and summary["poses"] == 9
    assert summary["near_native_poses"] == 2 and summary["ceiling"] == 2
    cnn, docking = summary["scorers"]["cnn_score_default"], summary["scorers"]["docking_score"]
    assert (cnn["top1"], cnn["top3"]) == (1, 2)
    assert (docking["top1"], docking["top3"]) == (0, 2)
    # near-native 0.9 and 0.7 against 0.1 0.5 0.8 0.2 0.1 0.3 0.4: 7 + 6 of 14 pairs won
    assert cnn["auc"] == pytest.approx(13 / 14)
    # docking score, lower is better: -9.5 and -7.0 against -9 -8 -10 -6 -5 -8 -7: 6 + 2.5 (a tie at -7)
    assert docking["auc"] == pytest.approx(8.5 / 14)
    assert "cnn_score_default2018" not in summary["scorers"]  # absent columns are skipped
    assert "1/3" in evaluate.format_summary(summary)


def test_ties_keep_file_order_and_auc_needs_both_classes():
    tied = pd.DataFrame({"complex_id": ["a", "a"], "record": [0, 1], "cnn_score_default": [0.5, 0.5], "label": [0, 1]})
    assert evaluate.top_k_hits(tied, "cnn_score_default", 1).tolist() == [0]
    assert evaluate.top_k_hits(tied.iloc[::-1], "cnn_score_default", 1).tolist() == [1]
    assert np.isnan(evaluate.roc_auc([0.1, 0.2], [1, 1]))


def test_labels_from_a_tiny_manifest(tmp_path):
    rdkit = pytest.importorskip("rdkit")
    from rdkit import Chem
    from rdkit.Chem import AllChem

    del rdkit
    crystal = Chem.AddHs(Chem.MolFromSmiles("OC(=O)c1ccccc1"))
    AllChem.EmbedMolecule(crystal, randomSeed=7)
    near, far = Chem.Mol(crystal), Chem.Mol(crystal)
    for mol, shift in ((near, 0.5), (far, 3.0)):
        conformer = mol.GetConformer()
        for index in range(mol.GetNumAtoms()):
            position = conformer.GetAtomPosition(index)
            conformer.SetAtomPosition(index, (position.x + shift, position.y, position.z))
    writer = Chem.SDWriter(str(tmp_path / "poses.sdf"))
    for name, mol, score in (("far", far, -9.0), ("near", near, -8.0)):
        mol.SetProp("_Name", name)
        mol.SetProp("docking_score", str(score))
        writer.write(mol)
    writer.close()
    Chem.MolToMolFile(Chem.RemoveHs(crystal), str(tmp_path / "crystal.sdf"))
    manifest = tmp_path / "manifest.csv"
    manifest.write_text(
        "complex_id,receptor,poses,crystal_ligand,score_property\nx,rec.pdb,poses.sdf,crystal.sdf,docking_score\n"
    )

    labels = evaluate.pose_labels(manifest)
    assert labels["pose_id"].tolist() == ["far", "near"]
    assert labels["rmsd"].to_numpy() == pytest.approx([3.0, 0.5], abs=1e-6)
    assert labels["label"].tolist() == [0, 1]
    assert labels["docking_score"].tolist() == [-9.0, -8.0]

    scores = pd.DataFrame({"complex_id": ["x", "x"], "record": [0, 1], "pose": ["far", "near"]})
    scores["cnn_score_default"] = [0.2, 0.7]
    summary = evaluate.summarize(evaluate.merge(labels, scores))
    assert summary["scorers"]["cnn_score_default"]["top1"] == 1
    assert summary["scorers"]["docking_score"]["top1"] == 0
