"""The reserved external test proteins (TYK2, thrombin, MCL1, PTP1B, HIF-2α, PDE2A): no reader lets one through.

A complex is reserved when any of these names one of the proteins:

- its PDB entry (the receptor's, and for a cross-docked pose the ligand's source entry too) is one of
  ``RESERVED_ENTRIES``, the entries the corpus names (studies/corpus/README.md);
- one of its UniProt accessions (PDBbind's name index; a field may hold several, ``P00734,P12345``) is the
  protein's human accession;
- its UniProt entry name (CrossDocked2020's pocket folders, e.g. ``THRB_HUMAN_328_622_0``) starts with the
  protein's entry mnemonic, whatever the species (bovine thrombin is thrombin too);
- its protein name (PDBbind's name index) matches one of the protein's names as whole words, by meaning rather
  than spelling: case, punctuation, hyphens, apostrophes (typographic ones too) and the spaces between letters and
  digits do not count ("PTP-1B", "PTP 1B" and "ptp1b" are one name), Greek letters are their names ("HIF-2α" is
  "HIF 2 alpha"), British spellings are American ("leukaemia" is "leukemia"): ``thrombin`` and ``prothrombin``
  (not "thrombin-activatable fibrinolysis inhibitor" or the "thrombin receptor", which are other proteins),
  ``PTP1B`` / "tyrosine-protein phosphatase non-receptor type 1", ...

The filter errs towards removing: a training complex lost costs less than a test protein seen in training.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class ReservedProtein:
    """One reserved protein: its name, human UniProt accession, entry mnemonic and name patterns."""

    name: str
    uniprot: str
    mnemonic: str
    patterns: tuple[str, ...]


# The names below are written in the form ``normalised_name`` gives a name: lower case, words and numbers
# separated by one space ("ptp 1 b", "hif 2 alpha"), each pattern between spaces so that it matches whole words.
RESERVED_PROTEINS = (
    ReservedProtein(
        "thrombin",
        "P00734",
        "THRB",
        (
            r" (?:pro)?thrombin (?!activatable |receptor )",
            r" coagulation factor (?:iia?|2|2 a) (?!receptor )",
        ),
    ),
    ReservedProtein(
        "PTP1B",
        "P18031",
        "PTN1",
        (
            r" ptp 1 b ",
            r" ptpn 1 ",
            r" tyrosine (?:protein )?phosphatase (?:non receptor type 1|1 b) ",
            r" non receptor type 1 b ",
        ),
    ),
    ReservedProtein(
        "MCL1",
        "Q07820",
        "MCL1",
        (
            r" mcl 1 ",
            r" induced myeloid leukemia cell differentiation protein ",
            r" myeloid cell leukemia (?:sequence )?1 ",
        ),
    ),
    ReservedProtein("TYK2", "P29597", "TYK2", (r" tyk 2 ",)),
    ReservedProtein(
        "HIF-2alpha",
        "Q99814",
        "EPAS1",
        (
            r" hif 2 ",
            r" hypoxia inducible factor 2 ",
            r" endothelial pas domain containing protein 1 ",
            r" epas 1 ",
        ),
    ),
    ReservedProtein(
        "PDE2A",
        "O00408",
        "PDE2A",
        (
            r" pde 2 ",
            r" cgmp (?:dependent|stimulated) (?:3 5 cyclic )?phosphodiesterase ",
            r" phosphodiesterase 2 ",
        ),
    ),
)

RESERVED_ENTRIES = {
    "6yqv": "thrombin",
    "1oyt": "thrombin",
    "1bcu": "thrombin",
    "3utu": "thrombin",
    "7klx": "PTP1B",
    "2hb1": "PTP1B",
    "2qbp": "PTP1B",
    "2qbr": "PTP1B",
    "7nb4": "MCL1",
}

_PATTERNS = [(protein.name, re.compile(p)) for protein in RESERVED_PROTEINS for p in protein.patterns]
GREEK_LETTERS = {"α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "κ": "kappa"}
BRITISH_SPELLINGS = {"leukaemia": "leukemia", "haem": "hem", "oestrogen": "estrogen", "tumour": "tumor"}
_LETTER_DIGIT = re.compile(r"(?<=[a-z])(?=[0-9])|(?<=[0-9])(?=[a-z])")
_NOT_A_WORD = re.compile(r"[^a-z0-9]+")
_ACCESSIONS = re.compile(r"[\s,;/|]+")
_BY_UNIPROT = {protein.uniprot: protein.name for protein in RESERVED_PROTEINS}
_MNEMONIC = re.compile(r"^(" + "|".join(p.mnemonic for p in RESERVED_PROTEINS) + r")_[A-Z0-9]+(?:_|$)", re.IGNORECASE)
_BY_MNEMONIC = {protein.mnemonic: protein.name for protein in RESERVED_PROTEINS}


def by_entry(pdb_id: str) -> str:
    """The reserved protein a PDB entry is of, or ''."""
    return RESERVED_ENTRIES.get(pdb_id.strip().lower(), "")


def normalised_name(name: str) -> str:
    """A protein name as the patterns are written: Unicode compatibility forms folded (NFKC), lower case, Greek
    letters spelled out, British spellings American, every run of other characters (punctuation, hyphens,
    apostrophes) one space, a space between letters and digits, one space before and after."""
    text = unicodedata.normalize("NFKC", name).lower()
    for letter, spelled in GREEK_LETTERS.items():
        text = text.replace(letter, f" {spelled} ")
    for british, american in BRITISH_SPELLINGS.items():
        text = text.replace(british, american)
    text = _NOT_A_WORD.sub(" ", _LETTER_DIGIT.sub(" ", text))
    return f" {' '.join(text.split())} "


def by_uniprot(accessions: str) -> str:
    """The reserved protein of a UniProt accession field (``P00734``, ``P00734-1``, ``P12345,P00734``: every
    accession of the field counts), or ''."""
    found = (_BY_UNIPROT.get(a.upper().split("-")[0], "") for a in _ACCESSIONS.split(accessions.strip()) if a)
    return next((name for name in found if name), "")


def by_entry_name(entry_name: str) -> str:
    """The reserved protein of a UniProt entry name or a folder named after one (``THRB_HUMAN_328_622_0``)."""
    match = _MNEMONIC.match(entry_name.strip())
    return _BY_MNEMONIC[match.group(1).upper()] if match else ""


def by_name(protein_name: str) -> str:
    """The reserved protein a protein name names, or ''."""
    text = normalised_name(protein_name)
    return next((name for name, pattern in _PATTERNS if pattern.search(text)), "")


def reserved_reason(pdb_ids=(), uniprot: str = "", protein_name: str = "", entry_name: str = "") -> str:
    """The excluded.csv reason ("reserved test protein: NAME") when any evidence names a reserved protein, else ''."""
    found = next((by_entry(pdb_id) for pdb_id in pdb_ids if by_entry(pdb_id)), "")
    found = found or by_uniprot(uniprot) or by_entry_name(entry_name) or by_name(protein_name)
    return f"reserved test protein: {found}" if found else ""
