"""studies/corpus/augment.py: extra training poses around the crystal pose, minimised by Vina."""

import shutil

import pandas as pd
import pytest

pytestmark = pytest.mark.slow


def test_a_tiny_docked_complex_gets_minimised_poses_around_its_crystal(tmp_path):
    if shutil.which("obabel") is None:
        pytest.skip("receptor preparation needs Open Babel (apt-get install openbabel)")
    pytest.importorskip("vina", reason="the extra poses need the dock extra: pip install -e '.[dock]'")
    pytest.importorskip("meeko", reason="the extra poses need the dock extra: pip install -e '.[dock]'")
    pytest.importorskip("prolif", reason="the test complex ships with ProLIF (convert extra)")
    from rdkit import Chem

    from pecan.convert.chemistry import symmetric_rmsd
    from pecan.convert.examples import prolif_data
    from pecan.redock.dock import DockOptions
    from pecan.redock.run import redock
    from studies.corpus import augment

    data = prolif_data() / "implicitHbond"
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    shutil.copy(data / "receptor.pdb", inputs / "receptor.pdb")
    shutil.copy(data / "1.D.sdf", inputs / "ligand.sdf")
    pd.DataFrame(
        [{"complex_id": "1s2g", "receptor": "receptor.pdb", "crystal_ligand": "ligand.sdf", "fold": "0"}]
    ).to_csv(inputs / "manifest.csv", index=False)
    docked, out = tmp_path / "docked", tmp_path / "augmented"
    redock(inputs / "manifest.csv", docked, DockOptions(exhaustiveness=1, n_poses=3, seed=5), progress=False)

    assert augment.main(["--docked", str(docked), "--out", str(out), "--poses", "8", "--seed", "3"]) == 0
    poses = list(Chem.SDMolSupplier(str(out / "poses" / "1s2g.sdf"), removeHs=False))
    assert 1 <= len(poses) <= 8
    assert [m.GetProp("_Name") for m in poses] == [f"1s2g_aug{k}" for k in range(1, len(poses) + 1)]
    scores = [float(m.GetProp("docking_score")) for m in poses]
    assert max(scores) <= 0  # no clash left: what a docking run returns
    crystal = Chem.MolFromMolFile(str(inputs / "ligand.sdf"))
    rmsd = [symmetric_rmsd(m, crystal) for m in poses]
    assert rmsd[0] < 1.0  # the crystal-like pose, minimised, stays near-native
    manifest = pd.read_csv(out / "manifest.csv", dtype=str)
    docked_manifest = pd.read_csv(docked / "manifest.csv", dtype=str)
    assert list(manifest.columns) == list(docked_manifest.columns) and list(manifest["complex_id"]) == ["1s2g"]
    assert (out / manifest["receptor"].iloc[0]).resolve() == (docked / docked_manifest["receptor"].iloc[0]).resolve()
    assert (out / manifest["crystal_ligand"].iloc[0]).resolve().samefile(inputs / "ligand.sdf")

    before = (out / "poses" / "1s2g.sdf").stat().st_mtime_ns
    assert augment.main(["--docked", str(docked), "--out", str(out), "--poses", "8", "--seed", "3"]) == 0
    assert (out / "poses" / "1s2g.sdf").stat().st_mtime_ns == before  # resumable: a finished complex is skipped


def test_moved_poses_stay_inside_the_box_or_are_drawn_again():
    import numpy as np

    from pecan.redock.prepare import Box
    from studies.corpus.augment import inside

    box = Box((0.0, 0.0, 0.0), (10.0, 10.0, 10.0))
    xyz = np.array([[4.9, 0.0, 0.0], [6.5, 1.0, 0.0]])
    shifted = inside(xyz, box)
    assert np.allclose(shifted - xyz, [[-1.8, 0.0, 0.0]] * 2)  # the least shift that fits (0.3 A margin)
    assert inside(np.array([[-5.0, 0, 0], [5.0, 0, 0]]), box) is None  # wider than the box: drawn again
