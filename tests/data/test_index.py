"""Index: CSV reading, derivation from shards, where the derived CSV goes, complex-level splits."""

from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from pecan.data import index as idx
from pecan.data import layout
from pecan.data.index import DataError
from tests.shards import with_required_columns, write_shard

COMMON = dict(
    pose_group=layout.DEFAULT_POSE_GROUP,
    crystal_group=layout.DEFAULT_CRYSTAL_GROUP,
    use_crystal=True,
    rmsd_threshold=2.0,
    index_prefix="pecan",
)


def test_derived_index_matches_csv(tiny_dataset, tmp_path):
    data_dir, shards, csv = tiny_dataset
    from_csv = idx.build_index([str(csv)], [], str(data_dir), **COMMON)
    derived = idx.build_index([], [str(p) for p in shards], str(data_dir), index_dir=str(tmp_path / "idx"), **COMMON)
    key = ["complex_id", "pose_id"]
    a = from_csv.sort_values(key).reset_index(drop=True)
    b = derived.sort_values(key).reset_index(drop=True)
    assert len(a) == len(b) == 2 * 2 * 4
    for column in ["shard", "complex_id", "pose_id", "label", "is_crystal", *layout.INTERACTION_ATTRS]:
        assert a[column].tolist() == b[column].tolist(), column
    assert np.allclose(a["rmsd"], b["rmsd"])
    written = pd.read_csv(tmp_path / "idx" / "pecan_all.csv")
    assert len(written) == len(b) and list(written.columns)[:3] == ["shard", "pdbid", "poseid"]
    assert set(written.columns) >= set(layout.INDEX_CSV_COLUMNS)


def test_one_row_type_for_crystal_and_docked(tiny_dataset):
    data_dir, shards, _ = tiny_dataset
    frame = idx.derive_index(
        shards, idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, True, 2.0)
    )
    crystal = frame[frame["is_crystal"] == 1]
    assert len(crystal) == 4 and (crystal["label"] == 1).all() and (crystal["rmsd"] == 0).all()
    assert frame.notna()[list(layout.INDEX_COLUMNS)].drop(columns=["affinity"]).all().all()


def test_crystal_group_named_crystal_is_accepted(tmp_path):
    write_shard(tmp_path / "s.hdf5", crystal_name="crystal")
    frame = idx.derive_index(
        [tmp_path / "s.hdf5"], idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, True, 2.0)
    )
    assert set(frame.loc[frame["is_crystal"] == 1, "pose_id"]) == {"crystal"}


def test_missing_attributes_defaults(tmp_path):
    path = tmp_path / "s.hdf5"
    write_shard(path, n_complexes=1, n_poses=2, crystal=False, rmsds=[1.0, 5.0])
    with h5py.File(path, "a") as handle:
        for pose in handle[f"c000/{layout.DEFAULT_POSE_GROUP}"].values():
            for name in ("label", "hpbond"):
                del pose.attrs[name]
    frame = idx.derive_index(
        [path], idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, True, 2.0)
    )
    assert frame["label"].tolist() == [1, 0]  # from rmsd < threshold
    assert (frame["hpbond"] == 0).all()


def test_pose_without_label_or_rmsd_is_rejected_naming_it(tmp_path):
    path = tmp_path / "s.hdf5"
    write_shard(path, n_complexes=1, n_poses=2, crystal=False)
    with h5py.File(path, "a") as handle:
        pose = handle[f"c000/{layout.DEFAULT_POSE_GROUP}/c000_pose1"]
        del pose.attrs["label"], pose.attrs["rmsd"]
    with pytest.raises(DataError, match="c000/c000_pose1"):
        idx.derive_index([path], idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, True, 2.0))


def test_missing_shard_file_is_named(tmp_path):
    with pytest.raises(DataError, match="missing.hdf5"):
        idx.resolve_shards([str(tmp_path / "missing.hdf5")])


def test_csv_naming_missing_shard(tiny_dataset, tmp_path):
    data_dir, _, csv = tiny_dataset
    frame = pd.read_csv(csv)
    frame.loc[0, "shard"] = "gone.hdf5"
    bad = tmp_path / "bad.csv"
    frame.to_csv(bad, index=False)
    with pytest.raises(DataError, match="gone.hdf5"):
        idx.read_index_csv(bad, str(data_dir), 2.0)


def test_not_hdf5_shard_is_named(tmp_path):
    path = tmp_path / "fake.hdf5"
    path.write_text("not an hdf5 file")
    with pytest.raises(DataError, match="fake.hdf5"):
        idx.derive_index([path], idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, True, 2.0))


def test_missing_pose_group_error_or_skip(tmp_path):
    path = tmp_path / "s.hdf5"
    write_shard(path, n_complexes=2)
    with h5py.File(path, "a") as handle:
        del handle["c001/pybel/processed/docking"]
    with pytest.raises(DataError, match="c001"):
        idx.derive_index([path], idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, True, 2.0))
    frame = idx.derive_index(
        [path],
        idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, True, 2.0, on_bad_sample="skip"),
    )
    assert set(frame["complex_id"]) == {"c000"}


def test_unreadable_csv_falls_back_to_shards(tiny_dataset, monkeypatch, tmp_path):
    data_dir, shards, csv = tiny_dataset
    real = pd.read_csv

    def deny(path, *args, **kwargs):
        if Path(path) == csv:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(pd, "read_csv", deny)
    frame = idx.build_index(
        [str(csv)], [str(p) for p in shards], str(data_dir), index_dir=str(tmp_path / "idx"), **COMMON
    )
    assert len(frame) == 16
    with pytest.raises(DataError, match="index.csv"):
        idx.build_index([str(csv)], [], str(data_dir), **COMMON)


def test_read_only_data_dir_falls_back_to_user_cache_then_temp(tiny_dataset, tmp_path, monkeypatch, mounts):
    data_dir, shards, _ = tiny_dataset
    ro = mounts.read_only(data_dir, tmp_path / "ro")
    fns = [str(ro / p.name) for p in shards]
    frame = idx.build_index([], fns, "", **COMMON)
    cached = list((tmp_path / "xdg-cache" / "pecan" / "index").glob("*/pecan_all.csv"))
    assert len(cached) == 1 and len(pd.read_csv(cached[0])) == len(frame)
    assert not (data_dir / "pecan_all.csv").exists()
    # The per-user cache read-only too: the per-user temp dir takes it.
    mounts.read_only(tmp_path / "xdg-cache", tmp_path / "xdg-ro")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-ro"))
    monkeypatch.setattr(idx.locations.tempfile, "tempdir", str(tmp_path / "tmp"))
    idx.build_index([], fns, "", **{**COMMON, "rmsd_threshold": 3.0, "label_source": "rmsd"})
    assert list((tmp_path / "tmp").glob("pecan-*/index/*/pecan_all.csv"))


def test_derived_index_reused_until_a_shard_changes(tiny_dataset, tmp_path, monkeypatch):
    data_dir, shards, _ = tiny_dataset
    fns = [str(p) for p in shards]
    first = idx.build_index([], fns, str(data_dir), **COMMON)
    walks = []
    real = idx.derive_index
    monkeypatch.setattr(idx, "derive_index", lambda *a, **k: walks.append(1) or real(*a, **k))
    again = idx.build_index([], fns, str(data_dir), **COMMON)
    assert walks == [] and again.equals(first)
    with h5py.File(shards[0], "a") as handle:
        handle["c000"].attrs["affinity"] = 1.0
    idx.build_index([], fns, str(data_dir), **COMMON)
    assert walks == [1]


def test_destination_order(tmp_path):
    got = [loc.directory for loc in idx.index_locations(tmp_path / "shards", str(tmp_path / "env"))]
    assert got[0] == tmp_path / "env" and got[1] == tmp_path / "shards"
    assert got[2].parent.parent == tmp_path / "xdg-cache" / "pecan"
    assert idx.index_locations(tmp_path / "shards", "")[0].directory == tmp_path / "shards"


def test_split_by_complex_never_splits_a_complex(tiny_dataset):
    _, shards, _ = tiny_dataset
    frame = idx.derive_index(
        shards, idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, True, 2.0)
    )
    train, val = idx.split_by_complex(frame, 0.5, seed=1)
    assert not set(train["complex_id"]) & set(val["complex_id"])
    assert len(train) + len(val) == len(frame) and len(val) > 0
    again_train, _ = idx.split_by_complex(frame, 0.5, seed=1)
    assert train.equals(again_train)


# ---------------------------------------------------------------------------- build_index arguments reach both paths


def one_complex_csv(tmp_path, **columns) -> Path:
    """A shard with one complex of 3 poses and an index CSV over it with the given columns (and the required
    is_crystal and interaction counts, 0 unless given; ``DROP`` leaves a column out)."""
    write_shard(tmp_path / "s.hdf5", n_complexes=1, n_poses=3, crystal=False)
    path = tmp_path / "index.csv"
    required = {"is_crystal": 0, **{name: 0.0 for name in layout.INTERACTION_ATTRS}}
    columns = {k: v for k, v in {**required, **columns}.items() if v is not DROP}
    pd.DataFrame({"shard": "s.hdf5", "pdbid": "c000", "poseid": [f"c000_pose{p}" for p in range(3)], **columns}).to_csv(
        path, index=False
    )
    return path


DROP = object()


def test_derived_rows_carry_the_complex_affinity(tmp_path):
    write_shard(tmp_path / "s.hdf5", n_complexes=2, n_poses=2)
    with h5py.File(tmp_path / "s.hdf5", "a") as handle:
        handle["c000"].attrs["affinity"], handle["c001"].attrs["affinity"] = 6.5, 7.25
    frame = idx.derive_index(
        [tmp_path / "s.hdf5"], idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, True, 2.0)
    )
    assert frame.groupby("complex_id")["affinity"].agg(set).to_dict() == {"c000": {6.5}, "c001": {7.25}}


def test_unlabelled_csv_rows_need_labels_optional(tmp_path):
    csv = one_complex_csv(tmp_path, label=[1, np.nan, 0])
    with pytest.raises(DataError, match="c000/c000_pose1"):
        idx.build_index([str(csv)], [], str(tmp_path), **COMMON)
    frame = idx.build_index([str(csv)], [], str(tmp_path), labels_optional=True, **COMMON)
    assert frame["pose_id"].tolist() == ["c000_pose0", "c000_pose1", "c000_pose2"]
    assert frame["label"].isna().tolist() == [False, True, False]


@pytest.mark.parametrize("source", ["csv", "derived"])
def test_unlabelled_poses_are_an_error_by_default(tmp_path, source):
    csv = one_complex_csv(tmp_path, rmsd=[1.0, np.nan, 3.0])
    with h5py.File(tmp_path / "s.hdf5", "a") as handle:
        pose = handle[f"c000/{layout.DEFAULT_POSE_GROUP}/c000_pose1"]
        del pose.attrs["label"], pose.attrs["rmsd"]
    csvs, fns = ([str(csv)], []) if source == "csv" else ([], ["s.hdf5"])
    with pytest.raises(DataError, match="c000/c000_pose1"):
        idx.build_index(csvs, fns, str(tmp_path), write_csv=False, **COMMON)


def test_bad_csv_row_is_named_or_dropped_under_skip(tmp_path):
    csv = one_complex_csv(tmp_path, label=[1, 2, 0])
    with pytest.raises(DataError, match=r"index\.csv: line 3, .*pose c000/c000_pose1: label must be 0 or 1"):
        idx.build_index([str(csv)], [], str(tmp_path), **COMMON)
    frame = idx.build_index([str(csv)], [], str(tmp_path), on_bad_sample="skip", **COMMON)
    assert frame["pose_id"].tolist() == ["c000_pose0", "c000_pose2"] and frame.attrs["skipped"] == 1


def test_no_shard_list_derives_from_every_shard_in_data_dir(tmp_path):
    write_shard(tmp_path / "a.hdf5", n_complexes=1, n_poses=2, crystal=False, prefix="a")
    write_shard(tmp_path / "b.hdf5", n_complexes=1, n_poses=2, crystal=False, prefix="b")
    frame = idx.build_index([], [], str(tmp_path), write_csv=False, **COMMON)
    assert sorted(frame["complex_id"].unique()) == ["a000", "b000"] and len(frame) == 4


def test_relative_shard_names_resolve_against_data_dir(tmp_path, monkeypatch):
    for directory in ("data", "elsewhere"):
        (tmp_path / directory).mkdir()
    write_shard(tmp_path / "data" / "s.hdf5", n_complexes=1, n_poses=2, crystal=False)
    monkeypatch.chdir(tmp_path / "elsewhere")
    frame = idx.build_index([], ["s.hdf5"], str(tmp_path / "data"), write_csv=False, **COMMON)
    assert len(frame) == 2 and set(frame["shard"]) == {str(tmp_path / "data" / "s.hdf5")}


def test_shard_listed_twice_is_an_error_or_used_once_under_skip(tmp_path):
    write_shard(tmp_path / "s.hdf5", n_complexes=1, n_poses=2, crystal=False)
    twice = ["s.hdf5", str(tmp_path / "*.hdf5")]
    with pytest.raises(DataError, match="s.hdf5 is listed more than once"):
        idx.build_index([], twice, str(tmp_path), write_csv=False, **COMMON)
    frame = idx.build_index([], twice, str(tmp_path), write_csv=False, on_bad_sample="skip", **COMMON)
    assert frame["pose_id"].tolist() == ["c000_pose0", "c000_pose1"]


def test_unlabelled_derived_index_reused_from_index_dir(tmp_path, monkeypatch):
    # Scoring new poses: one has neither label nor rmsd; relative shard names; the CSV kept in data.index_dir.
    (tmp_path / "data").mkdir()
    write_shard(tmp_path / "data" / "s.hdf5", n_complexes=1, n_poses=3, crystal=False)
    with h5py.File(tmp_path / "data" / "s.hdf5", "a") as handle:
        pose = handle[f"c000/{layout.DEFAULT_POSE_GROUP}/c000_pose1"]
        del pose.attrs["label"], pose.attrs["rmsd"]
    args = dict(index_dir=str(tmp_path / "idx"), labels_optional=True, **COMMON)
    first = idx.build_index([], ["s.hdf5"], str(tmp_path / "data"), **args)
    assert first["label"].isna().tolist() == [False, True, False]
    # Shard names relative to data_dir, so the data directory can move with its index.
    assert pd.read_csv(tmp_path / "idx" / "pecan_all.csv")["shard"].tolist() == ["s.hdf5"] * 3
    walks = []
    real = idx.derive_index
    monkeypatch.setattr(idx, "derive_index", lambda *a, **k: walks.append(1) or real(*a, **k))
    again = idx.build_index([], ["s.hdf5"], str(tmp_path / "data"), **args)
    assert walks == [] and again.equals(first)


def test_bad_complex_skipped_on_the_derived_path(tmp_path):
    write_shard(tmp_path / "s.hdf5", n_complexes=2)
    with h5py.File(tmp_path / "s.hdf5", "a") as handle:
        del handle["c001/pybel/processed/docking"]
    frame = idx.build_index([], ["s.hdf5"], str(tmp_path), write_csv=False, on_bad_sample="skip", **COMMON)
    assert set(frame["complex_id"]) == {"c000"} and frame.attrs["skipped"] == 1


def test_bad_pose_attribute_skipped_on_the_derived_path(tmp_path):
    write_shard(tmp_path / "s.hdf5", n_complexes=1, n_poses=3, crystal=False)
    with h5py.File(tmp_path / "s.hdf5", "a") as handle:
        handle[f"c000/{layout.DEFAULT_POSE_GROUP}/c000_pose1"].attrs["label"] = 2
    with pytest.raises(DataError, match="pose c000/c000_pose1: label must be 0 or 1"):
        idx.build_index([], ["s.hdf5"], str(tmp_path), write_csv=False, **COMMON)
    frame = idx.build_index([], ["s.hdf5"], str(tmp_path), write_csv=False, on_bad_sample="skip", **COMMON)
    assert frame["pose_id"].tolist() == ["c000_pose0", "c000_pose2"] and frame.attrs["skipped"] == 1


def test_normalise_names_a_missing_required_column():
    # The CSV reader checks its columns first; normalise is the check for frames built in code.
    frame = pd.DataFrame({"shard": ["s.hdf5"], "label": [1]})
    with pytest.raises(DataError, match=r"my frame: index is missing required column\(s\) complex_id, pose_id$"):
        idx.normalise(frame, 2.0, "my frame")


def test_normalise_requires_a_label_or_rmsd_unless_told_otherwise():
    frame = pd.DataFrame(
        {"shard": ["s.hdf5"] * 2, "complex_id": ["a", "a"], "pose_id": ["1", "2"], "rmsd": [1.0, None]}
    )
    with pytest.raises(DataError, match="pose a/2 in shard s.hdf5 has neither a label nor an rmsd"):
        idx.normalise(frame, 2.0, "test")
    assert idx.normalise(frame, 2.0, "test", labels_optional=True)["label"].isna().tolist() == [False, True]


def test_csv_with_only_the_required_columns_and_a_label(tmp_path):
    csv = one_complex_csv(tmp_path, label=[1, 0, 1])
    frame = idx.read_index_csv(csv, str(tmp_path), 2.0)
    assert frame["label"].tolist() == [1, 0, 1] and frame["is_crystal"].tolist() == [0, 0, 0]
    for column in ("rmsd", "affinity", "docking_score"):
        assert frame[column].dtype == np.float64 and frame[column].isna().all(), column
    for column in layout.INTERACTION_ATTRS:
        assert frame[column].tolist() == [0.0, 0.0, 0.0], column
    kept = idx.build_index([str(csv)], [], str(tmp_path), **{**COMMON, "use_crystal": False})
    assert kept["pose_id"].tolist() == ["c000_pose0", "c000_pose1", "c000_pose2"]
    bare = one_complex_csv(tmp_path, label=[1, 0, 1], is_crystal=DROP, hpbond=DROP)
    with pytest.raises(DataError, match=r"missing required column\(s\) hpbond \("):
        idx.read_index_csv(bare, str(tmp_path), 2.0)


def test_empty_is_crystal_cell_is_a_docked_pose(tmp_path):
    csv = one_complex_csv(tmp_path, label=[1, 0, 1], is_crystal=[1, np.nan, 0])
    assert idx.read_index_csv(csv, str(tmp_path), 2.0)["is_crystal"].tolist() == [1, 0, 0]


def test_fractional_label_is_named_not_rounded(tmp_path):
    csv = one_complex_csv(tmp_path, label=[1, 0.5, 0])
    with pytest.raises(DataError, match=r"pose c000/c000_pose1: label must be 0 or 1.*\(got 0\.5\)"):
        idx.build_index([str(csv)], [], str(tmp_path), **COMMON)


def test_read_index_csv_keeps_ids_as_text_and_names_the_csv(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "s.hdf5").touch()  # only its existence is checked here
    path = folder / "index.csv"
    path.write_text(with_required_columns("shard,pdbid,poseid,rmsd\ns.hdf5,1e10,007,1.0\n"))
    # Numeric-looking ids (PDB id 1E10, pose 007) stay text; with no data_dir the shard resolves against
    # the CSV's folder.
    frame = idx.read_index_csv(path, "", 2.0)
    assert (frame["complex_id"].tolist(), frame["pose_id"].tolist()) == (["1e10"], ["007"])
    assert frame["shard"].tolist() == [str(folder / "s.hdf5")]
    for text, message in [
        (
            "shard,pdbid,poseid,rmsd\ns.hdf5,a,a_1,1.0\ngone.hdf5,a,a_2,1.0\n",
            f"index CSV {path}, line 3, column 'shard': shard file not found: {folder / 'gone.hdf5'}",
        ),
        ("shard,pdbid,poseid,rmsd\ns.hdf5,a,a_1,far\n", str(path)),
        ("shard,pdbid,poseid,rmsd\ns.hdf5,a,a_1,\n", f"{path}: pose a/a_1 in shard"),
        ("", f"index CSV {path} is not a valid CSV"),
    ]:
        path.write_text(with_required_columns(text) if text else text)
        with pytest.raises(DataError) as err:
            idx.read_index_csv(path, "", 2.0)
        assert message in str(err.value)


def test_ids_that_pandas_would_read_as_missing_stay_text(tmp_path):
    (tmp_path / "s.hdf5").touch()
    path = tmp_path / "index.csv"
    path.write_text(
        with_required_columns("shard,pdbid,poseid,rmsd,score\ns.hdf5,NA,None,1.0,NA\ns.hdf5,null,nan,3.0,-7.1\n")
    )
    frame = idx.read_index_csv(path, str(tmp_path), 2.0)
    assert frame["complex_id"].tolist() == ["NA", "null"] and frame["pose_id"].tolist() == ["None", "nan"]
    assert (
        np.isnan(frame["docking_score"].iloc[0]) and frame["docking_score"].iloc[1] == -7.1
    )  # numeric NA is still missing
    path.write_text(with_required_columns("shard,pdbid,poseid,rmsd\ns.hdf5,,p1,1.0\n"))
    with pytest.raises(DataError, match=r"line 2, column 'pdbid': is empty"):
        idx.read_index_csv(path, str(tmp_path), 2.0)


def test_relative_csv_resolves_against_data_dir_first_and_ambiguity_is_an_error(tmp_path, monkeypatch):
    data_dir, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    data_dir.mkdir()
    elsewhere.mkdir()
    (data_dir / "s.hdf5").touch()
    (data_dir / "index.csv").write_text(with_required_columns("shard,pdbid,poseid,rmsd\ns.hdf5,wxyz,p2,3.0\n"))
    monkeypatch.chdir(elsewhere)
    assert idx.read_index_csv("index.csv", str(data_dir), 2.0)["complex_id"].tolist() == ["wxyz"]
    # Another file of that name in the working directory: refused, naming both absolute paths.
    (elsewhere / "index.csv").write_text(with_required_columns("shard,pdbid,poseid,rmsd\ns.hdf5,abcd,p1,1.0\n"))
    with pytest.raises(DataError, match=f"{data_dir / 'index.csv'} .*and {elsewhere / 'index.csv'} .*differ"):
        idx.read_index_csv("index.csv", str(data_dir), 2.0)
    # The same bytes there are no ambiguity; missing from data_dir, the working directory's file is read.
    (elsewhere / "index.csv").write_text((data_dir / "index.csv").read_text())
    assert idx.read_index_csv("index.csv", str(data_dir), 2.0)["complex_id"].tolist() == ["wxyz"]
    (data_dir / "index.csv").unlink()
    assert idx.read_index_csv("index.csv", str(data_dir), 2.0)["complex_id"].tolist() == ["wxyz"]
