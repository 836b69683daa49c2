"""Conversion of real protein-ligand files shipped with ProLIF (Vina docking of a kinase ligand; PLINDER 1s2g)."""

import h5py
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from pecan.convert.complexes import Options  # noqa: E402
from pecan.convert.examples import write_prolif_manifest  # noqa: E402
from pecan.convert.run import convert  # noqa: E402
from pecan.data import layout  # noqa: E402


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("real")
    manifest = write_prolif_manifest(tmp)
    summary = convert(manifest, tmp / "out", Options(), prefix="real", progress=False)
    return summary, tmp / "out"


@pytest.mark.slow
def test_real_complexes_convert(converted):
    summary, out = converted
    assert summary["complexes"] == 2 and summary["poses"] == 10 and summary["skipped_poses"] == 0
    index = pd.read_csv(out / "real_all.csv")
    vina = index[(index["pdbid"] == "vina") & (index["is_crystal"] == 0)].sort_values("poseid")
    assert len(vina) == 9
    # Vina's best pose lands near the crystal pose; its score is read from the SD property
    assert vina.iloc[0]["rmsd"] < 2.0 and vina.iloc[0]["score"] == -11.8
    assert (vina["rmsd"] > 0).all() and vina["rmsd"].max() > 5.0
    assert (vina["hpbond"] > 0).all() and vina["num_hbonds"].sum() > 0
    assert list(vina["label"]) == list((vina["rmsd"] < 2.0).astype(int))
    with h5py.File(out / "real_0000.hdf5", "r") as h5:
        rows = h5[f"vina/{layout.DEFAULT_POSE_GROUP}/vina_pose1/data"][()]
        assert (rows[:, layout.MOLCODE_COLUMN] == 1).sum() == 43  # the 43 heavy atoms of the ligand, no hydrogens
        assert rows[:, 3:12].sum() == len(rows)  # every atom has an element slot: no hydrogens anywhere


def test_protonated_pose_matches_unprotonated_crystal(converted):
    _, out = converted
    index = pd.read_csv(out / "real_all.csv")
    pose = index[(index["pdbid"] == "1s2g") & (index["is_crystal"] == 0)]
    assert len(pose) == 1 and pose.iloc[0]["rmsd"] == pytest.approx(0.0, abs=1e-3) and pose.iloc[0]["label"] == 1
    assert np.isnan(pose.iloc[0]["score"])  # no score property given
