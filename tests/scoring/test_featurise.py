"""`pecan score`'s featurisation equals the converter's, array for array: pockets cut by residue arrays and
cached, ligand rows reused across one topology's poses, feature families matched by SMARTS."""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from rdkit import Chem

from pecan.convert import chemistry as chem
from pecan.convert.complexes import ComplexEntry, Options, convert_complex
from pecan.convert.examples import prolif_data, vina_poses_with_scores
from pecan.scoring.featurise import (
    GroupConverter,
    LigandFeaturiser,
    LigandGroup,
    PreparedReceptor,
    heavy_positions,
    near_atoms,
)


def assert_same_samples(fast, reference):
    assert [s.pose_id for s in fast.poses] == [s.pose_id for s in reference.poses]
    assert len(fast.poses) > 0
    for mine, theirs in zip(fast.poses, reference.poses):
        assert mine.data.dtype == theirs.data.dtype == np.float32
        np.testing.assert_array_equal(mine.data, theirs.data)
        np.testing.assert_array_equal(mine.vdw, theirs.vdw)
        assert mine.attrs.keys() == theirs.attrs.keys()
        for key, value in theirs.attrs.items():
            assert mine.attrs[key] == value or (np.isnan(value) and np.isnan(mine.attrs[key])), key
    assert fast.failures == reference.failures


@pytest.fixture(scope="module")
def vina(tmp_path_factory):
    poses = vina_poses_with_scores(tmp_path_factory.mktemp("vina") / "vina.sdf")
    return prolif_data() / "vina", poses


@pytest.mark.parametrize("with_crystal", [False, True])
def test_group_converter_equals_convert_complex_on_vina_poses(vina, with_crystal):
    data, poses = vina
    crystal = data / "lig.pdb" if with_crystal else None
    entry = ComplexEntry("vina", data / "rec.pdb", poses, crystal, score_property="vina_score")
    reference = convert_complex(entry, Options())
    records = list(Chem.SDMolSupplier(str(poses), removeHs=False))
    group = LigandGroup("vina", data / "rec.pdb", str(poses), records, crystal, "vina_score")
    converter = GroupConverter(Options())
    assert_same_samples(converter.convert(group), reference)
    assert converter.ligands.featurised == 1 and converter.ligands.reused == len(records) - 1
    assert any(s.attrs["hpbond"] > 0 for s in reference.poses)  # counts are compared, not just zeros
    # The same poses again: the pocket comes from the cache and the samples are unchanged.
    assert_same_samples(converter.convert(group), reference)
    assert converter.pockets.hits == 1 and converter.pockets.misses == 1


def test_group_converter_equals_convert_complex_on_a_pose_without_hydrogens():
    data = prolif_data() / "implicitHbond"
    entry = ComplexEntry("1s2g", data / "receptor.pdb", data / "1.D.sdf", data / "1.D.sdf")
    reference = convert_complex(entry, Options())
    records = chem.read_ligands(data / "1.D.sdf")
    group = LigandGroup("1s2g", data / "receptor.pdb", "1.D.sdf", records, data / "1.D.sdf")
    assert_same_samples(GroupConverter(Options()).convert(group), reference)


def test_a_different_topology_is_featurised_afresh(vina):
    _, poses = vina
    first = Chem.SDMolSupplier(str(poses), removeHs=False)[0]
    other = Chem.AddHs(Chem.MolFromSmiles("c1ccccc1O"), addCoords=True)
    from rdkit.Chem import AllChem

    AllChem.EmbedMolecule(other, randomSeed=3)
    featuriser = LigandFeaturiser()
    for mol in (first, other, first):
        kind = featuriser.topology(mol)
        np.testing.assert_array_equal(kind.rows(heavy_positions(mol, kind)), chem.atom_features(mol, 1.0))
        np.testing.assert_array_equal(kind.vdw, chem.van_der_waals(mol))
    assert featuriser.featurised == 3 and featuriser.reused == 0


@pytest.mark.parametrize("pairs", [0, 10**9])  # nearest distances from a KD-tree, or from one matrix product
@pytest.mark.parametrize("offset", [0.0, 250.0])  # coordinates far from the origin, as in a large receptor
def test_near_atoms_decides_as_the_converter_even_at_the_radius(monkeypatch, pairs, offset):
    from pecan.scoring import featurise

    monkeypatch.setattr(featurise, "BRUTE_FORCE_PAIRS", pairs)
    rng = np.random.default_rng(0)
    ligand = rng.normal(size=(40, 3)) * 3 + offset
    points = rng.normal(size=(3000, 3)) * 12 + offset
    # Points at exactly the radius (and a hair either side) of a ligand atom.
    direction = rng.normal(size=(60, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    edge = ligand[rng.integers(0, 40, 60)] + direction * (8.0 + rng.choice([-1e-9, 0.0, 1e-9], 60))[:, None]
    points = np.concatenate([points, edge])
    expected = chem._min_distances(points, [ligand]) <= 8.0
    got = near_atoms(points, ligand, 8.0)
    np.testing.assert_array_equal(got, expected)
    assert 0 < got.sum() < len(points)


def test_pocket_cut_by_residue_arrays_equals_pocket_submol(vina):
    data, poses = vina
    receptor = PreparedReceptor.read(data / "rec.pdb")
    ligands = [chem.heavy_positions(m) for m in Chem.SDMolSupplier(str(poses), removeHs=False)]
    reference = chem.pocket_submol(receptor.mol, ligands, 8.0)
    pocket = receptor.cut(receptor.pocket_residues(ligands, 8.0))
    assert Chem.MolToMolBlock(pocket) == Chem.MolToMolBlock(reference)
    np.testing.assert_array_equal(chem.atom_features(pocket, -1.0), chem.atom_features(reference, -1.0))


def factory_atoms(mol, family):
    return {i for f in chem.feature_factory().GetFeaturesForMol(mol, includeOnly=family) for i in f.GetAtomIds()}


@pytest.mark.parametrize("family", ["Donor", "Acceptor"])
def test_feature_families_by_smarts_equal_the_feature_factory(vina, family):
    data, poses = vina
    receptor = chem.read_receptor(data / "rec.pdb")
    # More than 1,000 matches of one definition: both stop at RDKit's default of 1,000 matches.
    polyol = Chem.AddHs(Chem.MolFromSmiles("C" + "C(O)" * 1010))
    molecules = [receptor, polyol, *Chem.SDMolSupplier(str(poses), removeHs=False)]
    for mol in molecules:
        assert chem._family_atoms(mol, family) == factory_atoms(mol, family)
    assert len(chem._family_atoms(receptor, family)) > 50


def test_an_unreadable_poses_file_is_a_failure_of_its_ligand(tmp_path):
    data = prolif_data() / "vina"
    missing = Path(tmp_path / "missing.sdf")
    group = LigandGroup("gone", data / "rec.pdb", str(missing), [], error=f"{missing}: file not found")
    result = GroupConverter(Options()).convert(group)
    assert result.poses == []
    assert result.failures == [{"complex_id": "gone", "pose_id": "", "reason": f"{missing}: file not found"}]
