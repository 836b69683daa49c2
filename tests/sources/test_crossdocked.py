"""`pecan sources crossdocked`: GNINA's types files over CrossDocked2020's folders -> a convert manifest, the
poses files, the fold files' split and excluded.csv; on a miniature of the layout built from a real CrossDocked2020
pose and pocket, and on real types files."""

import gzip
import shutil

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
from rdkit import Chem  # noqa: E402
from rdkit.Geometry import Point3D  # noqa: E402

from pecan.commands.sources import main  # noqa: E402
from pecan.convert.complexes import read_manifest as read_convert_manifest  # noqa: E402
from tests.sources.conftest import DATA, POCKET, POSE  # noqa: E402

POCKET_DIR = "HMDH_HUMAN_426_888_0"
STEM = "1h36_A_rec_1h36_r88_lig"


def shifted(mol, dx):
    copy = Chem.Mol(mol)
    conformer = copy.GetConformer()
    for k in range(copy.GetNumAtoms()):
        p = conformer.GetAtomPosition(k)
        conformer.SetAtomPosition(k, Point3D(p.x + dx, p.y, p.z))
    return copy


def write_sdf_gz(path, mols):
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(Chem.MolToMolBlock(m) + "$$$$\n" for m in mols)
    path.write_bytes(gzip.compress(text.encode()))


def add_pocket(root, folder, rec, crystal=True):
    """A pocket folder: the receptor, the crystal ligand, 3 docked poses (RMSD 0, 1, 3 A) and the minimised one."""
    pose = Chem.MolFromMolFile(str(POSE))
    (root / folder).mkdir(parents=True)
    shutil.copy(POCKET, root / folder / f"{rec}_rec.pdb")
    if crystal:
        Chem.MolToPDBFile(pose, str(root / folder / "1h36_r88_lig.pdb"))
    lig = f"{rec}_rec_1h36_r88_lig"
    write_sdf_gz(root / folder / f"{lig}_tt_docked.sdf.gz", [pose, shifted(pose, 1.0), shifted(pose, 3.0)])
    write_sdf_gz(root / folder / f"{lig}_tt_min.sdf.gz", [pose])


def line(label, pk, rmsd, folder, rec, lig, score):
    receptor, ligand = f"{folder}/{rec}_rec_0.gninatypes", f"{folder}/{rec}_rec_1h36_r88_lig_{lig}.gninatypes"
    return f"{label} {pk} {rmsd} {receptor} {ligand} #{score}\n"


@pytest.fixture
def crossdocked(tmp_path):
    root = tmp_path / "CrossDocked2020"
    add_pocket(root, POCKET_DIR, "1h36_A")
    add_pocket(root, "THRB_HUMAN_328_622_0", "1abc_H")  # a reserved pocket, by its UniProt entry name
    types = tmp_path / "types"
    types.mkdir()
    (types / "it2_tt_v1.1_0_train0.types").write_text(
        line(1, 6.2, 0.0, POCKET_DIR, "1h36_A", "tt_min_0", -9.1)
        + line(1, 6.2, 0.0, POCKET_DIR, "1h36_A", "tt_docked_0", -9.0)
        + line(1, 6.2, 1.0, POCKET_DIR, "1h36_A", "tt_docked_1", -8.5)
        + line(0, -6.2, 3.0, POCKET_DIR, "1h36_A", "tt_docked_2", -7.0)
        + line(0, -6.2, 3.0, POCKET_DIR, "1h36_A", "tt_docked_7", -6.0)  # past the file's end
        + line(0, 0, 5.0, "GONE_HUMAN_1_9_0", "9xyz_A", "tt_docked_0", -5.0)  # no such folder
    )
    (types / "it2_tt_v1.1_0_test0.types").write_text(
        line(1, 7.0, 0.5, "THRB_HUMAN_328_622_0", "1abc_H", "tt_docked_0", -9)
    )
    return root, types


def run(root, types, out, *extra):
    files = sorted(str(p) for p in types.glob("*.types"))
    return main(["crossdocked", *files, "--root", str(root), "--out", str(out), *extra])


def test_types_files_become_a_convert_manifest_with_poses_labels_and_split(crossdocked, tmp_path, capsys):
    root, types = crossdocked
    out = tmp_path / "out"
    assert run(root, types, out, "--check-rmsd") == 0
    (entry,) = read_convert_manifest(out / "manifest.csv")  # pecan convert's own reader accepts it
    assert entry.complex_id == STEM and entry.receptor == out / f"../CrossDocked2020/{POCKET_DIR}/1h36_A_rec.pdb"
    assert entry.crystal_ligand == out / "crystals" / f"{STEM}.sdf"  # the PDB with the poses' bond orders
    assert entry.score_property == "docking_score"
    assert entry.affinity == pytest.approx(6.2)
    mols = list(Chem.SDMolSupplier(str(entry.poses)))
    assert [m.GetProp("_Name") for m in mols] == [
        f"{STEM}_tt_min_0",
        f"{STEM}_tt_docked_0",
        f"{STEM}_tt_docked_1",
        f"{STEM}_tt_docked_2",
    ]
    assert [m.GetProp("types_rmsd") for m in mols] == ["0", "0", "1", "3"]
    assert [m.GetProp("types_label") for m in mols] == ["1", "1", "1", "0"]
    assert mols[2].GetProp("docking_score") == "-8.5"
    poses = pd.read_csv(out / "poses.csv")
    assert np.allclose(poses["recomputed_rmsd"], poses["rmsd"], atol=1e-3)
    manifest = pd.read_csv(out / "manifest.csv", dtype=str, keep_default_na=False)
    assert (manifest["fold"][0], manifest["train_folds"][0], manifest["pocket"][0]) == ("", "0", POCKET_DIR)
    assert list(pd.read_csv(out / "splits" / "fold0_train.csv")["complex_id"]) == [STEM]
    excluded = pd.read_csv(out / "excluded.csv", dtype=str, keep_default_na=False)
    reasons = dict(zip(excluded["complex_id"] + "|" + excluded["pose_id"], excluded["reason"]))
    assert reasons["1abc_H_rec_1h36_r88_lig|"] == "reserved test protein: thrombin"
    assert reasons[f"{STEM}|{STEM}_tt_docked_7"] == f"record 7 of {STEM}_tt_docked.sdf.gz is past its end"
    assert reasons["9xyz_A_rec_1h36_r88_lig|"].startswith("missing file: ")
    printed = capsys.readouterr().out
    assert "reserved test proteins removed: thrombin 1" in printed
    assert "RMSD check: 4/4 poses agree within 0.5 A" in printed
    assert "note: no PDBbind name index" in printed and "not by UniProt ID or protein name" in printed


def test_the_test_file_of_a_fold_sets_the_fold_column(crossdocked, tmp_path):
    root, types = crossdocked
    (types / "it2_tt_v1.1_0_test0.types").write_text(line(1, 6.2, 0.0, POCKET_DIR, "1h36_A", "tt_docked_0", -9.0))
    (types / "it2_tt_v1.1_0_train0.types").unlink()
    out = tmp_path / "out"
    assert run(root, types, out) == 0
    manifest = pd.read_csv(out / "manifest.csv", dtype=str, keep_default_na=False)
    assert manifest["fold"][0] == "0"
    assert list(pd.read_csv(out / "splits" / "fold0_test.csv")["complex_id"]) == [STEM]


def test_a_complex_in_train_and_test_of_one_fold_is_left_out(crossdocked, tmp_path):
    root, types = crossdocked
    (types / "it2_tt_v1.1_0_test0.types").write_text(line(1, 6.2, 0.0, POCKET_DIR, "1h36_A", "tt_docked_0", -9.0))
    out = tmp_path / "out"
    assert run(root, types, out) == 1
    excluded = pd.read_csv(out / "excluded.csv", dtype=str, keep_default_na=False)
    assert "in both train0 and test0" in set(excluded["reason"])


def test_real_libmolgrid_types_lines_over_their_layout(tmp_path):
    """gnina/libmolgrid's small.types (PDBbind-derived redocking: <id>/<id>_docked_<k>): one complex per folder."""
    pose = Chem.MolFromMolFile(str(POSE))
    write_sdf_gz(tmp_path / "4kqp" / "4kqp_docked.sdf.gz", [shifted(pose, d) for d in (0.2, 4.3, 2.5, 2.8)])
    write_sdf_gz(tmp_path / "4kqp" / "4kqp_min.sdf.gz", [shifted(pose, 0.16)])
    shutil.copy(POCKET, tmp_path / "4kqp" / "4kqp_rec.pdb")
    Chem.MolToMolFile(pose, str(tmp_path / "4kqp" / "4kqp_ligand.sdf"))
    types = tmp_path / "small.types"
    shutil.copy(DATA / "libmolgrid_small.types", types)
    out = tmp_path / "out"
    assert main(["crossdocked", str(types), "--out", str(out)]) == 0
    (entry,) = read_convert_manifest(out / "manifest.csv")
    assert entry.complex_id == "4kqp" and entry.crystal_ligand.name == "4kqp_ligand.sdf"
    assert entry.score_property == ""  # no comment, no minimizedAffinity: no docking score
    poses = pd.read_csv(out / "poses.csv")
    assert list(poses["pose_id"]) == ["4kqp_min_0", "4kqp_docked_0", "4kqp_docked_1", "4kqp_docked_2", "4kqp_docked_3"]
    assert list(poses["rmsd"]) == [0.162643, 0.216481, 4.28411, 2.50741, 2.78808]
    excluded = pd.read_csv(out / "excluded.csv", dtype=str, keep_default_na=False)
    assert excluded["reason"][excluded["complex_id"] == "2ydt"].iloc[0].startswith("missing file: ")


def test_real_crystal_types_file_without_rmsd_column_reserved_entries_removed(tmp_path, capsys):
    """gnina/models' ref2_crystal_test0.types lines: label pK rec lig # Vina; four reserved entries among them."""
    out = tmp_path / "out"
    argv = ["crossdocked", str(DATA / "gnina_ref2_crystal_test0.types"), "--root", str(tmp_path), "--out", str(out)]
    assert main([*argv, "--columns", "label,affinity"]) == 1  # the structures are not in the repository
    excluded = pd.read_csv(out / "excluded.csv", dtype=str, keep_default_na=False)
    reasons = dict(zip(excluded["complex_id"], excluded["reason"]))
    assert {k: v for k, v in reasons.items() if v.startswith("reserved")} == {
        "1oyt": "reserved test protein: thrombin",
        "2hb1": "reserved test protein: PTP1B",
        "1bcu": "reserved test protein: thrombin",
        "3utu": "reserved test protein: thrombin",
    }
    assert reasons["3zsx"].startswith("missing file: ")
    assert "reserved test proteins removed: PTP1B 1, thrombin 3" in capsys.readouterr().out


def test_bad_invocations_exit_2(tmp_path, capsys):
    assert main(["crossdocked", str(tmp_path / "none.types"), "--out", str(tmp_path / "o")]) == 2
    assert "types file not found" in capsys.readouterr().err
    bad = tmp_path / "bad.types"
    bad.write_text("1 6 0.5 only_one_file.gninatypes\n")
    assert main(["crossdocked", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "bad.types, line 1" in capsys.readouterr().err
    assert main(["crossdocked", str(bad), "--out", str(tmp_path / "o"), "--columns", "rmsd"]) == 2


@pytest.mark.slow
def test_pecan_convert_turns_the_output_into_shards_whose_rmsd_matches_the_types_file(crossdocked, tmp_path):
    pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")
    from pecan.commands.convert import main as convert

    root, types = crossdocked
    assert run(root, types, tmp_path / "out") == 0
    assert convert([str(tmp_path / "out" / "manifest.csv"), "--out", str(tmp_path / "shards"), "--no-progress"]) == 0
    index = pd.read_csv(tmp_path / "shards" / "converted_all.csv")
    types_rmsd = pd.read_csv(tmp_path / "out" / "poses.csv").set_index("pose_id")["rmsd"]
    docked = index[index["is_crystal"] == 0].set_index("poseid")
    assert len(docked) == 4 and np.allclose(docked["rmsd"], types_rmsd[docked.index], atol=1e-3)
    assert sorted(docked["score"]) == [-9.1, -9.0, -8.5, -7.0]


def test_real_crossdocked2020_lines_over_a_miniature_of_their_pockets(tmp_path):
    """gnina/models' CrossDocked2020 types lines: redocked and cross-docked complexes per pocket, every pose file
    kind, the Vina score in the comment, pK 0 (unknown); the files are the real pose and pocket laid out by name."""
    types = DATA / "crossdocked2020_changed_typeslines_excerpt.types"
    pose = Chem.MolFromMolFile(str(POSE))
    for text in types.read_text().splitlines():
        receptor, ligand = text.split()[3:5]
        (tmp_path / receptor).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(POCKET, tmp_path / receptor.replace("_rec_0.gninatypes", "_rec.pdb"))
        stem, _, _ = ligand.removesuffix(".gninatypes").rpartition("_")
        write_sdf_gz(tmp_path / f"{stem}.sdf.gz", [pose, shifted(pose, 1.0)])
    Chem.MolToPDBFile(pose, str(tmp_path / "CITN_KLEPN_8_446_0" / "5a1s_und_lig.pdb"))
    out = tmp_path / "out"
    assert main(["crossdocked", str(types), "--root", str(tmp_path), "--out", str(out)]) == 0
    manifest = pd.read_csv(out / "manifest.csv", dtype=str, keep_default_na=False).set_index("complex_id")
    assert list(manifest.index) == [
        "5a1s_A_rec_5a1s_und_lig",
        "5xas_A_rec_5a1s_und_lig",
        "5ufg_A_rec_5ufg_cm5_lig",
        "3qu8_A_rec_5ufg_cm5_lig",
    ]
    assert manifest.loc["5xas_A_rec_5a1s_und_lig", "crystal_ligand"] == "crystals/5xas_A_rec_5a1s_und_lig.sdf"
    assert manifest.loc["5ufg_A_rec_5ufg_cm5_lig", "crystal_ligand"] == ""  # no 5ufg_cm5_lig.pdb here
    assert manifest.loc["5xas_A_rec_5a1s_und_lig", "receptor"].endswith("CITN_KLEPN_8_446_0/5xas_A_rec.pdb")
    assert set(manifest["affinity"]) == {""} and set(manifest["pocket"]) == {
        "CITN_KLEPN_8_446_0",
        "CP2B6_HUMAN_20_491_peripheralCM5_0",
    }
    poses = pd.read_csv(out / "poses.csv")
    cross = poses[poses["complex_id"] == "5xas_A_rec_5a1s_und_lig"]
    assert list(cross["pose_id"]) == [
        "5xas_A_rec_5a1s_und_lig_tt_min_0",
        "5xas_A_rec_5a1s_und_lig_tt_docked_0",
        "5xas_A_rec_5a1s_und_lig_tt_docked_1",
        "5xas_A_rec_5a1s_und_lig_it1_tt_docked_0",
        "5xas_A_rec_5a1s_und_lig_it1_tt_docked_1",
    ]
    assert list(cross["rmsd"]) == [2.06229, 8.11729, 7.94977, 5.69785, 6.68507]
    mols = list(Chem.SDMolSupplier(str(out / "poses" / "5xas_A_rec_5a1s_und_lig.sdf")))
    assert mols[2].GetProp("docking_score") == "-5.3733900000000006"
    assert pd.read_csv(out / "excluded.csv").empty


def test_a_pdbbind_name_index_lets_the_filter_see_proteins_by_uniprot_and_name(tmp_path, capsys):
    """2qbq (PTP1B) is no listed entry: gnina/models' crystal types lines alone let it through, the index does not."""
    types = tmp_path / "ref2_crystal_test0.types"
    types.write_text(
        (DATA / "gnina_ref2_crystal_test0.types").read_text()
        + "1 7.44 2qbq/2qbq_rec_0.gninatypes 2qbq/2qbq_crystal_0.gninatypes #-8.01072\n"
    )
    index = tmp_path / "INDEX_general_PL_name.2020"
    index.write_text("# PDB code, release year, Uniprot ID, protein name\n2qbq  2007  P18031  PTP1B\n")
    out = tmp_path / "out"
    argv = ["crossdocked", str(types), "--out", str(out), "--columns", "label,affinity"]
    assert main(argv) == 1
    reasons = pd.read_csv(out / "excluded.csv").set_index("complex_id")["reason"]
    assert reasons["2qbq"].startswith("missing file")
    assert main([*argv, "--index", str(index)]) == 1
    reasons = pd.read_csv(out / "excluded.csv").set_index("complex_id")["reason"]
    assert reasons["2qbq"] == "reserved test protein: PTP1B"
    assert "reserved test proteins removed: PTP1B 2, thrombin 3" in capsys.readouterr().out


@pytest.mark.parametrize(
    "columns, protein",
    [
        ({"uniprot": "P12345,P18031", "protein": "SOME CHAIN"}, "PTP1B"),
        ({"uniprot": "", "protein": "MYELOID CELL LEUKAEMIA 1"}, "MCL1"),
        ({"uniprot": "", "protein": "HIF 2 ALPHA"}, "HIF-2alpha"),
        ({"uniprot": "", "protein": "BROMODOMAIN-CONTAINING PROTEIN 4"}, ""),
    ],
)
def test_the_reserved_rule_of_the_name_index_is_pdbbinds(tmp_path, columns, protein):
    """A cross-docked complex's entries looked up in a name index: the same rule as the PDBbind reader's."""
    from pecan.sources.crossdocked import Complex, reserved

    entry = Complex((str(tmp_path / "BRD4_HUMAN_42_168_0"), "5abc_A_rec_6def_x_lig"), tmp_path / "5abc_A_rec.pdb")
    expected = f"reserved test protein: {protein}" if protein else ""
    assert reserved(entry, {"6def": columns}) == expected
