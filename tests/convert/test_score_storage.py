"""`pecan score` writing onto a full file system (a real tiny tmpfs): one error naming the output and "disk
full", exit 1, and no temporary file left beside the outputs."""

import subprocess
import sys

import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from pecan.convert.examples import prolif_data, vina_poses_with_scores
from tests.procs import ROOT, clean_env


@pytest.mark.slow
def test_a_full_disk_is_one_clear_error_exit_1_and_leaves_no_temporary_file(trained_run, tmp_path, mounts):
    scored = vina_poses_with_scores(tmp_path / "vina.sdf")
    many = tmp_path / "many.sdf"
    many.write_bytes(scored.read_bytes() * 6)  # 54 poses: their scored SDF is larger than the file system
    full = mounts.tmpfs(tmp_path / "full", size="16k")
    receptor = prolif_data() / "vina" / "rec.pdb"
    done = subprocess.run(
        [sys.executable, "-m", "pecan", "score", str(trained_run.checkpoint), "--receptor", str(receptor)]
        + ["--poses", str(many), "--score-property", "vina_score", "--group-by", "file", "--device", "cpu"]
        + ["--out", str(full / "o.sdf")],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert f"{full / 'o.sdf'}: disk full (ENOSPC)" in done.stderr
    assert "Traceback" not in done.stderr and "During handling" not in done.stderr
    assert sorted(p.name for p in full.iterdir()) == []
