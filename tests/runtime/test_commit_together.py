"""Several files written as one result (``fileio.commit_together``) replace their destinations all together or
not at all, and ``outputs.check_writable`` refuses an output that cannot be written before any work."""

import os

import pytest

from pecan.runtime import fileio
from pecan.runtime.errors import ConfigError, StorageError
from pecan.runtime.outputs import check_writable


def written(tmp_path, names, text):
    """Temp files beside ``names`` in ``tmp_path`` holding ``text``, as (temp, destination) pairs."""
    pairs = []
    for name in names:
        temp = fileio.temp_beside(tmp_path / name)
        temp.write_text(f"{text} {name}")
        pairs.append((temp, tmp_path / name))
    return pairs


def test_all_destinations_are_replaced(tmp_path):
    (tmp_path / "a.sdf").write_text("old a.sdf")
    fileio.commit_together(written(tmp_path, ["a.sdf", "a.csv", "a.metrics.json"], "new"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a.metrics.json", "a.sdf"]
    assert all(p.read_text() == f"new {p.name}" for p in tmp_path.iterdir())


def test_a_directory_among_the_destinations_replaces_none(tmp_path):
    (tmp_path / "a.csv").write_text("old a.csv")
    pairs = written(tmp_path, ["a.csv", "a.metrics.json", "a.sdf"], "new")
    (tmp_path / "a.sdf").mkdir()
    with pytest.raises(StorageError, match="a.sdf"):
        fileio.commit_together(pairs)
    assert (tmp_path / "a.csv").read_text() == "old a.csv"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a.sdf"]  # no temp left, no new file


def test_a_failed_rename_puts_back_the_ones_before_it(tmp_path, monkeypatch):
    for name in ("a.sdf", "a.csv"):
        (tmp_path / name).write_text(f"old {name}")
    pairs = written(tmp_path, ["a.csv", "a.metrics.json", "a.sdf"], "new")
    real_replace, calls = os.replace, []

    def replace(source, destination):
        calls.append(destination)
        if str(destination).endswith("a.sdf") and len(calls) == 3:  # the third rename: disk gone, say
            raise OSError(5, "Input/output error")
        return real_replace(source, destination)

    monkeypatch.setattr(fileio.os, "replace", replace)
    with pytest.raises(StorageError, match="a.sdf"):
        fileio.commit_together(pairs)
    monkeypatch.undo()
    assert (tmp_path / "a.csv").read_text() == "old a.csv"  # replaced, then put back
    assert (tmp_path / "a.sdf").read_text() == "old a.sdf"
    assert not (tmp_path / "a.metrics.json").exists()  # new, so removed again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "a.sdf"]


def test_check_writable_names_the_real_cause(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="is a directory"):
        check_writable("cmd", [("--out", tmp_path / "out")])
    with pytest.raises(ConfigError, match="is a file, not a directory"):
        check_writable("cmd", [("--out", tmp_path / "file" / "x.sdf")])
    with pytest.raises(ConfigError, match="/proc does not accept new files"):
        check_writable("cmd", [("--out", "/proc/x.sdf")])
    check_writable("cmd", [("--out", tmp_path / "new" / "deeper" / "x.sdf")])  # made when written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "out"]  # the probe left nothing


def test_an_earlier_file_that_cannot_be_put_back_is_named(tmp_path, monkeypatch):
    (tmp_path / "a.csv").write_text("old a.csv")
    pairs = written(tmp_path, ["a.csv", "a.sdf"], "new")
    real_replace, calls = os.replace, []

    def replace(source, destination):
        calls.append(destination)
        if len(calls) > 1:  # the second rename fails, and so does putting the first back
            raise OSError(5, "Input/output error")
        return real_replace(source, destination)

    monkeypatch.setattr(fileio.os, "replace", replace)
    with pytest.raises(StorageError, match="not put back: .*a.csv \\(its earlier file: .*earlier") as raised:
        fileio.commit_together(pairs)
    monkeypatch.undo()
    earlier = str(raised.value).rsplit("its earlier file: ", 1)[1].rstrip(")")
    assert open(earlier).read() == "old a.csv"  # kept where the message says
