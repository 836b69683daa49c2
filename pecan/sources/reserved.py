"""The reserved external test proteins (TYK2, thrombin, MCL1, PTP1B, HIF-2α, PDE2A): no reader lets one through.

A complex is reserved when any of these names one of the proteins:

- its PDB entry (the receptor's, and for a cross-docked pose the ligand's source entry too) is one of
  ``RESERVED_ENTRIES``, the entries the corpus names (studies/corpus/README.md);
- its UniProt accession (PDBbind's name index) is the protein's human accession;
- its UniProt entry name (CrossDocked2020's pocket folders, e.g. ``THRB_HUMAN_328_622_0``) starts with the
  protein's entry mnemonic, whatever the species (bovine thrombin is thrombin too);
- its protein name (PDBbind's name index) matches one of the protein's names, case-insensitive and as whole
  words: ``thrombin`` and ``prothrombin`` (not "thrombin-activatable fibrinolysis inhibitor" or the "thrombin
  receptor", which are other proteins), ``PTP1B`` / "tyrosine-protein phosphatase non-receptor type 1", ...

The filter errs towards removing: a training complex lost costs less than a test protein seen in training.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ReservedProtein:
    """One reserved protein: its name, human UniProt accession, entry mnemonic and name patterns."""

    name: str
    uniprot: str
    mnemonic: str
    patterns: tuple[str, ...]


RESERVED_PROTEINS = (
    ReservedProtein(
        "thrombin",
        "P00734",
        "THRB",
        (
            r"\b(?:alpha-|α-)?(?:pro)?thrombin\b(?!-activatable| receptor)",
            r"\bcoagulation factor iia?\b",
        ),
    ),
    ReservedProtein(
        "PTP1B",
        "P18031",
        "PTN1",
        (
            r"\bptp-?1b\b",
            r"\bptpn1\b",
            r"tyrosine(?:-protein)?[- ]phosphatase,? (?:non-receptor type 1|1b)\b",
        ),
    ),
    ReservedProtein(
        "MCL1",
        "Q07820",
        "MCL1",
        (r"\bmcl-?1\b", r"induced myeloid leukemia cell differentiation protein", r"myeloid cell leukemia[- ]1\b"),
    ),
    ReservedProtein("TYK2", "P29597", "TYK2", (r"\btyk-?2\b",)),
    ReservedProtein(
        "HIF-2alpha",
        "Q99814",
        "EPAS1",
        (
            r"\bhif-?2(?:α|a|alpha)?\b",
            r"hypoxia-inducible factor 2",
            r"endothelial pas domain-containing protein 1\b",
            r"\bepas-?1\b",
        ),
    ),
    ReservedProtein(
        "PDE2A",
        "O00408",
        "PDE2A",
        (
            r"\bpde-?2a?\b",
            r"cgmp-(?:dependent|stimulated) (?:3',5'-cyclic )?phosphodiesterase",
            r"\bphosphodiesterase 2a\b",
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

_PATTERNS = [(protein.name, re.compile(p, re.IGNORECASE)) for protein in RESERVED_PROTEINS for p in protein.patterns]
_BY_UNIPROT = {protein.uniprot: protein.name for protein in RESERVED_PROTEINS}
_MNEMONIC = re.compile(r"^(" + "|".join(p.mnemonic for p in RESERVED_PROTEINS) + r")_[A-Z0-9]+(?:_|$)", re.IGNORECASE)
_BY_MNEMONIC = {protein.mnemonic: protein.name for protein in RESERVED_PROTEINS}


def by_entry(pdb_id: str) -> str:
    """The reserved protein a PDB entry is of, or ''."""
    return RESERVED_ENTRIES.get(pdb_id.strip().lower(), "")


def by_uniprot(accession: str) -> str:
    """The reserved protein of a UniProt accession (``P00734``, ``P00734-1``), or ''."""
    return _BY_UNIPROT.get(accession.strip().upper().split("-")[0], "")


def by_entry_name(entry_name: str) -> str:
    """The reserved protein of a UniProt entry name or a folder named after one (``THRB_HUMAN_328_622_0``)."""
    match = _MNEMONIC.match(entry_name.strip())
    return _BY_MNEMONIC[match.group(1).upper()] if match else ""


def by_name(protein_name: str) -> str:
    """The reserved protein a protein name names, or ''."""
    return next((name for name, pattern in _PATTERNS if pattern.search(protein_name)), "")


def reserved_reason(pdb_ids=(), uniprot: str = "", protein_name: str = "", entry_name: str = "") -> str:
    """The excluded.csv reason ("reserved test protein: NAME") when any evidence names a reserved protein, else ''."""
    found = next((by_entry(pdb_id) for pdb_id in pdb_ids if by_entry(pdb_id)), "")
    found = found or by_uniprot(uniprot) or by_entry_name(entry_name) or by_name(protein_name)
    return f"reserved test protein: {found}" if found else ""
