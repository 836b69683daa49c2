"""`pecan score` on the inputs a chemist brings: plain docking output without a crystal ligand, pose titles
and complex ids that look like numbers or missing values, duplicate titles."""

import json

import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from rdkit import Chem

from pecan.commands import score as score_command
from pecan.convert.examples import prolif_data, vina_poses_with_scores


@pytest.fixture(scope="module")
def vina(trained_run, tmp_path_factory):
    """The session's checkpoint, ProLIF's Vina receptor and crystal, and its 9 poses with their scores."""
    tmp = tmp_path_factory.mktemp("score_inputs")
    data = prolif_data() / "vina"
    return tmp, trained_run.checkpoint, data / "rec.pdb", data / "lig.pdb", vina_poses_with_scores(tmp / "vina.sdf")


def titled(source, out, titles):
    """A copy of ``source`` whose records carry ``titles``."""
    writer = Chem.SDWriter(str(out))
    for mol, title in zip(Chem.SDMolSupplier(str(source), removeHs=False), titles):
        mol.SetProp("_Name", title)
        writer.write(mol)
    writer.close()
    return out


def score(vina, out, *extra, poses=None, crystal=True):
    tmp, checkpoint, receptor, lig, scored = vina
    argv = [str(checkpoint), "--receptor", str(receptor), "--poses", str(poses or scored), "--out", str(out)]
    argv += ["--crystal", str(lig)] if crystal else []
    return score_command.main([*argv, "--score-property", "vina_score", "--device", "cpu", *extra])


def records(path):
    return list(Chem.SDMolSupplier(str(path), removeHs=False))


@pytest.mark.slow
def test_plain_docking_output_without_crystal_is_scored_and_ranked(vina):
    tmp = vina[0]
    out = tmp / "plain.sdf"
    assert score(vina, out, "--complex-id", "vina", crystal=False) == 0
    mols = records(out)
    assert len(mols) == 9
    assert [m.GetIntProp("pecan_rank") for m in mols] == list(range(1, 10))
    assert not any(m.HasProp("rmsd") or m.HasProp("label") for m in mols)
    table = pd.read_csv(tmp / "plain.csv")
    assert len(table) == 9 and table["label"].isna().all() and table["rmsd"].isna().all()
    assert table["docking_score"].notna().all()
    metrics = json.loads((tmp / "plain.metrics.json").read_text())
    assert metrics["labeled"] is False and "auc" not in metrics


TITLES = {
    "numbers": ["1", "2", "3", "4", "5", "6", "7", "8", "9"],
    "missing_values_and_spaces": ["NA", "None", "nan", "007", "1e10", " padded ", "a7", "a8", "a9"],
}


@pytest.mark.parametrize("case", sorted(TITLES))
@pytest.mark.slow
def test_pose_titles_stay_text(vina, case):
    tmp = vina[0]
    poses = titled(vina[4], tmp / f"{case}.sdf", TITLES[case])
    out = tmp / f"{case}_scored.sdf"
    assert score(vina, out, "--complex-id", "vina", poses=poses) == 0
    mols = records(out)
    assert sorted(m.GetProp("pecan_pose") for m in mols) == sorted(t.strip() for t in TITLES[case])
    assert all(m.GetProp("pecan_pose") == m.GetProp("_Name").strip() for m in mols)  # each score on its record
    table = pd.read_csv(tmp / f"{case}_scored.csv", dtype=str, keep_default_na=False)
    assert sorted(table["pose_id"]) == sorted(t.strip() for t in TITLES[case])


@pytest.mark.slow
def test_duplicate_titles_name_every_pose_by_its_record_number(vina):
    tmp = vina[0]
    poses = titled(vina[4], tmp / "dup.sdf", ["LIG", "LIG", "b", "c", "d", "e", "f", "g", "h"])
    assert score(vina, tmp / "dup_scored.sdf", "--complex-id", "vina", poses=poses) == 0
    mols = records(tmp / "dup_scored.sdf")
    assert sorted(m.GetProp("pecan_pose") for m in mols) == sorted(f"vina_pose{k}" for k in range(1, 10))
    assert mols[0].GetProp("_Name") in {"LIG", "b", "c", "d", "e", "f", "g", "h"}  # the title is kept


@pytest.mark.parametrize("complex_id, expected", [("1e10", "1e10"), (" 007 ", "007"), ("NA", "NA")])
@pytest.mark.slow
def test_complex_ids_stay_text(vina, complex_id, expected):
    tmp = vina[0]
    out = tmp / f"id_{expected}.sdf"
    assert score(vina, out, "--complex-id", complex_id) == 0
    mols = records(out)
    assert len(mols) == 9 and {m.GetProp("pecan_complex") for m in mols} == {expected}


@pytest.mark.slow
def test_manifest_id_with_spaces_is_scored(vina):
    tmp, _, receptor, lig, scored = vina
    manifest = tmp / "spaced_manifest.csv"
    pd.DataFrame(
        [{"complex_id": " vina ", "receptor": receptor, "poses": scored, "crystal_ligand": lig, "score_property": ""}]
    ).to_csv(manifest, index=False)
    out = tmp / "spaced.sdf"
    assert score_command.main([str(vina[1]), "--manifest", str(manifest), "--out", str(out), "--device", "cpu"]) == 0
    assert len(records(out)) == 9


def test_no_pose_converts_exits_1_with_the_reasons(vina, caplog):
    tmp, checkpoint, receptor = vina[:3]
    garbage = tmp / "garbage.sdf"
    garbage.write_text("not a molecule\n$$$$\n")
    argv = [str(checkpoint), "--receptor", str(receptor), "--poses", str(garbage), "--out", str(tmp / "none.sdf")]
    assert score_command.main([*argv, "--device", "cpu"]) == 1
    assert "no pose could be scored" in caplog.text and "not scored: ligand garbage" in caplog.text
    assert not (tmp / "none.sdf").exists()


@pytest.mark.slow
def test_convert_keeps_poses_without_a_crystal_unlabelled(vina):
    from pecan.convert.complexes import Options
    from pecan.convert.run import convert

    tmp, _, receptor, _, scored = vina
    manifest = tmp / "no_crystal_manifest.csv"
    pd.DataFrame([{"complex_id": "vina", "receptor": receptor, "poses": scored}]).to_csv(manifest, index=False)
    summary = convert(manifest, tmp / "no_crystal_shards", Options(), progress=False)
    index = pd.read_csv(summary["index"])
    assert len(index) == 9 and index["label"].isna().all() and index["rmsd"].isna().all()
