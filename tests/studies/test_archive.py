"""studies/archive.py: the studies' data as digest-checked archives, packed deterministically and unpacked in place."""

import io
import tarfile

import pytest

from studies import archive


@pytest.fixture
def tiny_study(tmp_path, monkeypatch):
    """A study 'mini' with one archive of two folders, its files written under tmp_path/mini."""
    monkeypatch.setitem(archive.ARCHIVES, "mini", {"data": ["inputs", "docked/poses"]})
    base = tmp_path / "mini"
    (base / "inputs" / "a").mkdir(parents=True)
    (base / "inputs" / "a" / "receptor.pdb").write_text("ATOM      1  N   ALA A   1\n")
    (base / "docked" / "poses").mkdir(parents=True)
    (base / "docked" / "poses" / "a.sdf").write_text("a\n$$$$\n")
    (base / "docked" / "manifest.csv").write_text("complex_id\na\n")  # beside the archived folders: not packed
    return tmp_path


def _remove_data(root):
    for folder in ("inputs", "docked/poses"):
        for path in sorted((root / "mini" / folder).rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        (root / "mini" / folder).rmdir()
    for stamp in (root / "mini").glob(".unpacked-*"):
        stamp.unlink()


def test_pack_then_unpack_restores_every_file_and_packing_is_deterministic(tiny_study):
    first = archive.pack("mini", tiny_study, log=lambda _: None)
    assert archive.pack("mini", tiny_study, log=lambda _: None) == first  # same files, same digest
    _remove_data(tiny_study)
    assert archive.unpack("mini", tiny_study, log=lambda _: None) == 2
    assert (tiny_study / "mini" / "inputs" / "a" / "receptor.pdb").read_text().startswith("ATOM")
    assert (tiny_study / "mini" / "docked" / "poses" / "a.sdf").read_text() == "a\n$$$$\n"
    messages = []
    assert archive.unpack("mini", tiny_study, log=messages.append) == 0  # stamped with the same digest: skipped
    assert messages == ["[studies] mini/data: already unpacked"]


def test_an_altered_archive_is_refused_naming_it_before_anything_is_written(tiny_study):
    archive.pack("mini", tiny_study, log=lambda _: None)
    _remove_data(tiny_study)
    path = archive.archive_path("mini", "data", tiny_study)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte flipped in place, same size
    path.write_bytes(bytes(data))
    with pytest.raises(archive.ArchiveError, match=f"{path}: SHA-256 .* does not match"):
        archive.unpack("mini", tiny_study, log=lambda _: None)
    assert not (tiny_study / "mini" / "inputs").exists()
    path.unlink()
    with pytest.raises(archive.ArchiveError, match="missing"):
        archive.verify("mini", tiny_study)


def test_folders_that_were_not_unpacked_are_not_overwritten_without_force(tiny_study):
    archive.pack("mini", tiny_study, log=lambda _: None)
    (tiny_study / "mini" / ".unpacked-data").unlink()
    (tiny_study / "mini" / "inputs" / "a" / "receptor.pdb").write_text("edited by hand\n")
    with pytest.raises(archive.ArchiveError, match="exists and was not unpacked.*--force"):
        archive.unpack("mini", tiny_study, log=lambda _: None)
    assert (tiny_study / "mini" / "inputs" / "a" / "receptor.pdb").read_text() == "edited by hand\n"
    archive.unpack("mini", tiny_study, force=True, log=lambda _: None)
    assert (tiny_study / "mini" / "inputs" / "a" / "receptor.pdb").read_text().startswith("ATOM")


def test_a_member_outside_the_archives_folders_is_refused(tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz") as tar:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    path = tmp_path / "bad.tar.xz"
    path.write_bytes(buffer.getvalue())
    with pytest.raises(archive.ArchiveError, match="unexpected member '../escape.txt'"):
        archive.extract(path, tmp_path / "out", ["inputs"])
    assert not (tmp_path / "escape.txt").exists()


def test_the_committed_archives_match_their_recorded_digests():
    for study in archive.ARCHIVES:
        assert archive.verify(study), study


def test_the_command_line_names_an_unknown_study(capsys):
    with pytest.raises(SystemExit) as stop:
        archive.main(["unpack", "nosuch"])
    assert stop.value.code == 2 and "unknown study nosuch" in capsys.readouterr().err
