"""SDF records as text, for `pecan score`: split a poses file into its records without parsing them, parse one
record with RDKit when (and only when) it is scored, and write a scored record as its input text with the
scoring's SD properties added.

- **Splitting.** A record ends with its ``$$$$`` line, as RDKit's ``SDMolSupplier`` indexes a file (a line
  that starts with ``$$$$``); a last record without one ends at the end of the file, and what follows the last
  ``$$$$`` line is no record when it is only blank. Under a launcher each rank splits the whole file (cheap:
  a byte search) but parses only the records of its own ligands, and a ligand's title is its record's first
  line, read from the text: the same for every rank, whether RDKit can parse the record or not.
- **Parsing.** One record's text through ``SDMolSupplier`` (the same molecule and SD properties as RDKit's
  reading of the whole file: ``tests/scoring/test_sdf_text.py``).
- **Writing.** The record's own lines are kept (coordinates, properties, formatting: nothing is regenerated,
  and regenerating was most of the writing time) and the added properties go before its ``$$$$`` line, in
  RDKit's notation (doubles as ``%.17g``, RDKit's own formatting); an input property of the same name is
  dropped first, as RDKit's ``SetProp`` replaces it.
"""

from __future__ import annotations

import io
from typing import BinaryIO, Iterator

CHUNK_BYTES = 1 << 20
"""Bytes read at a time while splitting (the records found are handed on one at a time)."""
TERMINATOR = b"$$$$"


def split_records(handle: BinaryIO, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The records of an SDF stream, each as its bytes with its ``$$$$`` line (a last one without it as it
    is); trailing blank lines are no record."""
    data, begin, scan, eof = b"", 0, 0, False
    while True:
        if data.startswith(TERMINATOR, begin):  # an empty record: its first line is the terminator
            end_line = begin
        else:
            hit = data.find(b"\n" + TERMINATOR, scan)
            end_line = hit + 1 if hit >= 0 else -1
        if end_line >= 0:
            newline = data.find(b"\n", end_line)
            if newline >= 0 or eof:
                end = len(data) if newline < 0 else newline + 1
                yield data[begin:end]
                begin = scan = end
                continue
            resume = max(end_line - 1, begin)  # the terminator's line is not complete yet: find it again
        elif eof:
            if data[begin:].strip():
                yield data[begin:]
            return
        else:
            resume = max(len(data) - len(TERMINATOR) - 1, begin)  # a terminator may straddle the chunks
        # Not enough data for the next record: keep its start, read on.
        chunk = handle.read(chunk_bytes)
        eof = not chunk
        data, scan, begin = data[begin:] + chunk, resume - begin, 0


def record_title(text: bytes) -> str:
    """A record's title (its first line, stripped, as RDKit's ``_Name`` stripped): '' for an empty record."""
    line = text.split(b"\n", 1)[0]
    if line.startswith(TERMINATOR):
        return ""
    return line.decode("utf-8", "replace").strip()


class RecordParser:
    """Parses single SDF records with one reused RDKit supplier."""

    def __init__(self) -> None:
        from rdkit import Chem

        self._chem = Chem
        self._supplier = Chem.SDMolSupplier()

    def __call__(self, text: bytes):
        """The molecule of one record (hydrogens kept, sanitised), None when RDKit cannot parse it."""
        try:
            self._supplier.SetData(text.decode("utf-8"), sanitize=True, removeHs=False)
        except UnicodeDecodeError:  # not UTF-8: RDKit reads the bytes themselves
            return next(iter(self._chem.ForwardSDMolSupplier(io.BytesIO(text), removeHs=False)), None)
        return self._supplier[0] if len(self._supplier) else None


def rdkit_record(mol) -> bytes:
    """The record RDKit writes for ``mol`` (its SD properties included): a record read from a mol2 or PDB
    file has no text of its own."""
    from rdkit import Chem

    buffer = io.StringIO()
    writer = Chem.SDWriter(buffer)
    writer.write(mol)
    writer.close()
    return buffer.getvalue().encode("utf-8")


def property_value(value) -> str:
    """An SD property's text as RDKit writes it: doubles as ``%.17g``, integers and strings as they are."""
    if isinstance(value, float):
        return "%.17g" % value
    return str(value)


def with_properties(text: bytes, properties: dict) -> bytes:
    """``text`` (one record) with ``properties`` (name -> value) written before its ``$$$$`` line, in order,
    any input property of one of these names dropped."""
    body, terminator = _split_terminator(text)
    names = [name.encode("utf-8") for name in properties]
    if any(b"<" + name + b">" in body for name in names):
        body = _drop_properties(body, set(names))
    if not body.endswith(b"\n"):
        body += b"\n"
    if not _ends_block(body):  # a last property value without its blank line: end it first
        body += b"\n"
    added = "".join(f">  <{name}>\n{property_value(value)}\n\n" for name, value in properties.items())
    return body + added.encode("utf-8") + terminator


def _split_terminator(text: bytes) -> tuple[bytes, bytes]:
    """(the record's lines before its ``$$$$`` line, that line); a record without one gets ``$$$$\\n``."""
    at = 0 if text.startswith(TERMINATOR) else text.rfind(b"\n" + TERMINATOR) + 1
    if at == 0 and not text.startswith(TERMINATOR):
        return text, TERMINATOR + b"\n"
    terminator = text[at:]
    return text[:at], terminator if terminator.endswith(b"\n") else terminator + b"\n"


def _ends_block(body: bytes) -> bool:
    """Whether a property header may follow ``body`` directly: it ends with a blank line or its connection
    table's ``M  END`` line."""
    if body.endswith((b"\n\n", b"\n\r\n")):
        return True
    last = body.rstrip(b"\r\n").rsplit(b"\n", 1)[-1]
    return last.rstrip() == b"M  END"


def _drop_properties(body: bytes, names: set[bytes]) -> bytes:
    """``body`` without the SD property blocks (header, value lines, blank line) named in ``names``; only the
    data block after the connection table (after ``M  END``) is searched."""
    end = body.find(b"\nM  END")
    if end < 0:
        return body
    cut = body.find(b"\n", end + 1)
    if cut < 0:
        return body
    head, lines = body[: cut + 1], body[cut + 1 :].splitlines(keepends=True)
    kept, dropping = [], False
    for line in lines:
        if dropping:
            dropping = bool(line.strip())  # the blank line ends the dropped block (and goes with it)
            continue
        if line.startswith(b">") and b"<" in line:
            name = line.split(b"<", 1)[1].split(b">", 1)[0]
            if name in names:
                dropping = True
                continue
        kept.append(line)
    return head + b"".join(kept)
