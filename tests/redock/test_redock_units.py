"""Redocking pieces that need no docking program: the box, the seeds, the manifest checks."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pecan.redock.dock import DockJob, DockOptions, finished
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


def test_a_record_written_before_the_rename_reads_its_best_docking_score(tmp_path):
    (tmp_path / "r.pdb").write_text("ATOM\n")
    (tmp_path / "l.sdf").write_text("x\n")
    job = DockJob("a", tmp_path / "r.pdb", tmp_path / "l.sdf", tmp_path, DockOptions())
    job.poses_path.parent.mkdir(parents=True)
    job.poses_path.write_text("")
    job.record_path.parent.mkdir(parents=True)
    old = {"complex_id": "a", "key": job.key, "status": "ok", "poses": 3, "best_score": -9.5}
    job.record_path.write_text(json.dumps(old))  # as studies/*/docked/records/*.json still are
    record = finished(job)
    assert record["best_docking_score"] == -9.5 and "best_score" not in record


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
        ([{"complex_id": "../a", "receptor": "r", "crystal_ligand": "l"}], "line 2: complex_id '../a' cannot name"),
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


def test_residues_with_elements_vina_cannot_type_are_left_out(tmp_path, caplog):
    from pecan.redock.prepare import clean_receptor_lines

    def atom(serial, name, residue, number, element, record="ATOM  "):
        return f"{record}{serial:5d} {name:<4} {residue} A{number:4d}    {1.0:8.3f}{2.0:8.3f}{3.0:8.3f}  1.00  0.00" + (
            f"          {element:>2}"
        )

    lines = [
        atom(1, "CA", "ALA", 1, "C"),
        atom(2, "ZN", " ZN", 2, "ZN", "HETATM"),
        atom(3, "V", "VO4", 3, "V", "HETATM"),
        atom(4, "O1", "VO4", 3, "O", "HETATM"),
        atom(5, "O", "HOH", 4, "O", "HETATM"),
    ]
    receptor = tmp_path / "r.pdb"
    receptor.write_text("\n".join(lines) + "\nEND\n")
    kept = clean_receptor_lines(receptor)
    assert [line[17:20] for line in kept] == ["ALA", " ZN"]  # the whole vanadate goes, the zinc stays
    assert "VO4 A 3" in caplog.text and "cannot type" in caplog.text
