"""What `pecan sources` writes: pdbbind never writes over what it reads (an --out naming an INDEX file or a kept
complex's ligand or receptor is exit 2 naming both, the file left as it was); a crossdocked rerun leaves no fold
file of an earlier run behind, and its --out is locked as training's out_dir is."""

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")

from pecan.commands.sources import main  # noqa: E402
from tests.sources.test_crossdocked import crossdocked, run  # noqa: E402, F401 (a fixture)
from tests.sources.test_pdbbind import pdbbind  # noqa: E402, F401 (a fixture)


@pytest.mark.parametrize(
    "target, named",
    [
        ("index/INDEX_general_PL_data.2020", "an INDEX file"),
        ("1h36/1h36_ligand.sdf", "a crystal_ligand file"),
        ("1h36/1h36_protein.pdb", "a receptor file"),
    ],
)
def test_an_out_that_is_an_input_is_exit_2_and_leaves_it_as_it_was(pdbbind, capsys, target, named):  # noqa: F811
    out = pdbbind / target
    before = out.read_bytes()
    assert main(["pdbbind", str(pdbbind), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"pecan sources pdbbind: --out {out} is {named}" in err and "would be overwritten" in err, err
    assert out.read_bytes() == before
    assert not (out.parent / "excluded.csv").exists() and not list(out.parent.glob("*.excluded.csv"))


def test_a_rerun_removes_the_fold_files_it_no_longer_writes(crossdocked, tmp_path, caplog):  # noqa: F811
    root, types = crossdocked
    out = tmp_path / "out"
    (types / "it2_tt_v1.1_0_train0.types").rename(types / "it2_tt_v1.1_0_train3.types")
    assert run(root, types, out) == 0
    assert sorted(p.name for p in (out / "splits").iterdir()) == ["fold3_test.csv", "fold3_train.csv"]
    (types / "it2_tt_v1.1_0_train3.types").rename(types / "it2_tt_v1.1_0_train0.types")
    assert run(root, types, out) == 0
    assert sorted(p.name for p in (out / "splits").iterdir()) == ["fold0_test.csv", "fold0_train.csv"]
    assert "removed " in caplog.text and "fold3_train.csv" in caplog.text


def test_a_crossdocked_out_held_by_a_live_reader_is_exit_2_and_a_dead_ones_lock_is_taken_over(
    crossdocked,  # noqa: F811
    tmp_path,
    capsys,
):
    root, types = crossdocked
    out = tmp_path / "out"
    out.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = {"host": os.uname().nodename, "pid": sleeper.pid, "job_id": "", "token": "x"}
        (out / ".pecan.lock").write_text(json.dumps(lock))
        assert run(root, types, out) == 2
        err = capsys.readouterr().err
        assert f"--out {out} is in use by another run" in err and f"pid {sleeper.pid}" in err, err
        assert not (out / "manifest.csv").exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert run(root, types, out) == 0  # its owner is gone: the lock is stale, taken over and released at the end
    assert (out / "manifest.csv").exists() and not (out / ".pecan.lock").exists()
