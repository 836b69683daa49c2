"""`pecan convert` under a launcher (RANK/WORLD_SIZE as torchrun sets them, or Slurm's variables): 2 ranks
write the same shards, index and failures as 1 rank, a killed rank resumes its share, the dry run lists the
shares."""

import os
import signal
import sys

import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from pecan import cli  # noqa: E402
from tests.convert import structures as st  # noqa: E402
from tests.ddp import run_ranks_ok  # noqa: E402
from tests.procs import clean_env, launcher_free, rank_lines, run_ok, running, wait_for, without_modules  # noqa: E402
from tests.same_outputs import same_outputs  # noqa: E402

COMPLEXES = 7


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ranks")
    rows = []
    for k in range(COMPLEXES):
        crystal = st.ligand("NCC(O)CCS", seed=k + 1)
        st.write_receptor(tmp / f"rec{k}.pdb", crystal.GetConformer().GetPositions())
        st.write_sdf(tmp / f"xtal{k}.sdf", [crystal])
        poses = [crystal, st.moved(crystal, translation=(0, 3.0, 0))]
        st.write_sdf(tmp / f"lig{k}.sdf", poses, props=[{"s": -7.5 + k}, {"s": -5.0}])
        row = {
            "complex_id": f"c{k}",
            "receptor": f"rec{k}.pdb",
            "poses": f"lig{k}.sdf",
            "crystal_ligand": f"xtal{k}.sdf",
        }
        rows.append({**row, "score_property": "s"})
    rows.append({"complex_id": "gone", "receptor": "nope.pdb", "poses": "nope.sdf"})
    return st.manifest(tmp / "manifest.csv", rows)


@pytest.fixture(scope="module")
def many(manifest):
    """The same complexes under 4 ids each (28, plus the missing one): at one complex a shard a rank's share is
    14 shards, seconds of work, so a kill after its first shard lands inside its share even on a loaded node."""
    import pandas as pd

    rows = pd.read_csv(manifest, dtype=str, keep_default_na=False)
    docked = rows[rows["complex_id"] != "gone"]
    copies = [docked.assign(complex_id=docked["complex_id"] + f"_{j}") for j in range(4)]
    out = manifest.parent / "manifest_many.csv"
    pd.concat([*copies, rows[rows["complex_id"] == "gone"]]).to_csv(out, index=False)
    return out


def _command(manifest, out, *extra):
    command = [sys.executable, "-m", "pecan", "convert", str(manifest), "--out", str(out)]
    return command + ["--complexes-per-shard", "2", "--progress", "off", *extra]


@pytest.fixture(scope="module")
def one_rank(manifest):
    out = manifest.parent / "one"
    run_ok(_command(manifest, out))
    return out


@pytest.mark.slow
def test_two_ranks_write_what_one_rank_writes(manifest, one_rank, tmp_path):
    out = manifest.parent / "two"
    # Two workers per rank: each shard's complexes are shared among the workers and come back in plan order.
    # torch cannot be imported: the ranks, their share and their workers need none of it (its import is most of
    # a converter process's start-up).
    output = run_ranks_ok(_command(manifest, out, "--workers", "2"), nprocs=2, env=without_modules(tmp_path, "torch"))
    assert "converted 7 complexes" in output  # the last rank to finish (or both, finishing together) merged
    assert sorted(p.name for p in out.glob("*.hdf5")) == [f"converted_{k:04d}.hdf5" for k in range(4)]
    same_outputs(one_rank, out)


@pytest.mark.slow
def test_slurm_ranks_and_a_killed_rank_resumes_its_share(many):
    manifest = many
    out = manifest.parent / "killed"
    base = {k: v for k, v in clean_env().items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    slurm = [
        {
            **base,
            "SLURM_PROCID": str(r),
            "SLURM_NTASKS": "2",
            "SLURM_LOCALID": str(r),
            "SLURM_JOB_NODELIST": "localhost",
            "SLURM_TASKS_PER_NODE": "2",
        }
        for r in range(2)
    ]
    with running(_command(manifest, out, "--complexes-per-shard", "1"), env=slurm[1], merged=True) as rank1:
        wait_for(rank1, lambda: list(out.glob(".converted_*.done.json")))
        os.killpg(rank1.pid, signal.SIGKILL)
    kept = {p.name: p.stat().st_mtime_ns for p in out.glob(".converted_*.done.json")}
    assert 1 <= len(kept) < 14
    rank0 = run_ok(_command(manifest, out, "--complexes-per-shard", "1"), env=slurm[0])
    assert "rank 0 of 2 (slurm)" in rank0 and not (out / "converted_all.csv").exists()
    resumed = run_ok(_command(manifest, out, "--complexes-per-shard", "1"), env=slurm[1])
    assert "shards (" in resumed and (out / "converted_all.csv").exists()
    for name, mtime in kept.items():  # finished shards are not converted again
        assert (out / name).stat().st_mtime_ns == mtime
    # Shard size 1 is another plan than the first run's: compare with a 1-rank run of the same plan.
    again = manifest.parent / "one_per_shard"
    run_ok(_command(manifest, again, "--complexes-per-shard", "1"))
    same_outputs(again, out)


def test_dry_run_lists_each_ranks_share_and_writes_nothing(manifest, monkeypatch, capsys):
    out = manifest.parent / "dry"
    launcher_free(monkeypatch)
    assert cli.main(_command(manifest, out, "--dry-run", "--ranks", "3")[3:]) == 0
    printed = capsys.readouterr().out
    assert rank_lines(printed) == [
        "rank 0 of 3: 2 shards: converted_0000.hdf5(2) converted_0003.hdf5(2)",
        "rank 1 of 3: 1 shards: converted_0001.hdf5(2)",
        "rank 2 of 3: 1 shards: converted_0002.hdf5(2)",
    ]
    assert "4 shards of up to 2 complexes (8 complexes)" in printed and not out.exists()


@pytest.mark.parametrize(
    "env, extra, named",
    [
        ({"RANK": "0"}, (), "WORLD_SIZE"),  # a partial torchrun environment
        ({"SLURM_PROCID": "1", "SLURM_NTASKS": "2", "SLURM_LOCALID": "0"}, (), "SLURM_JOB_NODELIST"),
        ({}, ("--ranks", "2"), "--ranks needs --dry-run"),
    ],
)
def test_a_bad_launcher_environment_or_ranks_without_dry_run_is_exit_2(
    manifest, monkeypatch, capsys, env, extra, named
):
    out = manifest.parent / "bad"
    launcher_free(monkeypatch, **env)
    assert cli.main(_command(manifest, out, *extra)[3:]) == 2  # in-process: the argv after `python -m pecan`
    stderr = capsys.readouterr().err
    assert named in stderr, stderr
    assert not out.exists()
