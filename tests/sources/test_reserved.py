"""The reserved-protein filter: by PDB entry, UniProt accession, UniProt entry name and protein name."""

import pytest

from pecan.sources.reserved import by_entry, by_entry_name, by_name, by_uniprot, normalised_name, reserved_reason


@pytest.mark.parametrize(
    "code, protein",
    [("1OYT", "thrombin"), ("6yqv", "thrombin"), ("2qbr", "PTP1B"), ("7KLX", "PTP1B"), ("7nb4", "MCL1"), ("2tpi", "")],
)
def test_entries_the_corpus_names(code, protein):
    assert by_entry(code) == protein


@pytest.mark.parametrize(
    "accession, protein",
    [
        ("P00734", "thrombin"),
        ("p18031", "PTP1B"),
        ("Q07820", "MCL1"),
        ("P29597", "TYK2"),
        ("Q99814", "HIF-2alpha"),
        ("O00408", "PDE2A"),
        ("P00734-1", "thrombin"),
        ("P00742", ""),  # coagulation factor X
        ("------", ""),
    ],
)
def test_uniprot_accessions(accession, protein):
    assert by_uniprot(accession) == protein


@pytest.mark.parametrize(
    "name, protein",
    [
        ("THROMBIN", "thrombin"),
        ("ALPHA-THROMBIN", "thrombin"),
        ("Prothrombin", "thrombin"),
        ("thrombin heavy chain", "thrombin"),
        ("COAGULATION FACTOR II", "thrombin"),
        ("THROMBIN-ACTIVATABLE FIBRINOLYSIS INHIBITOR", ""),
        ("thrombin receptor", ""),
        ("COAGULATION FACTOR X", ""),
        ("COAGULATION FACTOR XIII", ""),
        ("TYROSINE-PROTEIN PHOSPHATASE NON-RECEPTOR TYPE 1", "PTP1B"),
        ("TYROSINE-PROTEIN PHOSPHATASE NON-RECEPTOR TYPE 11", ""),
        ("PTP1B", "PTP1B"),
        ("PROTEIN TYROSINE PHOSPHATASE 1B", "PTP1B"),
        ("Protein-tyrosine phosphatase 1B", "PTP1B"),
        ("PTP-1B", "PTP1B"),
        ("RECEPTOR-TYPE TYROSINE-PROTEIN PHOSPHATASE BETA", ""),
        ("MYELOID CELL LEUKEMIA-1", "MCL1"),
        ("CGMP-STIMULATED PHOSPHODIESTERASE", "PDE2A"),
        ("HIF2-alpha", "HIF-2alpha"),
        ("Induced myeloid leukemia cell differentiation protein Mcl-1", "MCL1"),
        ("NON-RECEPTOR TYROSINE-PROTEIN KINASE TYK2", "TYK2"),
        ("TYROSINE-PROTEIN KINASE JAK2", ""),
        ("Endothelial PAS domain-containing protein 1", "HIF-2alpha"),
        ("HIF-2 alpha", "HIF-2alpha"),
        ("HIF-1 alpha", ""),
        ("cGMP-dependent 3',5'-cyclic phosphodiesterase", "PDE2A"),
        ("PDE2A", "PDE2A"),
        ("PDE10A", ""),
        ("HIV-1 PROTEASE", ""),
    ],
)
def test_protein_names_whole_words_case_insensitive(name, protein):
    assert by_name(name) == protein


@pytest.mark.parametrize(
    "folder, protein",
    [
        ("THRB_HUMAN_328_622_0", "thrombin"),
        ("THRB_BOVIN_364_622_0", "thrombin"),
        ("PTN1_HUMAN_1_321_0", "PTP1B"),
        ("EPAS1_HUMAN_238_349_0", "HIF-2alpha"),
        ("PDE2A_HUMAN_580_919_0", "PDE2A"),
        ("PDE10_HUMAN_439_773_0", ""),
        ("BRD4_HUMAN_42_168_0", ""),
    ],
)
def test_crossdocked_pocket_folders_by_uniprot_entry_name(folder, protein):
    assert by_entry_name(folder) == protein


def test_reason_names_the_protein_and_any_evidence_is_enough():
    assert reserved_reason(["1abc", "1bcu"]) == "reserved test protein: thrombin"
    assert reserved_reason(["1abc"], uniprot="Q07820") == "reserved test protein: MCL1"
    assert reserved_reason(["1abc"], protein_name="TYK2 kinase") == "reserved test protein: TYK2"
    assert reserved_reason(["1abc"], uniprot="P00742", protein_name="coagulation factor X") == ""


# Every name the docs list (docs/own-data.md, "The reserved test proteins"), each under the spellings a name index
# may use: another case, hyphens for spaces and none at all, Greek letters or their names, British spellings,
# typographic apostrophes.
SPELLINGS = {
    "thrombin": [
        "thrombin",
        "THROMBIN",
        "Prothrombin",
        "α-thrombin",
        "ALPHA THROMBIN",
        "Coagulation factor II",
        "coagulation factor IIa",
        "COAGULATION FACTOR 2",
    ],
    "PTP1B": [
        "PTP1B",
        "PTP 1B",
        "PTP-1B",
        "ptp1b",
        "PTPN1",
        "PTPN-1",
        "TYROSINE-PROTEIN PHOSPHATASE NON-RECEPTOR TYPE 1",
        "TYROSINE-PROTEIN PHOSPHATASE NON-RECEPTOR TYPE 1B",
        "NON-RECEPTOR TYPE 1B",
        "tyrosine-protein phosphatase, non receptor type 1",
        "PROTEIN-TYROSINE PHOSPHATASE 1B",
        "protein tyrosine phosphatase 1 b",
        "TYROSINE PHOSPHATASE 1B",
    ],
    "MCL1": [
        "MCL1",
        "MCL-1",
        "MCL 1",
        "mcl1",
        "Induced myeloid leukemia cell differentiation protein",
        "INDUCED MYELOID LEUKAEMIA CELL DIFFERENTIATION PROTEIN MCL-1",
        "Myeloid cell leukemia 1",
        "MYELOID CELL LEUKAEMIA 1",
        "MYELOID CELL LEUKEMIA-1",
        "myeloid cell leukaemia sequence 1",
    ],
    "TYK2": ["TYK2", "TYK-2", "TYK 2", "tyk2", "NON-RECEPTOR TYROSINE-PROTEIN KINASE TYK2"],
    "HIF-2alpha": [
        "HIF-2α",
        "HIF-2 ALPHA",
        "HIF 2 ALPHA",
        "HIF2A",
        "hif2α",
        "HIF-2Α",  # a capital Greek alpha
        "HIF-2",
        "Hypoxia-inducible factor 2-alpha",
        "HYPOXIA INDUCIBLE FACTOR 2 ALPHA",
        "Endothelial PAS domain-containing protein 1",
        "ENDOTHELIAL PAS DOMAIN CONTAINING PROTEIN 1",
        "EPAS1",
        "EPAS-1",
    ],
    "PDE2A": [
        "PDE2A",
        "PDE2",
        "PDE 2A",
        "PDE-2A",
        "cGMP-dependent 3',5'-cyclic phosphodiesterase",
        "cGMP-dependent 3\u2032,5\u2032-cyclic phosphodiesterase",  # primes
        "cGMP-dependent 3\u2019,5\u2019-cyclic phosphodiesterase",  # typographic apostrophes
        "CGMP-STIMULATED PHOSPHODIESTERASE",
        "cGMP stimulated 3',5' cyclic phosphodiesterase",
        "Phosphodiesterase 2A",
        "PHOSPHODIESTERASE 2A, CGMP-STIMULATED",
    ],
}


@pytest.mark.parametrize("name, protein", [(name, protein) for protein, names in SPELLINGS.items() for name in names])
def test_every_reserved_protein_under_every_spelling(name, protein):
    assert by_name(name) == protein
    assert reserved_reason(["1abc"], protein_name=name) == f"reserved test protein: {protein}"


@pytest.mark.parametrize(
    "name",
    [
        "THROMBIN-ACTIVATABLE FIBRINOLYSIS INHIBITOR",
        "Thrombin receptor",
        "COAGULATION FACTOR II RECEPTOR",
        "TYROSINE-PROTEIN PHOSPHATASE NON-RECEPTOR TYPE 11",
        "NON-RECEPTOR TYPE 12",
        "PTP1C",
        "HIF-1α",
        "HIF 1 ALPHA",
        "PDE10A",
        "PDE 4B",
        "TYK 1",
        "MCL 12",
        "MYELOID CELL LEUKAEMIA FACTOR 2",
        "TYROSINE-PROTEIN KINASE JAK2",
    ],
)
def test_other_proteins_whatever_their_spelling(name):
    assert by_name(name) == ""


@pytest.mark.parametrize(
    "field, protein",
    [
        ("P00734,P12345", "thrombin"),
        ("P12345,P00734", "thrombin"),
        ("P12345; Q07820", "MCL1"),
        ("P12345 P18031-2", "PTP1B"),
        ("P12345/O00408", "PDE2A"),
        ("P12345,P23456", ""),
    ],
)
def test_every_uniprot_id_of_a_field_counts(field, protein):
    assert by_uniprot(field) == protein


def test_names_are_normalised_by_meaning():
    assert normalised_name("HIF-2α") == normalised_name("hif 2 alpha") == " hif 2 alpha "
    assert normalised_name("Myeloid Cell Leukaemia-1") == " myeloid cell leukemia 1 "
    assert normalised_name("PTP 1B") == normalised_name("ptp1b") == " ptp 1 b "
    assert normalised_name("3\u2019,5\u2019-cyclic") == normalised_name("3',5'-cyclic") == " 3 5 cyclic "
