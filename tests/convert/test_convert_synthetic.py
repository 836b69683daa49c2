"""Exact checks of the structure converter on tiny RDKit-built complexes."""

from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from pecan.convert.complexes import Options  # noqa: E402
from pecan.convert.run import convert  # noqa: E402
from pecan.data import layout  # noqa: E402
from pecan.runtime.errors import ConfigError  # noqa: E402
from tests.convert import structures as st  # noqa: E402

ASYMMETRIC = "NCC(O)CCS"


def one_complex(tmp_path: Path, poses, crystal, name="cplx", props=None, names=None, **receptor) -> Path:
    """Files and a manifest for one complex; returns the manifest."""
    receptor_path = st.write_receptor(tmp_path / f"{name}_rec.pdb", crystal.GetConformer().GetPositions(), **receptor)
    st.write_sdf(tmp_path / f"{name}_xtal.sdf", [crystal])
    st.write_sdf(tmp_path / f"{name}_poses.sdf", poses, names=names, props=props)
    row = {
        "complex_id": name,
        "receptor": receptor_path.name,
        "crystal_ligand": f"{name}_xtal.sdf",
        "poses": f"{name}_poses.sdf",
        "affinity": 6.5,
        "score_property": "minimizedAffinity",
    }
    return st.manifest(tmp_path / "manifest.csv", [row])


def test_layout_matches_shard_format(tmp_path):
    crystal = st.ligand(ASYMMETRIC)
    poses = [st.moved(crystal, translation=(0.5, 0, 0)), st.moved(crystal, translation=(0, 3.0, 0))]
    manifest = one_complex(tmp_path, poses, crystal, props=[{"minimizedAffinity": -7.25}, {"minimizedAffinity": -5.5}])
    summary = convert(manifest, tmp_path / "out", Options(), prefix="t", progress=False)
    assert summary["complexes"] == 1 and summary["poses"] == 2 and summary["positives"] == 1
    with h5py.File(tmp_path / "out" / "t_0000.hdf5", "r") as h5:
        group = h5["cplx"]
        assert float(group.attrs["affinity"]) == 6.5
        pose = group[f"{layout.DEFAULT_POSE_GROUP}/cplx_pose1"]
        data = pose["data"]
        assert data.dtype == np.float32 and data.shape[1] == 22 and data.compression == "lzf"
        rows = data[()]
        n_ligand = crystal.GetNumHeavyAtoms()
        assert (rows[:n_ligand, layout.MOLCODE_COLUMN] == 1).all() and (
            rows[n_ligand:, layout.MOLCODE_COLUMN] == -1
        ).all()
        assert len(rows) > n_ligand
        # coordinates as in the input frame: the pose file's own coordinates, heavy atoms in file order
        np.testing.assert_allclose(rows[:n_ligand, :3], poses[0].GetConformer().GetPositions(), atol=1e-4)
        # element one-hot: N C C O C C S for NCC(O)CCS
        assert [int(np.argmax(r[3:12])) for r in rows[:n_ligand]] == [2, 1, 1, 3, 1, 1, 5]
        assert rows[:, 3:12].sum(1).max() == 1
        zinc = rows[rows[:, 3 + 8] == 1]
        assert len(zinc) == 1, "metal ions are kept as pocket atoms by default"
        assert len(pose.attrs["van_der_waals"]) == len(rows)  # on the pose group, as FAST writes it
        assert pose.attrs["van_der_waals"][0] == pytest.approx(1.6, abs=0.01)  # RDKit's N radius
        assert float(pose.attrs["score"]) == -7.25 and int(pose.attrs["label"]) == 1
        assert float(pose.attrs["hpbond"]) >= 0 and set(layout.INTERACTION_ATTRS) <= set(pose.attrs)
        xtal = group[layout.DEFAULT_CRYSTAL_GROUP]
        assert float(xtal.attrs["rmsd"]) == 0 and int(xtal.attrs["label"]) == 1
    index = pd.read_csv(tmp_path / "out" / "t_all.csv")
    assert list(index.columns) == list(layout.INDEX_CSV_COLUMNS)
    assert sorted(index["poseid"]) == ["cplx_pose1", "cplx_pose2", "pdbbind"]


def test_waters_dropped_and_hetero_optional(tmp_path):
    crystal = st.ligand(ASYMMETRIC)
    manifest = one_complex(tmp_path, [crystal], crystal)
    convert(manifest, tmp_path / "keep", Options(), progress=False)
    convert(manifest, tmp_path / "drop", Options(drop_hetero=True), progress=False)

    def rows(directory):
        with h5py.File(directory / "converted_0000.hdf5", "r") as h5:
            return h5[f"cplx/{layout.DEFAULT_POSE_GROUP}/cplx_pose1/data"][()]

    kept, dropped = rows(tmp_path / "keep"), rows(tmp_path / "drop")
    assert len(kept) == len(dropped) + 1 and kept[:, 11].sum() == 1 and dropped[:, 11].sum() == 0
    # the water oxygen sits 2 A from the zinc: no protein oxygen there
    zinc = kept[kept[:, 11] == 1][0, :3]
    assert np.linalg.norm(kept[:, :3] - zinc, axis=1)[kept[:, 6] == 1].min() > 2.5


def test_rigid_transform_rmsd_and_threshold_labels(tmp_path):
    crystal = st.ligand(ASYMMETRIC)
    turn = st.rotation((1, 2, 0.5), 25.0)
    poses = [
        st.moved(crystal, turn, (0.3, -0.2, 0.1)),
        st.moved(crystal, translation=(1.0, 0, 0)),
        st.moved(crystal, translation=(2.0, 0, 0)),
        st.moved(crystal, translation=(0, 0, 3.0)),
    ]
    manifest = one_complex(tmp_path, poses, crystal)
    convert(manifest, tmp_path / "out", Options(rmsd_threshold=2.0), progress=False)
    index = pd.read_csv(tmp_path / "out" / "converted_all.csv").set_index("poseid")
    a, b = poses[0].GetConformer().GetPositions(), crystal.GetConformer().GetPositions()
    expected = np.sqrt(((a - b) ** 2).sum(1).mean())
    assert index.loc["cplx_pose1", "rmsd"] == pytest.approx(expected, abs=2e-4)
    assert index.loc["cplx_pose2", "rmsd"] == 1.0 and index.loc["cplx_pose3", "rmsd"] == 2.0
    assert index.loc["cplx_pose4", "rmsd"] == 3.0
    # "below the threshold" is near-native: exactly 2.0 A is a decoy
    assert index.loc[["cplx_pose2", "cplx_pose3", "cplx_pose4"], "label"].tolist() == [1, 0, 0]


def test_symmetric_ligand_gets_symmetric_minimum_and_protonation_is_ignored(tmp_path):
    crystal = st.ligand("c1ccccc1C(=O)[O-]")  # ring flip and carboxylate swap are symmetries
    axis_atoms = crystal.GetConformer().GetPositions()
    # a 180 degree turn about the ring axis through C1 and C4 maps the molecule onto itself (up to the grid)
    ring_axis = axis_atoms[5] - axis_atoms[2]
    flipped = st.moved(crystal, st.rotation(ring_axis, 180.0))
    with_h = st.ligand("c1ccccc1C(=O)O", hydrogens=True)
    st.set_positions(
        with_h,
        np.concatenate(
            [crystal.GetConformer().GetPositions(), with_h.GetConformer().GetPositions()[crystal.GetNumAtoms() :]]
        ),
    )
    manifest = one_complex(tmp_path, [flipped, with_h], crystal)
    convert(manifest, tmp_path / "out", Options(), progress=False)
    index = pd.read_csv(tmp_path / "out" / "converted_all.csv").set_index("poseid")
    naive = np.sqrt(((flipped.GetConformer().GetPositions() - axis_atoms) ** 2).sum(1).mean())
    assert naive > 1.0
    assert index.loc["cplx_pose1", "rmsd"] < 0.5  # grid snapping leaves the flip a little off
    assert index.loc["cplx_pose2", "rmsd"] == pytest.approx(0.0, abs=1e-6)  # pose with H, crystal without


def test_failures_listed_not_raised(tmp_path):
    crystal = st.ligand(ASYMMETRIC)
    other = st.ligand("CCCCCCO")
    far = st.moved(crystal, translation=(0, 40.0, 0))
    st.write_receptor(tmp_path / "rec.pdb", crystal.GetConformer().GetPositions())
    st.write_sdf(tmp_path / "xtal.sdf", [crystal])
    st.write_sdf(tmp_path / "poses.sdf", [crystal, other, far], names=["good", "wrong_molecule", "far_away"])
    (tmp_path / "garbage.sdf").write_text("not a molecule\n$$$$\n")
    rows = [
        {"complex_id": "ok", "receptor": "rec.pdb", "crystal_ligand": "xtal.sdf", "poses": "poses.sdf"},
        {"complex_id": "no_receptor", "receptor": "missing.pdb", "crystal_ligand": "xtal.sdf", "poses": "poses.sdf"},
        {"complex_id": "bad_poses", "receptor": "rec.pdb", "crystal_ligand": "xtal.sdf", "poses": "garbage.sdf"},
    ]
    summary = convert(st.manifest(tmp_path / "m.csv", rows), tmp_path / "out", Options(), progress=False)
    failures = pd.read_csv(tmp_path / "out" / "failures.csv", keep_default_na=False)
    reasons = {(r.complex_id, r.pose_id): r.reason for r in failures.itertuples()}
    assert "graph" in reasons[("ok", "wrong_molecule")] or "heavy atoms" in reasons[("ok", "wrong_molecule")]
    assert "no receptor atoms within 8.0 A" in reasons[("ok", "far_away")]
    assert "not found" in reasons[("no_receptor", "")]
    assert ("bad_poses", "") in reasons
    assert summary["complexes"] == 1 and summary["poses"] == 1 and summary["skipped_complexes"] == 2
    assert summary["skipped_poses"] == 3  # two of "ok" and the unparsable record of bad_poses


def test_failures_of_a_shard_finished_before_the_rename_keep_their_complex_and_pose(tmp_path):
    import json

    crystal = st.ligand(ASYMMETRIC)
    far = st.moved(crystal, translation=(0, 40.0, 0))
    manifest = one_complex(tmp_path, [crystal, far], crystal, names=["good", "far_away"])
    convert(manifest, tmp_path / "out", Options(), progress=False)
    sidecar = tmp_path / "out" / ".converted_0000.done.json"
    record = json.loads(sidecar.read_text())
    renamed = {"complex_id": "complex", "pose_id": "pose"}  # the failure rows' keys before the rename
    record["failures"] = [{renamed.get(k, k): v for k, v in f.items()} for f in record["failures"]]
    sidecar.write_text(json.dumps(record))
    summary = convert(manifest, tmp_path / "out", Options(), progress=False)
    assert summary["reused_shards"] == 1 and summary["skipped_poses"] == 1
    failures = pd.read_csv(tmp_path / "out" / "failures.csv", keep_default_na=False)
    assert list(failures.columns) == ["complex_id", "pose_id", "reason"]
    assert failures[["complex_id", "pose_id"]].values.tolist() == [["cplx", "far_away"]]


def test_rerun_reuses_complete_shards_and_redoes_changed_ones(tmp_path):
    crystal = st.ligand(ASYMMETRIC)
    manifest = one_complex(tmp_path, [crystal, st.moved(crystal, translation=(0, 0, 1.5))], crystal)
    out = tmp_path / "out"
    first = convert(manifest, out, Options(), progress=False)
    shard = out / "converted_0000.hdf5"
    stamp = shard.stat().st_mtime_ns
    again = convert(manifest, out, Options(), progress=False)
    assert again["reused_shards"] == 1 and shard.stat().st_mtime_ns == stamp
    assert {k: again[k] for k in ("complexes", "poses", "positives")} == {
        k: first[k] for k in ("complexes", "poses", "positives")
    }
    with pytest.raises(ConfigError, match=r"--rmsd-threshold 2.0 there, 1.0 here"):
        convert(manifest, out, Options(rmsd_threshold=1.0), progress=False)  # another plan: asked for only
    changed = convert(manifest, out, Options(rmsd_threshold=1.0), progress=False, replace=True)
    assert changed["reused_shards"] == 0 and changed["positives"] == 1
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_rerun_with_fewer_shards_removes_the_old_ones(tmp_path):
    crystal = st.ligand(ASYMMETRIC)
    receptor = st.write_receptor(tmp_path / "rec.pdb", crystal.GetConformer().GetPositions())
    st.write_sdf(tmp_path / "x.sdf", [crystal])
    rows = [
        {"complex_id": f"c{k}", "receptor": receptor.name, "crystal_ligand": "x.sdf", "poses": "x.sdf"}
        for k in range(3)
    ]
    manifest = st.manifest(tmp_path / "m.csv", rows)
    out = tmp_path / "out"
    assert convert(manifest, out, Options(), per_shard=1, progress=False)["shards"] == 3
    summary = convert(manifest, out, Options(), per_shard=2, progress=False, replace=True)
    assert sorted(p.name for p in out.glob("*.hdf5")) == ["converted_0000.hdf5", "converted_0001.hdf5"]
    index = pd.read_csv(out / "converted_all.csv")
    assert summary["complexes"] == 3 and sorted(index["pdbid"].unique()) == ["c0", "c1", "c2"]
    assert len(index) == 6


def test_shards_read_back_identically_through_hdf5_and_packed_paths(tmp_path):
    from pecan import config as cfgmod
    from pecan.data.loader import load_split_indexes, make_dataset

    crystal = st.ligand(ASYMMETRIC)
    poses = [st.moved(crystal, st.rotation((0, 0, 1), 10.0 * k), (0.4 * k, 0, 0)) for k in range(4)]
    convert(one_complex(tmp_path, poses, crystal), tmp_path / "out", Options(), progress=False)
    config = cfgmod.load(
        None, [f"data.data_dir={tmp_path / 'out'}", f"data.cache_dir={tmp_path / 'cache'}", "data.val_fraction=0.0"]
    )
    frame, _ = load_split_indexes(config.data)
    assert len(frame) == 5
    h5_batch = make_dataset(config.data, frame, io_mode="handle_cache").__getitems__(list(range(len(frame))))
    packed_batch = make_dataset(config.data, frame, io_mode="packed").__getitems__(list(range(len(frame))))
    for name in ("x", "pos", "edge_index", "edge_type", "y", "pose_features", "batch"):
        assert np.array_equal(h5_batch[name].numpy(), packed_batch[name].numpy()), name
    assert h5_batch.x[:, layout.MOLCODE_FEATURE].gt(0).sum() > 0
