"""`pecan redock --engine dask` on a real Dask cluster (scheduler and 2 workers as processes): the longest
complexes first by the costs given, a worker killed (SIGKILL) in the middle of a complex has it docked again by
the other, and the output folder holds what one process writes. Vina is replaced by the stub of
tests/dask_cluster.py (sleeps, then writes poses that depend on the job alone), in the workers and here."""

import os
import signal
import sys
import time

import pandas as pd
import pytest

from pecan.redock import dock
from pecan.redock.dock import DockOptions
from pecan.redock.engine import predicted_costs, recorded_seconds
from pecan.redock.run import redock
from tests.procs import clean_env, running, wait_for
from tests.same_outputs import same_outputs

OPTIONS = DockOptions(exhaustiveness=1, n_poses=3, seed=5)
# complex -> seconds its stub docking sleeps; "gone" has no files (a failed record, as in one process)
SLEEPS = {"a": 1.0, "b": 6.0, "c": 0.5, "d": 0.5, "e": 3.0}


def _manifest(folder):
    folder.mkdir()
    rows = []
    for cid, seconds in SLEEPS.items():
        (folder / f"{cid}.pdb").write_text(f"receptor {cid}\n")
        (folder / f"{cid}.sdf").write_text(f"sleep {seconds}\n")
        rows.append({"complex_id": cid, "receptor": f"{cid}.pdb", "crystal_ligand": f"{cid}.sdf"})
    rows.append({"complex_id": "gone", "receptor": "nope.pdb", "crystal_ligand": "nope.sdf"})
    pd.DataFrame(rows).assign(family="f").to_csv(folder / "manifest.csv", index=False)
    # an earlier run's table: its seconds order the complexes (b, e, a first)
    earlier = pd.DataFrame({"complex_id": list(SLEEPS), "seconds": list(SLEEPS.values())})
    earlier.to_csv(folder / "earlier.csv", index=False)
    return folder / "manifest.csv"


def test_costs_come_from_the_earlier_table_and_else_from_the_ligand(tmp_path):
    manifest = _manifest(tmp_path / "in")
    ids = [*SLEEPS, "gone"]
    ligands = [tmp_path / "in" / f"{cid}.sdf" for cid in ids]
    assert recorded_seconds(tmp_path / "in" / "earlier.csv") == SLEEPS
    # no ligand RDKit reads: cost 0 without a table; with one, its seconds (and 0 x scale for the rest)
    assert predicted_costs(ids, ligands) == [0.0] * len(ids)
    assert predicted_costs(ids, ligands, tmp_path / "in" / "earlier.csv") == [*SLEEPS.values(), 0.0]
    bad = tmp_path / "bad.csv"
    bad.write_text("complex_id,secs\na,1\n")
    with pytest.raises(ValueError, match=r"bad.csv: no column seconds"):
        recorded_seconds(bad)
    assert manifest.exists()


def test_engine_options_are_checked(tmp_path, capsys):
    from pecan.commands.redock import main

    manifest = _manifest(tmp_path / "in")
    for argv in (["--engine", "dask"], ["--scheduler-file", "s.json"], ["--costs", "x.csv"]):
        assert main([str(manifest), "--out", str(tmp_path / "o"), *argv]) == 2
        assert "--engine dask needs --scheduler-file" in capsys.readouterr().err
    missing = ["--engine", "dask", "--scheduler-file", str(tmp_path / "none.json")]
    pytest.importorskip("distributed", reason="needs the dist extra: pip install -e '.[dist]'")
    assert main([str(manifest), "--out", str(tmp_path / "o"), "--progress", "off", *missing]) == 2
    assert "none.json: no such file" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_killed_worker_s_complex_is_docked_again_and_the_output_is_one_process_s(tmp_path, monkeypatch):
    pytest.importorskip("distributed", reason="needs the dist extra: pip install -e '.[dist]'")
    from tests.dask_cluster import cluster, starts, stub_dock

    manifest = _manifest(tmp_path / "in")
    monkeypatch.setattr(dock, "_dock", stub_dock)
    one = tmp_path / "one" / "out"
    one.parent.mkdir()
    redock(manifest, one, OPTIONS, progress=False)
    out = tmp_path / "two" / "out"
    out.parent.mkdir()
    command = [sys.executable, "-m", "pecan", "redock", str(manifest), "--out", str(out), "--exhaustiveness", "1"]
    command += ["--n-poses", "3", "--seed", "5", "--progress", "off", "--engine", "dask"]
    with cluster(tmp_path) as (scheduler_file, workers):
        command += ["--scheduler-file", str(scheduler_file), "--costs", str(tmp_path / "in" / "earlier.csv")]
        with running(command, env=clean_env(), merged=True) as client:
            wait_for(client, lambda: any(cid == "b" for _, cid, _ in starts(out)))
            time.sleep(0.5)
            [victim] = [pid for _, cid, pid in starts(out) if cid == "b"]
            assert victim in {w.pid for w in workers}
            os.kill(victim, signal.SIGKILL)
            printed, _ = client.communicate(timeout=120)
        assert client.returncode == 0, printed
    assert "redocked 5 complexes" in printed and "1 failed" in printed
    began = starts(out)
    # handed out longest first: b and e (6 s, 3 s) before any of the short ones
    assert {cid for _, cid, _ in began[:2]} == {"b", "e"}, began
    # b ran twice: on the killed worker, then on the other one
    b_runs = [pid for _, cid, pid in began if cid == "b"]
    assert len(b_runs) == 2 and b_runs[0] == victim and b_runs[1] != victim, began
    same_outputs(one, out, varying=("seconds",))


def test_a_complex_found_finished_by_its_second_run_counts_as_docked_by_this_run():
    from contextlib import contextmanager

    from pecan.redock.engine import RedockEngine

    class Finished:
        """An engine whose job was finished by a worker that died before handing back the result."""

        def describe(self):
            return "fake"

        @contextmanager
        def results_of(self, function, jobs, workers=0):
            yield iter([{"complex_id": job, "reused": True} for job in jobs])

    with RedockEngine(Finished()).results_of(None, ["a", "b"]) as results:
        assert [r["reused"] for r in results] == [False, False]
