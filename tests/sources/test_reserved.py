"""The reserved-protein filter: by PDB entry, UniProt accession, UniProt entry name and protein name."""

import pytest

from pecan.sources.reserved import by_entry, by_entry_name, by_name, by_uniprot, reserved_reason


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
