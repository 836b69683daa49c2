"""One ligand per molecule: how `pecan score --group-by molecule` (the default) splits a poses file into the
ligands it ranks, and the warning when a group the user chose holds several molecules.

Which poses form a ligand matters beyond the ranks: a model that takes docking scores (the shipped one) sees
each pose's score as its gap to the best score among the poses ranked with it, so two ligands ranked as one
change each other's scores. A molecule is known by its title and its heavy-atom formula (hydrogens left out:
protonation states and poses written without hydrogens are the same ligand), read from the record's text
without parsing it. A file is split into runs of consecutive records:

- a run ends where the heavy-atom formula changes;
- when the file's titles name ligands (at least half of its records repeat the title of the record before
  them, as docking programs write a screen: each ligand's poses under its name), a run also ends where the
  title changes; a record without a title joins the run before it. Titles that mostly change from one record
  to the next name poses, not ligands (``X_pose1``, ``X_pose2``, ...): they split nothing, so consecutive
  ligands of one formula with one pose each are one ligand (``--group-by name`` splits them).

A file that is one molecule is one ligand named as under ``--group-by file`` (``--complex-id``, the file's
stem, a manifest's ``complex_id``); the molecules of a file of several are named by their first title (in a
manifest ``<complex_id>/<title>``), or by the file's name when untitled.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Callable, Iterable, Iterator

log = logging.getLogger("pecan")

HYDROGENS = {"H", "D", "T"}
KEEP_RECORDS = 4096
"""Records of a file kept from the first pass (a longer file is read twice rather than held whole)."""


def formula(symbols: Iterable[str]) -> str:
    """The heavy-atom formula of element ``symbols`` (carbon first, then alphabetical): 'C9N2O2S'."""
    counts = Counter(s for s in symbols if s and s not in HYDROGENS)
    order = sorted(counts, key=lambda s: (s != "C", s))
    return "".join(f"{s}{counts[s] if counts[s] > 1 else ''}" for s in order)


def text_formula(text: bytes) -> str:
    """The heavy-atom formula of an SDF record's atom block (V2000 or V3000); '' when it cannot be read."""
    lines = text.split(b"\n")
    if len(lines) < 4:
        return ""
    if b"V3000" in lines[3]:
        return formula(_v3000_symbols(lines[4:]))
    try:
        count = int(lines[3][0:3])
    except ValueError:
        return ""
    return formula(line[31:34].strip().decode("ascii", "replace") for line in lines[4 : 4 + count])


def _v3000_symbols(lines: list[bytes]) -> Iterator[str]:
    """The element symbols of a V3000 atom block (``M  V30 BEGIN ATOM`` ... ``M  V30 END ATOM``)."""
    inside = False
    for line in lines:
        fields = line.split()
        if fields[2:4] in ([b"BEGIN", b"ATOM"], [b"END", b"ATOM"]):
            if inside:
                return
            inside = True
        elif inside and len(fields) > 3:
            yield fields[3].decode("ascii", "replace")


def record_formula(record) -> str:
    """A record's heavy-atom formula: from its SDF text, else from its molecule ('' for neither)."""
    if record.text is not None:
        return text_formula(record.text)
    mol = record.mol
    return "" if mol is None else formula(atom.GetSymbol() for atom in mol.GetAtoms())


def run_starts(titles: list[str], formulas: list[str]) -> list[int]:
    """The record numbers at which a new ligand starts (the module's rules); [0] for one ligand."""
    repeats = sum(1 for before, title in zip(titles, titles[1:]) if title and title == before)
    named = repeats > 0 and 2 * repeats >= len(titles) - 1
    starts, current_title, current_formula = [0], titles[0] if titles else "", formulas[0] if formulas else ""
    for k in range(1, len(titles)):
        title, found = titles[k], formulas[k]
        if (found and current_formula and found != current_formula) or (named and title and title != current_title):
            starts.append(k)
            current_title, current_formula = title, found
        else:
            current_title, current_formula = current_title or title, current_formula or found
    return starts


def molecule_groups(name: str, prefix: str, read: Callable[[], Iterator]) -> Iterator[tuple[str, list]]:
    """(group name, records) of each molecule of a file; ``read()`` gives the file's records afresh. The first
    pass reads titles and formulas from the text and keeps the records of a file of up to ``KEEP_RECORDS``;
    a longer one is read again to hand its records out, so only one group's are held at a time. A record is
    parsed only when its group is scored."""
    keys, kept = [], []
    for record in read():
        keys.append((record.title, record_formula(record)))
        if kept is not None:
            kept.append(record)
            kept = kept if len(kept) <= KEEP_RECORDS else None
    starts = run_starts([title for title, _ in keys], [found for _, found in keys])
    records = iter(kept) if kept is not None else read()
    if len(starts) == 1:
        yield name, list(records)
        return
    bounds = [*starts, len(keys)]
    for first, end in zip(bounds, bounds[1:]):
        titles = [title for title, _ in keys[first:end] if title]
        yield prefix + (titles[0] if titles else name), [next(records) for _ in range(first, end)]


def warn_if_mixed(name: str, source: str, records: list) -> None:
    """One warning when a group holds more than one molecule (``--group-by file`` or ``name``)."""
    found = sorted({record_formula(record) for record in records} - {""})
    if len(found) > 1:
        log.warning(
            "ligand %s (%s) mixes %d molecules (heavy-atom formulas %s): its poses are ranked together, and a "
            "model that takes docking scores sees each against the best of them all; --group-by molecule (the "
            "default) ranks each molecule on its own",
            name,
            source,
            len(found),
            ", ".join(found[:5]) + (", ..." if len(found) > 5 else ""),
        )
