"""What `pecan score` ranks as one ligand: by default each molecule of a poses file (title and heavy-atom
formula), so a screen in one SDF is never ranked as one ligand; a group the user forces that mixes molecules is
warned about; a ligand name met in two files of a directory is made unique across the directory."""

import io
import logging
from pathlib import Path

import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")

from rdkit import Chem, RDLogger

from pecan.engine.state import CheckpointState
from pecan.scoring.inputs import PosesFile, iter_groups
from pecan.scoring.molecules import formula, run_starts, text_formula
from pecan.scoring.poses import ScoreRequest, manifest_rows, poses_files

RDLogger.DisableLog("rdApp.*")

SMILES = {"phenol": "c1ccccc1O", "ethanol": "CCO", "propanol": "CCCO", "methoxyethane": "COC"}


def record(smiles: str, title: str, v3000: bool = False) -> bytes:
    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    mol.SetProp("_Name", title)
    buffer = io.StringIO()
    with Chem.SDWriter(buffer) as writer:
        writer.SetForceV3000(v3000)
        writer.write(mol)
    return buffer.getvalue().encode()


def sdf(path: Path, entries: list[tuple[str, str]]) -> Path:
    path.write_bytes(b"".join(record(SMILES[name], title) for name, title in entries))
    return path


def groups(path: Path, group_by: str = "molecule", name: str = "file") -> list[tuple[str, int]]:
    item = PosesFile(path, name, Path("rec.pdb"))
    return [(g.complex_id, len(g.records)) for g in iter_groups([item], group_by)]


@pytest.mark.parametrize("v3000", [False, True])
@pytest.mark.parametrize("smiles", sorted(SMILES.values()) + ["[Zn+2].[Cl-].[Cl-]", "C[C@H](N)C(=O)O"])
def test_the_formula_read_from_the_text_is_that_of_rdkits_atoms(smiles, v3000):
    text = record(smiles, "t", v3000)
    mol = Chem.MolFromMolBlock(text.decode(), removeHs=False)
    assert text_formula(text) == formula(atom.GetSymbol() for atom in mol.GetAtoms())
    assert "H" not in text_formula(text).replace("Hg", "")


def test_formulas_name_the_heavy_atoms_and_their_counts():
    assert text_formula(record("c1ccccc1O", "t")) == "C6O"
    assert text_formula(record("CCO", "t", v3000=True)) == "C2O"
    assert text_formula(record("[Zn+2].[Cl-].[Cl-]", "t")) == "Cl2Zn"
    assert text_formula(b"garbage\n$$$$\n") == ""


def test_run_rules():
    # titles naming ligands: a title change or a formula change starts a ligand; an empty title joins
    assert run_starts(["a", "a", "", "b", "b"], ["X", "X", "X", "X", "X"]) == [0, 3]
    assert run_starts(["a", "a", "a", "a"], ["X", "X", "Y", "Y"]) == [0, 2]
    # titles naming poses (never repeated from one record to the next): only the formula splits
    assert run_starts(["x_pose1", "x_pose2", "y_pose1", "y_pose2"], ["X", "X", "Y", "Y"]) == [0, 2]
    assert run_starts(["x_pose1", "x_pose2", "x_pose3"], ["X", "X", "X"]) == [0]
    assert run_starts(["LIG", "LIG", "b", "c", "d", "e"], ["X"] * 6) == [0]  # one repeat among pose names
    # a record whose formula cannot be read (RDKit cannot parse it either) stays with its neighbours
    assert run_starts(["a", "a", "a"], ["X", "", "X"]) == [0]


def test_a_screen_in_one_sdf_is_ranked_ligand_by_ligand_by_default(tmp_path):
    path = sdf(tmp_path / "screen.sdf", [("phenol", "lig1")] * 3 + [("ethanol", "lig2")] * 2 + [("propanol", "lig3")])
    assert groups(path) == [("lig1", 3), ("lig2", 2), ("lig3", 1)]


def test_isomers_with_their_own_names_are_two_ligands(tmp_path):
    path = sdf(tmp_path / "iso.sdf", [("propanol", "a")] * 2 + [("methoxyethane", "b")] * 2)
    assert groups(path) == [("a", 2), ("b", 2)]


def test_one_ligands_poses_stay_one_ligand_named_by_the_file(tmp_path):
    """Poses titled one by one (as `pecan redock` writes them), or all alike, or untitled: one ligand, named
    as --group-by file names it."""
    for titles in (["x_pose1", "x_pose2", "x_pose3"], ["lig"] * 3, [""] * 3):
        path = sdf(tmp_path / "one.sdf", [("phenol", t) for t in titles])
        assert groups(path, name="vina") == [("vina", 3)]


def test_poses_titled_one_by_one_are_split_where_the_molecule_changes(tmp_path):
    path = sdf(tmp_path / "two.sdf", [("phenol", f"x_pose{k}") for k in (1, 2)] + [("ethanol", "y_pose1")])
    assert groups(path) == [("x_pose1", 2), ("y_pose1", 1)]


def test_a_forced_group_that_mixes_molecules_is_warned_about(tmp_path, caplog):
    path = sdf(tmp_path / "mixed.sdf", [("phenol", "lig")] * 2 + [("ethanol", "lig")] * 2)
    with caplog.at_level(logging.WARNING, logger="pecan"):
        assert groups(path, "file") == [("file", 4)]
    assert "ligand file" in caplog.text and "mixes 2 molecules (heavy-atom formulas C2O, C6O)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="pecan"):
        assert groups(path, "name") == [("lig", 4)]
        assert "mixes 2 molecules" in caplog.text
        caplog.clear()
        assert groups(path) == [("lig", 2), ("lig#2", 2)]
    assert "mixes 2 molecules" not in caplog.text


@pytest.mark.parametrize("group_by", ["molecule", "name"])
def test_a_name_in_two_files_of_a_directory_is_made_unique_across_the_directory(tmp_path, group_by):
    directory = tmp_path / "docked"
    directory.mkdir()
    sdf(directory / "a.sdf", [("phenol", "lig")] * 2 + [("ethanol", "other")])
    sdf(directory / "b.sdf", [("phenol", "lig")] * 2 + [("propanol", "third")])
    request = ScoreRequest(checkpoint="c.pt", out=str(tmp_path / "o.sdf"), receptor="rec.pdb", poses=str(directory))
    files = poses_files(request, manifest_rows(request, CheckpointState(model={})))
    names = [g.complex_id for g in iter_groups(files, group_by)]
    assert names == ["lig", "other", "lig#2", "third"]


def test_two_files_with_one_stem_are_two_ligands(tmp_path):
    directory = tmp_path / "docked"
    directory.mkdir()
    sdf(directory / "x.sdf", [("phenol", "p1"), ("phenol", "p2")])
    sdf(directory / "x.sd", [("phenol", "p1"), ("phenol", "p2")])
    request = ScoreRequest(checkpoint="c.pt", out=str(tmp_path / "o.sdf"), receptor="rec.pdb", poses=str(directory))
    files = poses_files(request, manifest_rows(request, CheckpointState(model={})))
    for group_by in ("molecule", "file"):
        assert [g.complex_id for g in iter_groups(files, group_by)] == ["x", "x#2"]


@pytest.mark.parametrize("keep", [2, 4096])
def test_a_file_too_long_to_keep_is_read_again_with_the_same_groups(tmp_path, monkeypatch, keep):
    from pecan.scoring import inputs, molecules

    monkeypatch.setattr(molecules, "KEEP_RECORDS", keep)
    reads = []
    iter_records = inputs.iter_records
    monkeypatch.setattr(inputs, "iter_records", lambda path, *rest: reads.append(path) or iter_records(path, *rest))
    path = sdf(tmp_path / "screen.sdf", [("phenol", "a")] * 3 + [("ethanol", "b")] * 2 + [("propanol", "c")] * 2)
    item = PosesFile(path, "file", Path("rec.pdb"))
    found = [
        (g.complex_id, [Chem.MolToSmiles(Chem.RemoveHs(m)) for m in g.records]) for g in iter_groups([item], "molecule")
    ]
    assert found == [("a", ["Oc1ccccc1"] * 3), ("b", ["CCO"] * 2), ("c", ["CCCO"] * 2)]
    assert len(reads) == (2 if keep == 2 else 1)


@pytest.mark.slow
def test_the_shipped_model_ranks_each_ligand_of_a_screen_as_it_ranks_it_alone(tmp_path):
    """The shipped model's consensus standardises the model's logit and the docking score over a ligand's poses:
    ranking two ligands as one changes the second's consensus; the default grouping gives every ligand the
    consensus (and the scores) it gets alone."""
    pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")
    from pecan.commands import score as score_command
    from pecan.convert.examples import prolif_data, vina_poses_with_scores
    from pecan.scoring.scores_csv import read_scores

    mols = list(Chem.SDMolSupplier(str(vina_poses_with_scores(tmp_path / "vina.sdf")), removeHs=False))
    for k, mol in enumerate(mols):
        mol.SetProp("_Name", "ligA" if k < 5 else "ligB")
    with Chem.SDWriter(str(tmp_path / "screen.sdf")) as writer:
        for mol in mols:
            writer.write(mol)
    with Chem.SDWriter(str(tmp_path / "ligB.sdf")) as writer:
        for mol in mols[5:]:
            writer.write(mol)

    def scored(poses, *extra):
        out = tmp_path / f"{poses}_{len(extra)}_scored.sdf"
        argv = ["--receptor", str(prolif_data() / "vina" / "rec.pdb"), "--poses", str(tmp_path / poses)]
        argv += ["--out", str(out), "--score-property", "vina_score", "--device", "cpu", "--progress", "off"]
        assert score_command.main([*argv, *extra]) == 0
        return read_scores(out.with_suffix(".csv"))

    screen, alone, as_one = scored("screen.sdf"), scored("ligB.sdf"), scored("screen.sdf", "--group-by", "file")
    assert list(dict.fromkeys(screen["complex_id"])) == ["ligA", "ligB"]
    ligand_b = screen[screen["complex_id"] == "ligB"].reset_index(drop=True)
    assert ligand_b["pose_id"].tolist() == alone["pose_id"].tolist()
    assert ligand_b["pecan_score"].to_numpy() == pytest.approx(alone["pecan_score"].to_numpy(), abs=1e-6)
    assert ligand_b["pecan_consensus"].to_numpy() == pytest.approx(alone["pecan_consensus"].to_numpy(), abs=1e-6)
    as_one_b = as_one.set_index("pose_id").loc[[f"screen_pose{k}" for k in range(6, 10)], "pecan_consensus"]
    assert abs(as_one_b.max() - ligand_b["pecan_consensus"].max()) > 0.01  # ranked as one ligand, it changes
