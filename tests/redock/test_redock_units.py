"""Redocking pieces that need no docking program: the box, the seeds, the manifest checks."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pecan.redock.dock import DockJob, DockOptions
from pecan.redock.prepare import box_around
from pecan.redock.run import read_manifest


def test_box_is_the_ligand_extent_plus_padding_or_a_fixed_cube():
    xyz = np.array([[0.0, 0.0, 0.0], [4.0, 2.0, -6.0]])
    box = box_around(xyz, padding=4.0)
    assert box.center == (2.0, 1.0, -3.0) and box.size == (12.0, 10.0, 14.0)
    assert box_around(xyz, padding=4.0, fixed_size=20.0).size == (20.0, 20.0, 20.0)


def test_seed_is_stable_per_complex_never_zero_and_overridable(tmp_path):
    def job(name, seed=None, run_seed=1):
        return DockJob(name, tmp_path / "r.pdb", tmp_path / "l.sdf", tmp_path, DockOptions(seed=run_seed), seed)

    assert job("1abc").complex_seed == job("1abc").complex_seed != job("2xyz").complex_seed
    assert job("1abc", run_seed=2).complex_seed != job("1abc").complex_seed
    assert job("1abc", seed=42).complex_seed == 42
    assert all(job(f"c{k}").complex_seed > 0 for k in range(50))


def test_key_changes_with_inputs_and_options(tmp_path):
    (tmp_path / "r.pdb").write_text("ATOM\n")
    (tmp_path / "l.sdf").write_text("x\n")
    first = DockJob("a", tmp_path / "r.pdb", tmp_path / "l.sdf", tmp_path, DockOptions())
    same = DockJob("a", tmp_path / "r.pdb", tmp_path / "l.sdf", tmp_path, DockOptions())
    other = DockJob("a", tmp_path / "r.pdb", tmp_path / "l.sdf", tmp_path, DockOptions(exhaustiveness=4))
    before = first.key
    assert before == same.key != other.key
    (tmp_path / "r.pdb").write_text("ATOM changed\n")
    assert first.key != before  # the key follows the file's content, not its name


@pytest.mark.parametrize(
    "rows, message",
    [
        ([{"complex_id": "a", "receptor": "r.pdb"}], "missing column(s) crystal_ligand"),
        ([{"complex_id": "a", "receptor": "r", "crystal_ligand": "l"}] * 2, "'a' appears more than once"),
        ([{"complex_id": "../a", "receptor": "r", "crystal_ligand": "l"}], "cannot be a file name"),
    ],
)
def test_bad_manifest_names_the_file_and_the_problem(tmp_path, rows, message):
    path = tmp_path / "m.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    with pytest.raises(ValueError, match="m.csv") as err:
        read_manifest(path)
    assert message in str(err.value)


def test_relative_paths_resolve_against_the_manifest(tmp_path):
    path = tmp_path / "sub" / "m.csv"
    path.parent.mkdir()
    pd.DataFrame([{"complex_id": "a", "receptor": "in/r.pdb", "crystal_ligand": "/abs/l.sdf"}]).to_csv(
        path, index=False
    )
    frame = read_manifest(path)
    assert Path(frame["receptor"].iloc[0]) == (tmp_path / "sub" / "in" / "r.pdb").resolve()
    assert frame["crystal_ligand"].iloc[0] == "/abs/l.sdf"
