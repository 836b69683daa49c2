"""A real `python -m pecan redock` stopped by SIGINT or SIGTERM, sent to it alone or to its whole process group
(Ctrl-C, a batch system's step cleanup): exit 130/143 with one line saying how to resume, no traceback, no
process left, the finished complexes kept, the ones in flight recorded as interrupted, and a rerun finishing
the rest."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("vina", reason="needs the dock extra: pip install -e '.[dock]'")
pytest.importorskip("meeko", reason="needs the dock extra: pip install -e '.[dock]'")

from rdkit import Chem
from rdkit.Chem import AllChem

from tests.procs import group_left, group_members, run_checked, running, signal_when

LIGANDS = {"a": "CCO", "b": "OCCCCCCO", "c": "CCCO"}
OPTIONS = ["--exhaustiveness", "1", "--n-poses", "2", "--progress", "off"]


def _pocket_pdbqt(path: Path) -> None:
    # A shell of carbon and oxygen atoms 7 A around the origin, already typed for Vina (no Open Babel needed).
    points = np.random.default_rng(0).normal(size=(160, 3))
    points = 7.0 * points / np.linalg.norm(points, axis=1, keepdims=True)
    lines = []
    for k, (x, y, z) in enumerate(points, 1):
        element, ad_type = ("O", "OA") if k % 5 == 0 else ("C", "C")
        lines.append(
            f"ATOM  {k:5d}  {element:<3s} GLY A{k:4d}    {x:8.3f}{y:8.3f}{z:8.3f}  1.00  0.00     0.000 {ad_type}"
        )
    path.write_text("\n".join(lines) + "\n")


def _ligand_sdf(smiles: str, path: Path) -> None:
    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    AllChem.EmbedMolecule(mol, randomSeed=1)
    conformer = mol.GetConformer()
    xyz = conformer.GetPositions()
    for k, position in enumerate(xyz - xyz.mean(0)):
        conformer.SetAtomPosition(k, position.tolist())
    Chem.MolToMolFile(mol, str(path))


@pytest.fixture
def manifest(tmp_path):
    _pocket_pdbqt(tmp_path / "pocket.pdbqt")
    rows = []
    for name, smiles in LIGANDS.items():
        _ligand_sdf(smiles, tmp_path / f"{name}.sdf")
        rows.append({"complex_id": name, "receptor": "pocket.pdbqt", "crystal_ligand": f"{name}.sdf"})
    pd.DataFrame(rows).to_csv(tmp_path / "manifest.csv", index=False)
    return tmp_path / "manifest.csv"


def _redock(manifest: Path, out: Path, workers: int) -> list[str]:
    command = [sys.executable, "-m", "pecan", "redock", str(manifest), "--out", str(out), "--workers", str(workers)]
    return [*command, *OPTIONS]


def _searching(process: subprocess.Popen) -> bool:
    """Whether Vina's search runs in a child process of ``process``'s group."""
    return any("pecan.redock.child" in c for c in group_members(process.pid))


def _a_search_runs_after_one_finished(process: subprocess.Popen, out: Path):
    """A check for ``signal_when``: true once a complex has finished and Vina's search of another runs (its child
    process seen, or 1 s passed for a search in the same process)."""
    first_done = []

    def ready() -> bool:
        if not first_done and any(
            json.loads(p.read_text())["status"] == "ok" for p in (out / "records").glob("*.json")
        ):
            first_done.append(time.monotonic())
        return bool(first_done) and (time.monotonic() - first_done[0] > 1.0 or _searching(process))

    return ready


@pytest.mark.slow
@pytest.mark.parametrize(
    "number, to_group, workers",
    [
        (signal.SIGINT, False, 1),
        (signal.SIGTERM, False, 2),
        (signal.SIGINT, True, 2),
        (signal.SIGTERM, True, 1),
    ],
    ids=["sigint-1-worker", "sigterm-2-workers", "sigint-to-group-2-workers", "sigterm-to-group-1-worker"],
)
def test_a_stopped_redock_keeps_what_finished_records_what_was_cut_and_resumes(manifest, number, to_group, workers):
    out = manifest.parent / "out"
    with running(_redock(manifest, out, workers)) as process:
        ready = _a_search_runs_after_one_finished(process, out)
        stdout, stderr, took = signal_when(process, ready, number, to_group)
    assert took < 30  # not the rest of a search
    assert process.returncode == 128 + number, stdout + stderr
    assert "Traceback" not in stdout + stderr and "Error" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"stopped by {signal.Signals(number).name}"), stderr
    assert "resume with the same command: pecan redock" in lines[0] and str(manifest) in lines[0]
    assert group_left(process.pid) == []  # no worker, no docking child left
    assert not list(out.glob("*/.*"))  # no search folder or half-written poses file of a killed search

    records = {p.stem: json.loads(p.read_text()) for p in (out / "records").glob("*.json")}
    statuses = sorted(r["status"] for r in records.values())
    assert "ok" in statuses and "interrupted" in statuses and set(statuses) <= {"ok", "interrupted"}
    for name, record in records.items():
        assert (out / "poses" / f"{name}.sdf").exists() == (record["status"] == "ok")
    failures = pd.read_csv(out / "failures.csv")
    cut = sorted(n for n, r in records.items() if r["status"] == "interrupted")
    assert sorted(failures["complex_id"]) == cut
    assert failures["reason"].str.contains(f"interrupted by {signal.Signals(number).name}").all()
    docked = sorted(pd.read_csv(out / "manifest.csv")["complex_id"])
    assert docked == sorted(n for n, r in records.items() if r["status"] == "ok")

    run_checked(_redock(manifest, out, workers), timeout=240)
    table = pd.read_csv(out / "redock.csv")
    assert sorted(table["complex_id"]) == sorted(LIGANDS) and (table["status"] == "ok").all()
    assert set(table[table["reused"]]["complex_id"]) == set(docked)  # the finished ones were not redocked
    assert not (out / "failures.csv").read_text().strip().split("\n")[1:]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_a_long_search_is_stopped_at_once_not_waited_for(tmp_path, workers):
    """Ctrl-C during a search of minutes ends the command in seconds, the complex recorded as interrupted."""
    _pocket_pdbqt(tmp_path / "pocket.pdbqt")
    _ligand_sdf("OC(=O)CCCCCCCCCCCC(=O)O", tmp_path / "long.sdf")  # 13 rotatable bonds: a long search
    rows = [{"complex_id": "long", "receptor": "pocket.pdbqt", "crystal_ligand": "long.sdf"}]
    pd.DataFrame(rows).to_csv(tmp_path / "manifest.csv", index=False)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "pecan", "redock", str(tmp_path / "manifest.csv"), "--out", str(out)]
    command += ["--workers", str(workers), "--exhaustiveness", "64", "--n-poses", "2", "--progress", "off"]
    with running(command) as process:
        searching_since = []  # Vina is searching once its child has run for 1 s

        def searching_a_second() -> bool:
            if not searching_since and _searching(process):
                searching_since.append(time.monotonic())
            return bool(searching_since) and time.monotonic() - searching_since[0] > 1.0

        _, stderr, took = signal_when(process, searching_a_second, signal.SIGINT, to_group=True)
    assert took < 15, "the stop waited for the search"
    assert process.returncode == 130 and "Traceback" not in stderr, stderr
    assert "0 complexes docked and kept, 1 interrupted" in stderr
    assert json.loads((out / "records" / "long.json").read_text())["status"] == "interrupted"
    assert group_left(process.pid) == []
