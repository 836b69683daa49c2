"""`pecan score` flags poses that cannot exist (a ligand heavy atom inside the receptor): a column of the scores
CSV, an SD property, a count in the summary, and a rank after every pose of its ligand without a clash."""

import json

import numpy as np
import pytest

from pecan.data import layout
from pecan.scoring.clashes import CLASH_DISTANCE, METAL_COLUMN, closest_contact
from pecan.scoring.output import ranked


def rows(ligand, receptor, receptor_metal=()):
    """Atom rows of a pose: ``ligand`` and ``receptor`` coordinates, the receptor atoms in ``receptor_metal``
    flagged as metals."""
    out = np.zeros((len(ligand) + len(receptor), layout.N_COLUMNS), dtype=np.float32)
    out[:, layout.COORD_COLUMNS] = np.array([*ligand, *receptor], dtype=np.float32)
    out[: len(ligand), layout.MOLCODE_COLUMN] = 1.0
    out[len(ligand) :, layout.MOLCODE_COLUMN] = -1.0
    for k in receptor_metal:
        out[len(ligand) + k, METAL_COLUMN] = 1.0
    return out


@pytest.mark.parametrize(
    "distance, metal, clash",
    [(0.25, False, True), (1.9, False, True), (2.3, False, False), (1.7, True, False), (1.2, True, True)],
)
def test_a_clash_is_a_heavy_atom_closer_than_any_real_contact(distance, metal, clash):
    pose = rows([(0, 0, 0), (1.5, 0, 0)], [(-distance, 0, 0), (9, 9, 9)], receptor_metal=(0,) if metal else ())
    found, flagged = closest_contact(pose)
    assert found == pytest.approx(distance, abs=1e-6) and flagged is clash


def test_clashing_poses_rank_after_every_pose_without_one():
    logits = np.array([-1.0, 3.0, 0.0, 2.0])
    order, score, rank = ranked(logits, np.array([0, 1, 0, 1]))
    assert order.tolist() == [2, 0, 1, 3] and rank.tolist() == [2, 3, 1, 4]
    assert score[1] == pytest.approx(1 / (1 + np.exp(-3.0)))  # the score itself is reported unchanged


@pytest.fixture(scope="module")
def pushed_in(tmp_path_factory):
    """ProLIF's 9 Vina poses and a tenth, the first pose moved until an atom lies 0.25 A from a receptor atom."""
    pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
    pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")
    from rdkit import Chem
    from rdkit.Geometry import Point3D

    from pecan.convert.examples import prolif_data, vina_poses_with_scores

    tmp = tmp_path_factory.mktemp("clashes")
    receptor = prolif_data() / "vina" / "rec.pdb"
    mols = list(Chem.SDMolSupplier(str(vina_poses_with_scores(tmp / "vina.sdf")), removeHs=False))
    rec = Chem.MolFromPDBFile(str(receptor), removeHs=False)
    heavy_rec = np.array([p for a, p in zip(rec.GetAtoms(), rec.GetConformer().GetPositions()) if a.GetAtomicNum() > 1])
    moved = Chem.Mol(mols[0])
    xyz = moved.GetConformer().GetPositions()
    centre = xyz.mean(0)
    target = heavy_rec[np.argsort(np.linalg.norm(heavy_rec - centre, axis=1))[40]]  # inside the protein, near
    shift = target + np.array([0.25, 0.0, 0.0]) - xyz[0]
    for k, point in enumerate(xyz + shift):
        moved.GetConformer().SetAtomPosition(k, Point3D(*point))
    path = tmp / "poses.sdf"
    with Chem.SDWriter(str(path)) as writer:
        for mol in [*mols, moved]:
            writer.write(mol)
    return tmp, receptor, path


@pytest.mark.slow
def test_a_pose_pushed_into_the_receptor_is_flagged_and_ranked_last(pushed_in, capsys):
    from rdkit import Chem

    from pecan.commands import score as score_command
    from pecan.scoring.scores_csv import read_scores

    tmp, receptor, poses = pushed_in
    out = tmp / "scored.sdf"
    argv = ["--receptor", str(receptor), "--poses", str(poses), "--out", str(out), "--score-property", "vina_score"]
    assert score_command.main([*argv, "--device", "cpu", "--progress", "off"]) == 0  # the shipped model
    scores = read_scores(tmp / "scored.csv").set_index("pose_id")
    clashing = scores[scores["pecan_clash"] == 1]
    assert clashing.index.tolist() == ["poses_pose10"]  # the 9 real poses are clean
    assert (scores.drop("poses_pose10")["receptor_distance"] > CLASH_DISTANCE).all()
    assert clashing["receptor_distance"].iloc[0] == pytest.approx(0.25, abs=0.01)
    assert clashing["pecan_rank"].iloc[0] == 10  # last, whatever its score
    mols = list(Chem.SDMolSupplier(str(out), removeHs=False))
    assert [m.GetIntProp("pecan_clash") for m in mols] == [0] * 9 + [1]
    assert mols[-1].GetProp("receptor_distance") == "0.25"
    assert json.loads((tmp / "scored.metrics.json").read_text())["clashes"] == 1
    assert "| 1 with a clash (ranked last)" in capsys.readouterr().out


def test_figures_rank_a_clashing_pose_last_and_never_call_it_near_native():
    import pandas as pd

    from pecan.scoring.figures import metrics, metrics_line

    scores = pd.DataFrame(
        {
            "complex_id": ["c", "c", "c"],
            "pose_id": ["a", "b", "d"],
            "split": ["test"] * 3,
            "pecan_score": [0.9, 0.6, 0.2],
            "logit": [2.2, 0.4, -1.4],
            "docking_score": [-9.0, -8.0, -7.0],
            "label": [1, 0, 0],
            "pecan_clash": [1, 0, 0],
        }
    )
    values = metrics(scores)
    assert values["clashes"] == 1 and values["top1"] == 0.0 and values["first_native_rank"] == {"c": 3}
    assert values["accuracy"] == pytest.approx(1 / 3)  # a (near-native, clashing) and b (0.6) are wrong
    assert metrics_line(values).endswith("| 1 with a clash (ranked last)")
    assert "clashes" not in metrics(scores.drop(columns="pecan_clash"))  # pecan predict: no clash check


ELEMENT_SLOT = {"B": 0, "C": 1, "N": 2, "O": 3, "P": 4, "S": 5, "Se": 6, "Cl": 7, "Br": 7, "I": 7, "F": 7, "Zn": 8}


def two_atoms(ligand_element: str, receptor_element: str, distance: float) -> np.ndarray:
    """One ligand atom and one receptor atom ``distance`` apart, each with its element bit set as the
    converter sets it (B, C, N, O, P, S, Se, halogen, metal)."""
    pose = rows([(0, 0, 0)], [(distance, 0, 0)])
    for row, element in enumerate((ligand_element, receptor_element)):
        pose[row, layout.FEATURE_COLUMNS.start + ELEMENT_SLOT[element]] = 1.0
    return pose


@pytest.mark.parametrize(
    "ligand, receptor, distance, clash",
    [
        ("N", "Zn", 1.9, False),  # coordination
        ("O", "Zn", 2.0, False),
        ("S", "Zn", 1.6, False),  # short for thiolate-zinc, yet above the metal limit
        ("N", "Zn", 1.4, True),  # a covalent-bond length to a metal: no real contact
        ("Zn", "O", 1.4, True),  # a metal on the ligand side counts the same
        ("Cl", "C", 1.7, True),  # a halogen 1.7 A from a carbon
        ("Br", "O", 1.95, True),
        ("I", "C", 2.05, False),
        ("O", "O", 1.9, True),  # shorter than the shortest hydrogen bond
        ("O", "N", 2.5, False),  # a hydrogen bond
        ("C", "C", 1.99, True),
        ("C", "S", 2.0, False),  # at the limit: not closer than it
    ],
)
def test_the_clash_flag_per_element_class(ligand, receptor, distance, clash):
    found, flagged = closest_contact(two_atoms(ligand, receptor, distance))
    assert found == pytest.approx(distance, abs=1e-6)
    assert flagged is clash, (ligand, receptor, distance)
