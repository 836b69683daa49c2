"""`pecan runs trace --check` on a run stopped mid-epoch by a real signal and resumed: the stop marker is no
epoch, the resumed epoch is compared with the part its record covers, and a real disagreement still fails."""

import json
import signal

import pytest

from pecan import cli, report
from tests.procs import act_at, app_argv, run_ok
from tests.train.helpers import tiny_run


@pytest.mark.slow
@pytest.mark.multiprocess
def test_check_agrees_after_a_stop_and_resume_and_still_catches_a_change(tmp_path, capsys):
    pytest.importorskip("dftracer", reason="real trace files need the native dftracer package (.[trace-native])")
    path, _ = tiny_run(tmp_path)
    out_dir = tmp_path / "run"
    cmd = app_argv(path, "train.epochs=2", "data.batch_size=2", "trace.enabled=true", f"train.out_dir={out_dir}")
    code, out = act_at(cmd, "threads:", lambda process: process.send_signal(signal.SIGTERM))
    assert code == 0 and "stopped at epoch 1 step 1" in out, out[-3000:]
    run_ok(cmd)
    assert [r["epoch"] for r in report.read_records(out_dir / "epochs.jsonl")] == [1, 2]
    assert any(r.get("event") for r in report.read_records(out_dir / "epochs.jsonl", events=True))
    capsys.readouterr()
    assert cli.main(["runs", "trace", str(out_dir), "--check"]) == 0, capsys.readouterr().out
    assert "trace totals agree with epochs.jsonl" in capsys.readouterr().out
    # A record that no longer matches its trace is still caught.
    lines = (out_dir / "epochs.jsonl").read_text().splitlines()
    changed = []
    for line in lines:
        record = json.loads(line)
        if record.get("epoch") == 1 and "event" not in record:
            record["ranks"]["forward_s"] = [value + 5.0 for value in record["ranks"]["forward_s"]]
        changed.append(json.dumps(record))
    (out_dir / "epochs.jsonl").write_text("\n".join(changed) + "\n")
    assert cli.main(["runs", "trace", str(out_dir), "--check"]) == 1
    assert "epoch 1 rank 0 forward_s" in capsys.readouterr().out
