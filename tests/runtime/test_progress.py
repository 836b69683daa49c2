"""pecan.runtime.progress: the mode follows the stream; lines carry counts, rates and an ETA, never a
carriage return."""

import io
import logging

import pytest

from pecan.runtime import progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_mode_follows_the_stream():
    assert progress.resolve_mode("auto", Terminal()) == "bar"
    assert progress.resolve_mode("auto", io.StringIO()) == "lines"
    assert progress.resolve_mode(True, io.StringIO()) == "lines"  # "show it" means: in the form that fits
    assert progress.resolve_mode(False) == progress.resolve_mode("off") == progress.resolve_mode(None) == "off"
    assert progress.resolve_mode("bar", io.StringIO()) == "bar"
    with pytest.raises(ValueError, match="auto, bar, lines, off"):
        progress.resolve_mode("sometimes")


def test_format_duration():
    assert progress.format_duration(3725.4) == "1:02:05"
    assert progress.format_duration(59.6) == "0:01:00"
    assert progress.format_duration(float("inf")) == "?"


def test_lines_every_n_seconds_with_eta(caplog):
    now = [0.0]
    bar = progress.Progress(10, "epoch 1", "step", "lines", every_s=30.0, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="pecan.progress"):
        for _ in range(10):
            now[0] += 10.0  # 10 s per step: a line at 30, 60 and 90 s, then the closing line
            bar.update()
        bar.close()
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "epoch 1: 3/10 step (30%) | 0.1 step/s | ETA 0:01:10"
    assert lines[1] == "epoch 1: 6/10 step (60%) | 0.1 step/s | ETA 0:00:40"
    assert lines[2].startswith("epoch 1: 9/10 step (90%)") and lines[3].startswith("epoch 1: 10/10 step (100%)")
    assert len(lines) == 4 and not any("\r" in line for line in lines)


def test_off_writes_nothing_and_track_counts(caplog, capsys):
    with caplog.at_level(logging.INFO, logger="pecan.progress"):
        assert list(progress.track(range(5), "items", mode="off")) == list(range(5))
        assert list(progress.track(range(3), "items", mode="lines", every_s=0.0)) == [0, 1, 2]
    messages = [r.getMessage() for r in caplog.records]
    assert [m.split(" | ")[0] for m in messages] == [
        "items: 1/3 it (33%)",
        "items: 2/3 it (67%)",
        "items: 3/3 it (100%)",
    ]  # the closing line is not repeated when the last line already showed the final count
    assert "\r" not in capsys.readouterr().err


def test_a_heartbeat_line_while_one_unit_takes_long_and_no_repeated_final_line(caplog):
    """A batch log shows life while a single slow unit (one shard of many complexes) runs: a line every
    every_s even without an update; the closing line is written once."""
    import time

    with caplog.at_level(logging.INFO, logger="pecan.progress"):
        with progress.Progress(2, "converting", "complex", "lines", every_s=0.2, heartbeat=True) as bar:
            time.sleep(0.9)  # the first unit takes 4.5 heartbeat periods
            bar.update(2)
    lines = [r.getMessage().split(" | ")[0] for r in caplog.records]
    assert lines.count("converting: 0/2 complex (0%)") >= 2
    assert lines.count("converting: 2/2 complex (100%)") == 1


def test_work_done_before_a_resume_counts_in_the_total_never_in_the_rate(caplog):
    now = [0.0]
    bar = progress.Progress(20, "redocking", "complex", "lines", every_s=30.0, clock=lambda: now[0], already_done=15)
    with caplog.at_level(logging.INFO, logger="pecan.progress"):
        for _ in range(3):
            now[0] += 20.0  # a complex every 20 s: the 15 reused ones must not make that look like 1/s
            bar.update()
        bar.close()
    lines = [r.getMessage() for r in caplog.records]
    # after 40 s: 2 complexes done by this run -> 20 s/complex, 3 left -> ETA 60 s
    assert lines[0] == "redocking: 17/20 complex (85%) | 20 s/complex | ETA 0:01:00"
    assert lines[-1].startswith("redocking: 18/20 complex (90%) | 20 s/complex")


def test_a_resume_with_nothing_left_to_do_writes_no_closing_line(caplog):
    with caplog.at_level(logging.INFO, logger="pecan.progress"):
        progress.Progress(4, "redocking", "complex", "lines", already_done=4).close()
    assert not caplog.records
