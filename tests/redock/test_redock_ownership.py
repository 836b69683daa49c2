"""Who owns `pecan redock`'s --out (no docking program needed: the complexes' files are missing, so each fails
at once and only the folder's ownership is at stake): ranks given different options exit 2 naming the option
and both values; a folder of another plan is refused unless --replace; a rerun of the same plan resumes."""

import subprocess
import sys

import pandas as pd
import pytest

from pecan import cli
from tests.ddp import free_port, rank_env, run_ranks
from tests.procs import clean_env, launcher_free


@pytest.fixture
def manifest(tmp_path):
    path = tmp_path / "manifest.csv"
    path.write_text("complex_id,receptor,crystal_ligand\na,nope.pdb,nope.sdf\nb,nope2.pdb,nope2.sdf\n")
    return path


def _argv(manifest, out, *extra):
    return ["redock", str(manifest), "--out", str(out), "--progress", "off", *extra]


@pytest.mark.multiprocess
def test_ranks_given_different_box_padding_exit_2_naming_it(manifest, tmp_path):
    out = tmp_path / "out"
    port, ranks = free_port(), []
    for rank, padding in ((0, "4"), (1, "6")):
        env = rank_env(rank, 2, port, {**clean_env(), "TORCHELASTIC_RUN_ID": "launch-1"})
        command = [sys.executable, "-m", "pecan", *_argv(manifest, out, "--box-padding", padding)]
        ranks.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [process.communicate(timeout=300)[0] for process in ranks]
    codes = [process.returncode for process in ranks]
    assert sorted(codes) == [0, 2], outputs  # the agreeing rank did its share and left the tables to the last
    refused = outputs[codes.index(2)]
    assert "the ranks of this run disagree" in refused and "--box-padding" in refused, refused
    assert ("4.0 there, 6.0 here" in refused) or ("6.0 there, 4.0 here" in refused), refused
    assert not (out / "redock.csv").exists() and not (out / "manifest.csv").exists()


def test_another_plan_is_refused_unless_replace_and_the_same_plan_resumes(manifest, tmp_path, monkeypatch, capsys):
    launcher_free(monkeypatch)
    out = tmp_path / "out"
    assert cli.main(_argv(manifest, out)) == 1  # every complex failed, the tables are written
    assert cli.main(_argv(manifest, out)) == 1  # the same plan again: a rerun, as before
    capsys.readouterr()
    (out / "records" / "stray.json").write_text("{}")
    assert cli.main(_argv(manifest, out, "--seed", "9")) == 2
    err = capsys.readouterr().err
    assert "holds the outputs of another plan: --seed 1 there, 9 here" in err and "--replace" in err, err
    assert (out / "records" / "stray.json").exists() and (out / "redock.csv").exists()
    assert cli.main(_argv(manifest, out, "--seed", "9", "--replace")) == 1
    assert not (out / "records" / "stray.json").exists()  # the earlier plan's records went with it
    assert (out / "redock.csv").exists()


@pytest.mark.multiprocess
def test_progress_lines_under_two_ranks_carry_the_rank(manifest, tmp_path):
    command = [sys.executable, "-m", "pecan", *_argv(manifest, tmp_path / "out")][:-2] + ["--progress", "lines"]
    codes, output = run_ranks(command, nprocs=2, check=False)  # every complex fails: a merging rank exits 1
    assert 1 in codes and set(codes) <= {0, 1}, output  # (both merge when they finish together)
    lines = [line for line in output.splitlines() if " complex" in line and "| " in line]
    assert {line.split(":")[0].strip() for line in lines} == {"redocking (rank 0 of 2)", "redocking (rank 1 of 2)"}


@pytest.mark.multiprocess
def test_a_ranks_failures_are_in_failures_csv_before_the_last_rank_finishes(manifest, tmp_path):
    out, port = tmp_path / "out", free_port()
    command = [sys.executable, "-m", "pecan", *_argv(manifest, out)]
    first = subprocess.run(command, env=rank_env(0, 2, port), capture_output=True, text=True, timeout=300)
    assert first.returncode == 0 and not (out / "redock.csv").exists(), first.stderr[-3000:]
    failures = pd.read_csv(out / "failures.csv", keep_default_na=False)
    assert list(failures["complex_id"]) == ["a"] and failures["reason"][0]  # rank 1 (complex b) has not started
    last = subprocess.run(command, env=rank_env(1, 2, port), capture_output=True, text=True, timeout=300)
    assert last.returncode == 1 and (out / "redock.csv").exists(), last.stderr[-3000:]  # nothing docked: exit 1
    assert list(pd.read_csv(out / "failures.csv", keep_default_na=False)["complex_id"]) == ["a", "b"]
