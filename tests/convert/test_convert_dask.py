"""`pecan convert --engine dask` on a real Dask cluster (scheduler and 2 workers as processes): a worker killed
(SIGKILL) while the complexes are converted has its jobs converted again by the other, and the shards, index
and failures are what one process writes."""

import os
import signal
import sys

import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from tests.convert import structures as st  # noqa: E402
from tests.procs import clean_env, run_ok, running, wait_for  # noqa: E402
from tests.same_outputs import same_outputs  # noqa: E402


def _manifest(folder):
    folder.mkdir()
    rows = []
    for k in range(5):
        crystal = st.ligand("NCC(O)CCS", seed=k + 1)
        st.write_receptor(folder / f"rec{k}.pdb", crystal.GetConformer().GetPositions())
        st.write_sdf(folder / f"xtal{k}.sdf", [crystal])
        poses = [crystal, *(st.moved(crystal, translation=(0, 1.0 + j, 0)) for j in range(k + 1))]
        st.write_sdf(folder / f"lig{k}.sdf", poses, props=[{"s": -7.5 + k}] * len(poses))
        row = {"receptor": f"rec{k}.pdb", "poses": f"lig{k}.sdf", "crystal_ligand": f"xtal{k}.sdf"}
        rows += [{"complex_id": f"c{k}_{j}", **row, "score_property": "s"} for j in range(4)]
    rows.append({"complex_id": "gone", "receptor": "nope.pdb", "poses": "nope.sdf"})
    return st.manifest(folder / "manifest.csv", rows)


def _command(manifest, out, *extra):
    command = [sys.executable, "-m", "pecan", "convert", str(manifest), "--out", str(out)]
    return command + ["--complexes-per-shard", "3", "--progress", "off", *extra]


def test_engine_options_are_checked(tmp_path, capsys):
    from pecan.commands.convert import main

    for argv in (["--engine", "dask"], ["--scheduler-file", "s.json"]):
        assert main(["m.csv", "--out", str(tmp_path / "o"), *argv]) == 2
        assert "--engine dask needs --scheduler-file" in capsys.readouterr().err


def test_the_largest_poses_file_counts_most(tmp_path):
    from pecan.convert.engine import complex_cost
    from pecan.convert.run import ComplexJob

    manifest = _manifest(tmp_path / "in")
    from pecan.convert.complexes import Options, read_manifest

    entries = read_manifest(manifest)
    costs = {e.complex_id: complex_cost(ComplexJob(0, 0, e, Options())) for e in entries}
    assert costs["gone"] == 0.0
    assert costs["c4_0"] > costs["c2_0"] > costs["c0_0"] > 0  # 6, 4 and 2 poses
    assert pd.read_csv(manifest)["complex_id"].size == 21


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_killed_worker_s_complexes_are_converted_again_and_the_output_is_one_process_s(tmp_path):
    pytest.importorskip("distributed", reason="needs the dist extra: pip install -e '.[dist]'")
    from tests.dask_cluster import cluster

    manifest = _manifest(tmp_path / "in")
    one = tmp_path / "one"
    run_ok(_command(manifest, one))
    out = tmp_path / "two"
    with cluster(tmp_path) as (scheduler_file, workers):
        command = _command(manifest, out, "--engine", "dask", "--scheduler-file", str(scheduler_file))
        with running(command, env=clean_env(), merged=True) as client:
            wait_for(client, lambda: any(out.glob(".converted_*.done.json")))
            assert client.poll() is None, "finished before a worker could be killed"
            os.kill(workers[0].pid, signal.SIGKILL)
            printed, _ = client.communicate(timeout=180)
        assert client.returncode == 0, printed
        assert workers[0].wait(10) == -signal.SIGKILL
    assert "converted 20 complexes" in printed, printed
    same_outputs(one, out)
