"""What `pecan score` scores, as a stream of ligand groups (``featurise.LigandGroup``): each group's poses
are ranked among themselves, as one complex of the converter.

Sources: one receptor with a poses file (``--poses X.sdf``; also mol2, PDB, and Vina's PDBQT through
``pecan.scoring.pdbqt``), a directory of poses files (``--poses DIR``: every ``.sdf``, ``.sd``, ``.mol2``,
``.pdbqt`` in it, by name), or a converter manifest (``--manifest M.csv``, one row per
poses file). ``--group-by`` says what a group is:

- ``molecule`` (the default): each run of consecutive records of one molecule (title and heavy-atom formula,
  ``pecan.scoring.molecules``) is one ligand; a file of one molecule is named as under ``file``;
- ``file``: all records of one poses file are one ligand, named by ``--complex-id``, the file's
  stem (a directory), or the manifest's ``complex_id``;
- ``name``: each run of consecutive records with the same title (``_Name``, stripped) is one ligand, named by
  that title (in a manifest, ``<complex_id>/<title>``): a virtual screen's output, one ligand's poses after
  the other. A record without a title joins the ligand before it (a first one is named by the file).

A group name met again later (a title that reappears after other ligands, two files with one stem) gets a
numbered suffix, ``NAME#2``, with a warning: its poses are ranked on their own, never silently merged.
An SDF is split into its records' text as it is read (``pecan.scoring.sdf_text``): a title is read from
the text, so a record RDKit cannot parse is grouped by its title too (and is a failure row of that ligand),
and a record is parsed by RDKit only when its group is scored here (under a launcher, only the rank's own
groups). Only the group being scored is in memory, never the whole file (but under ``file``, and a file of
up to ``molecules.KEEP_RECORDS`` records under ``molecule``); its records' text goes with it, to be written
back with the scores.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from pecan.runtime.errors import ConfigError
from pecan.scoring.featurise import LigandGroup
from pecan.scoring.molecules import molecule_groups, warn_if_mixed

log = logging.getLogger("pecan")

GROUP_BY = ("molecule", "file", "name")
POSE_SUFFIXES = (".sdf", ".sd", ".mol2")


@dataclass(frozen=True)
class PosesFile:
    """One poses file to read, with what its groups share."""

    path: Path
    name: str  # the group name under group-by file; the prefix (manifest) or fallback under group-by name
    receptor: Path
    crystal: Optional[Path] = None
    score_property: str = ""
    affinity: float = float("nan")
    prefix: str = ""  # group-by name: "<complex_id>/" for a manifest row
    scores: Optional[object] = None  # a ``score_table.ScoreTable``: the poses' docking scores from --scores-csv


def poses_in(directory: Path) -> list[Path]:
    """The poses files of ``directory`` (by name); ConfigError when it has none."""
    from pecan.scoring.invocation import DIRECTORY_SUFFIXES

    files = sorted(p for p in directory.iterdir() if p.is_file() and p.suffix.lower() in DIRECTORY_SUFFIXES)
    if not files:
        raise ConfigError(f"pecan score: --poses {directory} is a directory without .sdf, .sd, .mol2 or .pdbqt files")
    return files


class Record:
    """One record of a poses file: its SDF text (None for a mol2 or PDB record), its title and its molecule,
    parsed from the text on first use (None when RDKit cannot parse it)."""

    __slots__ = ("text", "title", "_mol", "_parser", "number")

    def __init__(self, text: Optional[bytes], title: str, mol=None, parser=None) -> None:
        self.text, self.title, self._mol, self._parser = text, title, mol, parser
        self.number = 0  # its record number in its file, from 1 (set as the file is read)

    @property
    def mol(self):
        """The RDKit molecule (parsed now, once, for an SDF record)."""
        if self._parser is not None:
            self._mol, self._parser = self._parser(self.text), None
        return self._mol


def iter_records(path: Path, score_property: str = "") -> Iterator[Record]:
    """The records of a poses file one at a time; SDF is streamed and split as text (parsed only when a
    record's molecule is asked for), mol2 and PDB are read whole (``chemistry.read_ligands``), PDBQT too, with
    each pose's Vina score as ``score_property`` (``pecan.scoring.pdbqt``)."""
    from pecan.convert import chemistry as chem
    from pecan.scoring.sdf_text import RecordParser, record_title, split_records

    if path.suffix.lower() == ".pdbqt":
        from pecan.scoring.pdbqt import read_pdbqt_poses

        yield from (Record(None, title(mol), mol) for mol in read_pdbqt_poses(path, score_property or "docking_score"))
        return
    if path.suffix.lower() == ".mol2":
        yield from mol2_records(path)
        return
    if path.suffix.lower() not in (".sdf", ".sd"):
        yield from (Record(None, title(mol), mol) for mol in chem.read_ligands(path))
        return
    if not path.exists():
        raise chem.ConversionError(f"{path}: file not found")
    parser = RecordParser()
    with open(path, "rb") as handle:
        for number, text in enumerate(split_records(handle)):
            if number == 0:
                warn_if_converted_pdbqt(path, text)
            yield Record(text, record_title(text), parser=parser)


def check_scores_present(files: list[PosesFile], needs_docking_score: bool, docking_weight: float) -> None:
    """Before the model loads: when the model takes docking scores or ranks by a consensus with them, the first
    record of each SDF poses file (without ``--scores-csv``; when RDKit can read it) must hold the score
    property; ConfigError naming the file, the property and the ways out (``--docking-weight 0`` for poses
    without scores, e.g. an ML docking program's). Every record is checked again as its ligand is scored."""
    from pecan.scoring.sdf_text import RecordParser, split_records

    if not needs_docking_score and not docking_weight:
        return
    for item in files:
        if item.scores is not None or item.path.suffix.lower() not in (".sdf", ".sd") or not item.path.is_file():
            continue
        with open(item.path, "rb") as handle:
            first = next(iter(split_records(handle)), None)
        header = re.compile(rb"^>[^\n]*<" + re.escape(item.score_property.encode()) + rb">", re.MULTILINE)
        if first is None or (item.score_property and header.search(first)):
            continue
        if RecordParser()(first) is None:  # an unreadable record is a failure row of its ligand, as before
            continue
        needs = (
            "the checkpoint's model takes each pose's docking score (model.use_docking_score)"
            if needs_docking_score
            else f"--docking-weight {docking_weight:g} ranks by a consensus with each pose's docking score"
        )
        alone = "; or rank by the model alone with --docking-weight 0 (poses without docking scores, e.g. ML docking)"
        way_out = "" if needs_docking_score else alone
        raise ConfigError(
            f"pecan score: {needs}, but the first record of {item.path} has no SD property "
            f"{item.score_property!r}; name the property holding it with --score-property, or give the scores "
            f"with --scores-csv FILE --score-column NAME{way_out}"
        )


def converted_pdbqt(text: bytes) -> bool:
    """Whether an SDF record is Open Babel's conversion of Vina PDBQT output: its program line is Open
    Babel's and it carries the PDBQT's ``REMARK VINA RESULT`` as a property."""
    lines = text.split(b"\n", 2)
    return len(lines) > 1 and b"OpenBabel" in lines[1] and b"VINA RESULT" in text


def warn_if_converted_pdbqt(path: Path, first: bytes) -> None:
    """One warning when a poses SDF is Open Babel's conversion of a PDBQT: a PDBQT keeps no bond orders, so
    the molecule's chemistry is Open Babel's guess from the geometry (docs/scoring.md: which conversions are
    sound)."""
    if converted_pdbqt(first):
        log.warning(
            "poses %s were converted from Vina PDBQT by Open Babel (its program line, a REMARK VINA RESULT "
            "property): a PDBQT keeps no bond orders, so their chemistry (bond orders, charges, hydrogens) is Open "
            "Babel's guess from the geometry, which PECAN cannot check; give the Meeko PDBQT itself (its REMARK "
            "SMILES rebuild the ligand), or SDF written with the ligand's own chemistry (docs/scoring.md)",
            path,
        )


def mol2_records(path: Path) -> Iterator[Record]:
    """The molecules of a mol2 file as the converter reads them (``chemistry.read_ligands``); a block RDKit
    cannot read is a record without a molecule, and a warning gives RDKit's own reason (Open Babel's mol2 often
    types atoms aromatic outside a ring, which RDKit refuses), not just that it failed."""
    from rdkit import Chem

    from pecan.convert.chemistry import ConversionError

    if not path.exists():
        raise ConversionError(f"{path}: file not found")
    text = path.read_text(errors="replace")
    starts = [m.start() for m in re.finditer(r"^@<TRIPOS>MOLECULE", text, flags=re.M)]
    for number, (start, end) in enumerate(zip(starts, [*starts[1:], len(text)]), start=1):
        block = text[start:end]
        mol = Chem.MolFromMol2Block(block, removeHs=False)
        if mol is None:
            log.warning("poses %s, mol2 molecule %d: RDKit cannot read it: %s", path, number, mol2_reason(block))
            yield Record(None, block.split("\n", 2)[1].strip() if block.count("\n") >= 2 else "", None)
        else:
            yield Record(None, title(mol), mol)


def mol2_reason(block: str) -> str:
    """Why RDKit refuses a mol2 block: its sanitisation error, read without sanitising and sanitised apart."""
    from rdkit import Chem, rdBase

    with rdBase.BlockLogs():
        mol = Chem.MolFromMol2Block(block, sanitize=False, removeHs=False)
        if mol is None:
            return "its atom or bond records cannot be read (not a TRIPOS mol2 RDKit knows)"
        try:
            Chem.SanitizeMol(mol)
        except Exception as err:  # RDKit's sanitisation errors are of several types
            return f"{type(err).__name__}: {err}"
    return "RDKit's mol2 reader refused it (sanitised apart it passes: a mol2 substructure it cannot clean up)"


def title(mol) -> str:
    """A molecule's title, stripped ('' for none or an unparsable record)."""
    return mol.GetProp("_Name").strip() if mol is not None and mol.HasProp("_Name") else ""


class UniqueNames:
    """Group names made unique: a name met again gets ``#2``, ``#3``, ... and one warning each."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def __call__(self, name: str, where: str) -> str:
        count = self.seen.get(name, 0) + 1
        self.seen[name] = count
        if count == 1:
            return name
        unique = f"{name}#{count}"
        while unique in self.seen:
            count += 1
            unique = f"{name}#{count}"
        self.seen[unique] = 1
        log.warning("ligand %r appears again in %s: its poses are scored as %r", name, where, unique)
        return unique


def iter_groups(files: list[PosesFile], group_by: str, rank: int = 0, world_size: int = 1) -> Iterator[LigandGroup]:
    """The ligand groups of ``files`` in order, numbered from 0 (``seq``); with ``world_size`` > 1 only those
    with ``seq % world_size == rank`` (under ``file`` the other files are not even read). A file that cannot
    be read becomes a group without records (the converter names the failure)."""
    if group_by not in GROUP_BY:
        raise ConfigError(f"pecan score: --group-by must be one of {', '.join(GROUP_BY)}, got {group_by!r}")
    unique = UniqueNames()
    seq = -1

    def mine() -> bool:
        return seq % world_size == rank

    for item in files:
        errors: list[str] = []
        if group_by == "molecule":
            for name, records in molecule_groups(item.name, item.prefix, lambda: _records(item, errors)):
                seq += 1
                name = unique(name, str(item.path))
                if mine():
                    yield _group(item, name, records, errors, seq)
            continue
        if group_by == "file":
            seq += 1
            name = unique(item.name, str(item.path))
            if mine():
                records = list(_records(item, errors))
                warn_if_mixed(name, str(item.path), records)
                yield _group(item, name, records, errors, seq)
            continue
        name, records = None, []
        for record in _records(item, errors):
            label = record.title
            if name is None or (label and label != name):
                if name is not None:
                    seq += 1
                    group_name = unique(item.prefix + name, str(item.path))
                    if mine():
                        warn_if_mixed(group_name, str(item.path), records)
                        yield _group(item, group_name, records, [], seq)
                name, records = label or item.name, []
            records.append(record)
        seq += 1
        group_name = unique(item.prefix + (name or item.name), str(item.path))
        if mine():
            warn_if_mixed(group_name, str(item.path), records)
            yield _group(item, group_name, records, errors, seq)


def _records(item: PosesFile, errors: list[str]) -> Iterator:
    """The file's records; a file that cannot be read adds its reason to ``errors``."""
    from pecan.convert.chemistry import ConversionError

    try:
        for number, record in enumerate(iter_records(item.path, item.score_property), start=1):
            record.number = number
            yield record
    except (ConversionError, OSError) as err:
        errors.append(str(err))


def _scored(item: PosesFile, record: Record):
    """The record's molecule, with its docking score from ``--scores-csv`` when one was given."""
    mol = record.mol
    if item.scores is not None:
        item.scores.apply(mol, item.path, record.number, record.title, item.score_property)
    return mol


def _group(item: PosesFile, name: str, records: list[Record], errors: list[str], seq: int) -> LigandGroup:
    """The group of ``records``, parsed now (only a group scored here is made)."""
    return LigandGroup(
        complex_id=name,
        receptor=item.receptor,
        source=str(item.path),
        records=[_scored(item, record) for record in records],
        texts=[record.text for record in records],
        crystal=item.crystal,
        score_property=item.score_property,
        affinity=item.affinity,
        error=errors[0] if errors and not records else "",
        seq=seq,
    )
