"""Redocking a real complex shipped with ProLIF (PLINDER 1s2g: receptor.pdb + the crystal ligand 1.D.sdf)."""

import json
import shutil

import pandas as pd
import pytest

pytest.importorskip("vina", reason="needs the dock extra: pip install -e '.[dock]'")
pytest.importorskip("meeko", reason="needs the dock extra: pip install -e '.[dock]'")
pytest.importorskip("prolif", reason="the test complex ships with ProLIF (convert extra)")
if shutil.which("obabel") is None:
    pytest.skip("receptor preparation needs Open Babel's obabel (apt-get install openbabel)", allow_module_level=True)

from rdkit import Chem

from pecan.cli import main as pecan_main
from pecan.convert.complexes import Options
from pecan.convert.examples import prolif_data
from pecan.convert.run import convert
from pecan.redock.dock import DockOptions
from pecan.redock.run import redock

OPTIONS = DockOptions(exhaustiveness=1, n_poses=3, seed=5)


def _manifest(tmp_path, extra_rows=()):
    data = prolif_data() / "implicitHbond"
    rows = [
        {
            "complex_id": "1s2g",
            "receptor": str(data / "receptor.pdb"),
            "crystal_ligand": str(data / "1.D.sdf"),
            "family": "test-family",
        },
        *extra_rows,
    ]
    path = tmp_path / "manifest.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def docked(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("redock")
    missing = {
        "complex_id": "gone",
        "receptor": str(tmp / "nope.pdb"),
        "crystal_ligand": str(tmp / "nope.sdf"),
        "family": "x",
    }
    summary = redock(_manifest(tmp, [missing]), tmp / "out", OPTIONS, progress=False)
    return summary, tmp / "out"


@pytest.mark.slow
def test_poses_carry_the_vina_score_and_start_away_from_the_crystal(docked):
    summary, out = docked
    assert summary["complexes"] == 1 and summary["failed"] == 1 and summary["reused"] == 0
    poses = list(Chem.SDMolSupplier(str(out / "poses" / "1s2g.sdf")))
    assert 1 <= len(poses) <= 3 and summary["poses"] == len(poses)
    scores = [float(m.GetProp("docking_score")) for m in poses]
    assert scores == sorted(scores) and scores[0] < 0  # Vina ranks best (most negative) first
    assert [m.GetProp("_Name") for m in poses] == [f"1s2g_pose{k}" for k in range(1, len(poses) + 1)]
    record = json.loads((out / "records" / "1s2g.json").read_text())
    table = pd.read_csv(out / "redock.csv")
    row = table[table["complex_id"] == "1s2g"].iloc[0]
    assert row["seed"] == record["seed"] and record["seed"] != 0
    assert record["start_rmsd_to_crystal"] > 0.1  # the ETKDG start is not the crystal geometry


def test_failures_are_listed_and_do_not_stop_the_run(docked):
    _, out = docked
    failures = pd.read_csv(out / "failures.csv")
    assert list(failures["complex_id"]) == ["gone"] and "file not found" in failures["reason"].iloc[0]
    manifest = pd.read_csv(out / "manifest.csv")
    assert list(manifest["complex_id"]) == ["1s2g"]  # only docked complexes go to the converter


def test_converter_accepts_the_manifest(docked, tmp_path):
    _, out = docked
    manifest = pd.read_csv(out / "manifest.csv")
    assert manifest["score_property"].iloc[0] == "docking_score" and manifest["family"].iloc[0] == "test-family"
    summary = convert(out / "manifest.csv", tmp_path / "shards", Options(), progress=False)
    poses = list(Chem.SDMolSupplier(str(out / "poses" / "1s2g.sdf")))
    assert summary["complexes"] == 1 and summary["poses"] == len(poses) and summary["skipped_poses"] == 0
    index = pd.read_csv(tmp_path / "shards" / "converted_all.csv")
    docked_rows = index[index["is_crystal"] == 0].set_index("poseid")
    for mol in poses:  # the converter read every pose's score and labelled it from its RMSD to the crystal
        row = docked_rows.loc[mol.GetProp("_Name")]
        assert row["score"] == pytest.approx(float(mol.GetProp("docking_score")))
        assert row["label"] == int(row["rmsd"] < 2.0)


@pytest.mark.slow
def test_rerun_skips_finished_complexes_and_redocks_changed_ones(docked):
    _, out = docked
    manifest = _manifest(out.parent)
    sdf = out / "poses" / "1s2g.sdf"
    before = sdf.stat().st_mtime_ns
    again = redock(manifest, out, OPTIONS, progress=False)
    assert again["reused"] == 1 and sdf.stat().st_mtime_ns == before
    changed = redock(manifest, out, DockOptions(exhaustiveness=1, n_poses=2, seed=5), progress=False, replace=True)
    assert changed["reused"] == 0 and sdf.stat().st_mtime_ns != before
    assert len(list(Chem.SDMolSupplier(str(sdf)))) <= 2


def test_command_line(docked, tmp_path, capsys):
    _, out = docked
    bad = tmp_path / "bad.csv"
    pd.DataFrame([{"complex_id": "a", "receptor": "r.pdb"}]).to_csv(bad, index=False)
    assert pecan_main(["redock", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "missing column(s) crystal_ligand" in capsys.readouterr().err
    assert pecan_main(["redock", str(bad), "--out", str(tmp_path / "o"), "--n-poses", "0"]) == 2
    # The command line's settings below, finished once through the API (whichever tests ran before).
    redock(_manifest(out.parent), out, DockOptions(exhaustiveness=1, n_poses=2, seed=5), progress=False, replace=True)
    code = pecan_main(
        [
            "redock",
            str(_manifest(out.parent)),
            "--out",
            str(out),
            "--exhaustiveness",
            "1",
            "--n-poses",
            "2",
            "--seed",
            "5",
            "--no-progress",
        ]
    )
    assert code == 0 and "1 already finished" in capsys.readouterr().out


@pytest.mark.slow
def test_a_search_past_the_timeout_is_a_recorded_failure_and_the_next_run_redocks_it(tmp_path):
    # Vina's search runs in a child process killed at --timeout; the complex is a failed record, not a hang.
    manifest = _manifest(tmp_path)
    slow = DockOptions(exhaustiveness=8, n_poses=3, seed=5, timeout=0.5)
    summary = redock(manifest, tmp_path / "out", slow, progress=False)
    assert summary["complexes"] == 0 and summary["failed"] == 1
    failures = pd.read_csv(tmp_path / "out" / "failures.csv")
    assert "timed out" in failures["reason"].iloc[0] and "--timeout 0.5" in failures["reason"].iloc[0]
    # A generous limit gives the same poses as no limit (the timeout is not part of a finished complex's key).
    limited = redock(manifest, tmp_path / "lim", DockOptions(**{**OPTIONS.__dict__, "timeout": 300}), progress=False)
    unlimited = redock(manifest, tmp_path / "lim", OPTIONS, progress=False)
    assert limited["complexes"] == 1 and unlimited["reused"] == 1


def test_a_crystal_ligand_collapsed_to_one_point_fails_at_once(tmp_path):
    mol = Chem.MolFromSmiles("CCO")
    conformer = Chem.Conformer(mol.GetNumAtoms())  # every atom at the origin
    mol.AddConformer(conformer)
    Chem.MolToMolFile(mol, str(tmp_path / "flat.sdf"))
    data = prolif_data() / "implicitHbond"
    rows = [
        {"complex_id": "flat", "receptor": str(data / "receptor.pdb"), "crystal_ligand": str(tmp_path / "flat.sdf")}
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "m.csv", index=False)
    summary = redock(tmp_path / "m.csv", tmp_path / "out", OPTIONS, progress=False)
    reason = pd.read_csv(tmp_path / "out" / "failures.csv")["reason"].iloc[0]
    assert summary["failed"] == 1 and "degenerate geometry" in reason and "flat.sdf" in reason
    record = json.loads((tmp_path / "out" / "records" / "flat.json").read_text())
    assert record["seconds"] < 30


@pytest.mark.slow
def test_a_rerun_lists_every_finished_complex_before_it_docks_anything(docked, monkeypatch):
    """The tables of a rerun start complete: a converter reading manifest.csv meanwhile never sees only the
    complexes this run has visited so far."""
    from contextlib import contextmanager

    from pecan.redock import run as redock_run

    _, out = docked
    redock(_manifest(out.parent), out, OPTIONS, progress=False, replace=True)  # 1s2g finished with these options
    # Another manifest with the same options: the plan grows (finished complexes kept), no --replace needed.
    manifest = _manifest(out.parent, [{"complex_id": "later", "receptor": "r.pdb", "crystal_ligand": "l.sdf"}])
    seen = []

    @contextmanager
    def watching(function, jobs, workers):
        seen.append(pd.read_csv(out / "manifest.csv", dtype=str)["complex_id"].tolist())
        assert [job.complex_id for job in jobs] == ["later"]  # only the unfinished complex goes to the pool
        yield map(function, jobs)

    monkeypatch.setattr(redock_run, "results_of", watching)
    summary = redock(manifest, out, OPTIONS, progress=False)
    assert seen == [["1s2g"]] and summary["reused"] == 1
