"""The public training corpus (studies/corpus): cluster split, reserved-protein screen, prepare + redock."""

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from studies import archive
from studies.corpus import clusters
from studies.corpus.clusters import Hit

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "studies" / "corpus"


def _hits(table):
    return [Hit(f"{a}|A", f"{b}|A", identity, coverage) for a, b, identity, coverage in table]


# A hand-built identity table: a-b-c are one family only through the chain a~b~c (single linkage), d~e is
# below the coverage threshold, f is alone, g~h passes.
TABLE = [
    ("a", "b", 0.45, 0.9),
    ("b", "c", 0.31, 0.8),
    ("a", "c", 0.10, 0.9),
    ("d", "e", 0.95, 0.2),
    ("g", "h", 0.60, 0.7),
    ("h", "g", 0.60, 0.7),
]
COMPLEXES = list("abcdefgh")


def test_single_linkage_joins_through_chains_and_respects_both_thresholds():
    cluster = clusters.single_linkage(COMPLEXES, _hits(TABLE), identity=0.30, coverage=0.5)
    assert cluster["a"] == cluster["b"] == cluster["c"] == "a"
    assert cluster["d"] == "d" and cluster["e"] == "e"  # 95% identical, but over 20% of the shorter chain
    assert cluster["g"] == cluster["h"] == "g" and cluster["f"] == "f"
    stricter = clusters.single_linkage(COMPLEXES, _hits(TABLE), identity=0.40, coverage=0.5)
    assert stricter["c"] == "c" and stricter["a"] == stricter["b"]


@pytest.mark.parametrize("n_folds", [2, 3, 5])
def test_no_cluster_lies_on_both_sides_of_any_fold(n_folds):
    cluster = clusters.single_linkage(COMPLEXES, _hits(TABLE), identity=0.30, coverage=0.5)
    fold_of_cluster = clusters.assign_folds(cluster, n_folds)
    fold = {c: fold_of_cluster[cluster[c]] for c in COMPLEXES}
    for a, b, identity, coverage in TABLE:
        if identity >= 0.30 and coverage >= 0.5:
            assert fold[a] == fold[b], (a, b)  # a test complex never shares 30% identity with a training one
    sizes = pd.Series(fold).value_counts()
    assert sizes.max() - sizes.min() <= 3  # balanced: the largest cluster (3) bounds the imbalance


def test_reserved_matches_take_the_best_reference_above_the_thresholds():
    hits = _hits([("x", "ref1", 0.5, 0.9), ("x", "ref2", 0.9, 0.9), ("y", "ref1", 0.35, 0.9), ("z", "ref1", 0.8, 0.1)])
    found = clusters.reserved_matches(hits, {"ref1|A": "thrombin", "ref2|A": "PTP1B"}, identity=0.4, coverage=0.5)
    assert found == {"x": ("PTP1B", "ref2|A", 0.9)}


def test_the_corpus_holds_no_reserved_protein_and_lists_every_removal():
    from studies.corpus.prepare import RESERVED_ENTRIES

    manifest = pd.read_csv(CORPUS / "manifest.csv", dtype=str, keep_default_na=False)
    sources = pd.read_csv(CORPUS / "sources.csv", dtype=str, keep_default_na=False)
    excluded = pd.read_csv(CORPUS / "excluded.csv", dtype=str, keep_default_na=False)
    assert set(manifest["complex_id"]) == set(sources["complex_id"])
    assert not set(sources["pdbid"]) & set(RESERVED_ENTRIES)
    removed = excluded[excluded["reason"].str.startswith("reserved test protein")]
    named = {cid[:4] for cid in removed["complex_id"]}
    present = {name.split("/")[1] for name in archive.members("corpus", "inputs")}
    assert not {cid for cid in removed["complex_id"]} & present  # no input of a removed complex is kept
    assert {"1oyt", "2qbp", "7nb4"} <= named  # the named reserved entries of the sources
    assert len(removed) > len(named & set(RESERVED_ENTRIES))  # the sequence screen found more than the names


def test_folds_follow_the_clusters():
    manifest = pd.read_csv(CORPUS / "manifest.csv", dtype=str, keep_default_na=False)
    assert manifest.groupby("family")["fold"].nunique().max() == 1
    assert len(manifest) == manifest["complex_id"].nunique()


def _fake_source(tmp_path: Path) -> tuple[Path, Path]:
    """Two git repositories in the sources' layouts: the ProLIF 1s2g complex as a PoseBusters entry and as a
    core-set entry (PDBQT written by Open Babel), so both paths of prepare run."""
    from pecan.convert.examples import prolif_data

    data = prolif_data() / "implicitHbond"
    docking = tmp_path / "docking"
    entry = docking / "data_sets" / "posebusters_benchmark_set" / "1S2G_LIG"
    entry.mkdir(parents=True)
    shutil.copy(data / "receptor.pdb", entry / "1S2G_LIG_protein.pdb")
    shutil.copy(data / "1.D.sdf", entry / "1S2G_LIG_ligand.sdf")
    (docking / "data_sets" / "astex_diverse_set").mkdir()
    coreset = tmp_path / "coreset"
    core = coreset / "pdbbind-2019.chemflow" / "DockFlow" / "qvina_ex8_1" / "9xyz"
    core.mkdir(parents=True)
    subprocess.run(["obabel", str(data / "receptor.pdb"), "-xr", "-O", str(core / "receptor.pdbqt")], check=True)
    subprocess.run(["obabel", str(data / "1.D.sdf"), "-O", str(core / "ligand.pdbqt")], check=True)
    for repo in (docking, coreset):
        (repo / "keep").write_text("x\n")
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
        subprocess.run(
            ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], check=True
        )
    return docking, coreset


@pytest.mark.slow
def test_prepare_and_redock_a_tiny_slice(tmp_path):
    for tool, why in (
        ("obabel", "Open Babel (apt-get install openbabel)"),
        ("mmseqs", "MMseqs2 (apt-get install mmseqs2)"),
    ):
        if shutil.which(tool) is None:
            pytest.skip(f"the corpus preparation needs {why}")
    pytest.importorskip("vina", reason="redocking needs the dock extra: pip install -e '.[dock]'")
    pytest.importorskip("meeko", reason="redocking needs the dock extra: pip install -e '.[dock]'")
    pytest.importorskip("prolif", reason="the test complex ships with ProLIF (convert extra)")
    from pecan.redock.dock import DockOptions
    from pecan.redock.run import redock
    from studies.corpus import prepare

    docking, coreset = _fake_source(tmp_path)
    assert prepare.main([str(docking), str(coreset), "--folds", "2", "--out", str(tmp_path / "corpus")]) == 0
    manifest = pd.read_csv(tmp_path / "corpus" / "manifest.csv", dtype=str)
    # both paths kept their complex; the same receptor under another PDB id is the same protein: one cluster
    assert sorted(manifest["complex_id"]) == ["1s2g_lig", "9xyz"]
    assert manifest["family"].nunique() == 1 and manifest["fold"].nunique() == 1
    sources = pd.read_csv(tmp_path / "corpus" / "sources.csv", dtype=str)
    assert set(sources["source"]) == {"posebusters", "coreset2013"} and sources["commit"].str.len().min() == 40
    receptor = (tmp_path / "corpus" / manifest["receptor"].iloc[0]).read_text().splitlines()
    assert any(line[76:78].strip() == "H" for line in receptor) and "HOH" not in "".join(receptor)
    summary = redock(
        tmp_path / "corpus" / "manifest.csv",
        tmp_path / "docked",
        DockOptions(exhaustiveness=1, n_poses=3, seed=5, timeout=300),
        progress=False,
    )
    assert summary["complexes"] == len(manifest) and summary["poses"] >= len(manifest)


def test_ship_card_only_needs_the_checkpoint_it_describes(tmp_path, capsys):
    from studies.corpus import ship

    missing = tmp_path / "corpus_egnn.pt"
    assert ship.main(["--card-only", "--out", str(missing), "--work", str(tmp_path / "work")]) == 2
    assert f"no checkpoint at {missing}" in capsys.readouterr().err
    assert not (tmp_path / "work").exists()  # nothing converted or trained


def test_table_by_source_counts_top1_per_source_and_the_disagreements():
    from studies.corpus import table

    def hits(model, docking, gnina, ceiling=1):
        return {"model_top1": model, "docking_top1": docking, "gnina_top1": gnina, "ceiling": ceiling}

    result = {
        "tag": "t",
        "peers": ["gnina"],
        "folds": {
            "0": {"per_complex": {"a": hits(1, 0, 1), "b": hits(0, 1, 1)}},
            "1": {"per_complex": {"c": hits(1, 1, 0), "d": hits(0, 0, 0, ceiling=0)}},
        },
    }
    lines = table.by_source(result, {"a": "astex", "b": "posebusters", "c": "posebusters", "d": "posebusters"})
    assert lines[2:] == [
        "| astex | 1 | 1 | 0 | 1 | 1 |",
        "| posebusters | 3 | 1 | 2 | 1 | 2 |",
        "model right where the docking score is wrong: 1; the reverse: 1",
    ]
