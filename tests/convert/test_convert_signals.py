"""A real `python -m pecan convert --workers 2` stopped by SIGINT or SIGTERM (to it alone or to its process
group): exit 130/143 with one line saying how to resume, no traceback, no worker left, the finished shards
kept and reused by the rerun."""

import signal
import sys

import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from tests.convert import structures as st  # noqa: E402
from tests.procs import group_left, run_checked, running, signal_when  # noqa: E402

COMPLEXES = 16


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    """The inputs, read and never changed: both stops convert them."""
    tmp = tmp_path_factory.mktemp("inputs")
    rows = []
    for k in range(COMPLEXES):
        crystal = st.ligand("NCC(O)CCS", seed=k + 1)
        st.write_receptor(tmp / f"rec{k}.pdb", crystal.GetConformer().GetPositions())
        st.write_sdf(tmp / f"lig{k}.sdf", [crystal])
        rows.append({"complex_id": f"c{k}", "receptor": f"rec{k}.pdb", "poses": f"lig{k}.sdf"})
    return st.manifest(tmp / "manifest.csv", rows)


def _convert(manifest, out):
    command = [sys.executable, "-m", "pecan", "convert", str(manifest), "--out", str(out)]
    return command + ["--workers", "2", "--complexes-per-shard", "1", "--progress", "off"]


@pytest.mark.slow
@pytest.mark.parametrize("number, to_group", [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_a_stopped_conversion_keeps_finished_shards_and_resumes(manifest, tmp_path, number, to_group):
    out = tmp_path / "out"
    with running(_convert(manifest, out)) as process:
        stdout, stderr, _ = signal_when(process, lambda: list(out.glob(".*.done.json")), number, to_group)
    assert process.returncode == 128 + number, stdout + stderr
    # Third-party import warnings (MDAnalysis' deprecation note) are not this test's subject.
    noise = ("[pecan]", "DeprecationWarning", "MDAnalysis", "warnings.warn")
    lines = [line for line in stderr.splitlines() if line.strip() and not any(n in line for n in noise)]
    assert "Traceback" not in stderr and len(lines) == 1, stderr
    assert (
        lines[0].startswith(f"stopped by {signal.Signals(number).name}") and "resume with the same command" in lines[0]
    )
    assert group_left(process.pid) == []
    kept = len(list(out.glob(".*.done.json")))
    assert 1 <= kept < COMPLEXES

    stdout = run_checked(_convert(manifest, out)).stdout
    assert f"({kept} reused)" in stdout and f"converted {COMPLEXES} complexes" in stdout
    assert sorted(set(pd.read_csv(out / "converted_all.csv")["pdbid"])) == sorted(f"c{k}" for k in range(COMPLEXES))
