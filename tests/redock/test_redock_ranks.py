"""`pecan redock` under a launcher (RANK/WORLD_SIZE as torchrun sets them): 2 ranks write the same poses,
records, receptors and tables as 1 rank, a killed rank resumes its share without redocking what it finished,
the dry run lists the shares. The ProLIF complex 1s2g under three ids (three seeds), Vina at exhaustiveness 1."""

import json
import os
import shutil
import signal
import sys

import pandas as pd
import pytest

pytest.importorskip("vina", reason="needs the dock extra: pip install -e '.[dock]'")
pytest.importorskip("meeko", reason="needs the dock extra: pip install -e '.[dock]'")
pytest.importorskip("prolif", reason="the test complex ships with ProLIF (convert extra)")
if shutil.which("obabel") is None:
    pytest.skip("receptor preparation needs Open Babel's obabel (apt-get install openbabel)", allow_module_level=True)

from pecan import cli  # noqa: E402
from pecan.convert.examples import prolif_data  # noqa: E402
from tests.ddp import free_port, rank_env, run_ranks_ok  # noqa: E402
from tests.procs import launcher_free, rank_lines, run_ok, running, wait_for, without_modules  # noqa: E402
from tests.same_outputs import same_outputs  # noqa: E402

# Wall-clock times, and whether a complex was found finished (the resumed run's own fact).
VARYING = ("seconds", "reused")


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ranks")
    data = prolif_data() / "implicitHbond"
    rows = [{"complex_id": c, "receptor": data / "receptor.pdb", "crystal_ligand": data / "1.D.sdf"} for c in "abc"]
    rows.append({"complex_id": "gone", "receptor": tmp / "nope.pdb", "crystal_ligand": tmp / "nope.sdf"})
    pd.DataFrame(rows).assign(family="f").to_csv(tmp / "manifest.csv", index=False)
    return tmp / "manifest.csv"


def _command(manifest, out, *extra):
    command = [sys.executable, "-m", "pecan", "redock", str(manifest), "--out", str(out), "--exhaustiveness", "1"]
    return command + ["--n-poses", "3", "--seed", "5", "--progress", "off", *extra]


@pytest.fixture(scope="module")
def one_rank(manifest):
    out = manifest.parent / "one"
    run_ok(_command(manifest, out))
    return out


@pytest.mark.slow
def test_two_ranks_write_what_one_rank_writes(manifest, one_rank, tmp_path):
    out = manifest.parent / "two"
    # torch cannot be imported: the ranks, their share and Vina's search processes need none of it.
    output = run_ranks_ok(_command(manifest, out), nprocs=2, env=without_modules(tmp_path, "torch"))
    assert "redocked 3 complexes" in output  # the last rank to finish (or both, finishing together) merged
    same_outputs(one_rank, out, varying=("seconds",))  # poses and receptors byte for byte


@pytest.mark.slow
def test_a_killed_rank_resumes_its_share(manifest, one_rank):
    out = manifest.parent / "killed"
    port = free_port()
    # rank 0 docks a, then c: killed (with its Vina child) once a is finished
    with running(_command(manifest, out), env=rank_env(0, 2, port), merged=True) as rank0:
        wait_for(rank0, lambda: (out / "records" / "a.json").exists())
        os.killpg(rank0.pid, signal.SIGKILL)
    assert not (out / "records" / "c.json").exists()
    # What a kill can leave mid-way through c (its search's and receptor preparation's folders, a half-written
    # poses file): the rerun of rank 0 removes it.
    for leftover in (
        "receptors/.search-c-k1/ligand.pdbqt",
        "receptors/.prepare-c-k2/receptor.pdb",
        "poses/.c.sdf.k3.tmp",
    ):
        (out / leftover).parent.mkdir(parents=True, exist_ok=True)
        (out / leftover).write_text("half")
    finished_at = (out / "records" / "a.json").stat().st_mtime_ns
    rank1 = run_ok(_command(manifest, out), env=rank_env(1, 2, port))
    assert "rank 1 of 2 (torchrun): redocked its share" in rank1 and not (out / "redock.csv").exists()
    resumed = run_ok(_command(manifest, out), env=rank_env(0, 2, port))
    assert "redocked 3 complexes" in resumed
    assert (out / "records" / "a.json").stat().st_mtime_ns == finished_at  # not docked again
    table = pd.read_csv(out / "redock.csv").set_index("complex_id")
    assert table["reused"].to_dict() == {"a": True, "b": False, "c": False, "gone": False}
    assert json.loads((out / "records" / "c.json").read_text())["status"] == "ok"
    same_outputs(one_rank, out, varying=VARYING)


def test_dry_run_lists_each_ranks_share_and_docks_nothing(manifest, monkeypatch, capsys):
    out = manifest.parent / "dry"
    launcher_free(monkeypatch)
    assert cli.main(_command(manifest, out, "--dry-run", "--ranks", "3")[3:]) == 0  # the argv after `python -m pecan`
    assert rank_lines(capsys.readouterr().out) == [
        "rank 0 of 3: 2 complexes: a gone",
        "rank 1 of 3: 1 complexes: b",
        "rank 2 of 3: 1 complexes: c",
    ]
    assert not out.exists()
