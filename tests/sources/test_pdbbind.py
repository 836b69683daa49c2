"""`pecan sources pdbbind`: a PDBbind-style folder -> a redock (or convert) manifest plus excluded.csv."""

import math
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")

from pecan.commands.sources import main  # noqa: E402
from pecan.convert.complexes import read_manifest as read_convert_manifest  # noqa: E402
from pecan.redock.run import read_manifest as read_redock_manifest  # noqa: E402
from pecan.runtime.errors import DataError  # noqa: E402
from pecan.sources.pdbbind import default_indexes, read_index  # noqa: E402

DATA_INDEX = """# ==============================================================================
# List of protein-ligand complexes with known binding data in PDBbind v.2020
# PDB code, resolution, release year, -logKd/Ki, Kd/Ki, reference, ligand name
# ==============================================================================
2tpi  2.10  1982   4.31  Kd=49uM       // 2tpi.pdf (2-mer)
1h36  1.80  2003   6.20  Ki=0.63uM     // 1h36.pdf (R88)
5nmr   NMR  2009   3.00  IC50=1mM      // 5nmr.pdf (ABC)
1oyt  1.67  2003   7.24  Ki=57nM       // 1oyt.pdf (FSN)
"""
NAME_INDEX = """# ==============================================================================
# List of protein-ligand complexes in PDBbind v.2020
# PDB code, release year, Uniprot ID, protein name
# ==============================================================================
2tpi  1982  P00760  TRYPSIN
1h36  2003  P04035  HMG-COA REDUCTASE
5nmr  2009  ------  PHOSPHODIESTERASE 2A
7thr  2010  P00734  ALPHA-THROMBIN HEAVY CHAIN
9pde  2011  ------  cGMP-dependent 3',5'-cyclic phosphodiesterase
"""


def benzene_mol2():
    """A hand-written Tripos mol2 of benzene (RDKit reads mol2 but does not write it)."""
    rows = []
    for k in range(6):
        angle = k * math.pi / 3
        for n, (element, kind, radius) in enumerate((("C", "C.ar", 1.39), ("H", "H", 2.47))):
            x, y = radius * math.cos(angle), radius * math.sin(angle)
            rows.append(f"{2 * k + n + 1} {element}{k + 1} {x:.4f} {y:.4f} 0.0000 {kind} 1 BNZ 0.0000")
    bonds = [f"{k + 1} {2 * k + 1} {(2 * k + 2) % 12 + 1} ar" for k in range(6)]
    bonds += [f"{k + 7} {2 * k + 1} {2 * k + 2} 1" for k in range(6)]
    return (
        "@<TRIPOS>MOLECULE\nbenzene\n 12 12 1 0 0\nSMALL\nNO_CHARGES\n\n@<TRIPOS>ATOM\n{}\n@<TRIPOS>BOND\n{}\n".format(
            "\n".join(rows), "\n".join(bonds)
        )
    )


def add_complex(root, code, pocket, pose, ligand=True, protein=True):
    folder = root / code
    folder.mkdir(parents=True)
    if protein:
        (folder / f"{code}_protein.pdb").write_text(pocket)
    (folder / f"{code}_pocket.pdb").write_text(pocket)
    if ligand:
        (folder / f"{code}_ligand.sdf").write_text(pose)
    return folder


@pytest.fixture
def pdbbind(tmp_path, real_pose_text, real_pocket_text):
    root = tmp_path / "pdbbind"
    (root / "index").mkdir(parents=True)
    (root / "index" / "INDEX_general_PL_data.2020").write_text(DATA_INDEX)
    (root / "index" / "INDEX_general_PL_name.2020").write_text(NAME_INDEX)
    (root / "readme").mkdir()
    for code in ("1h36", "5nmr", "1oyt", "7thr", "9pde"):
        add_complex(root, code, real_pocket_text, real_pose_text)
    add_complex(root, "2tpi", real_pocket_text, real_pose_text, protein=False)
    add_complex(root, "3nol", real_pocket_text, real_pose_text, ligand=False)
    (add_complex(root, "4bad", real_pocket_text, "not a molecule\n$$$$\n") / "4bad_ligand.mol2").write_text("junk\n")
    return root


def excluded_reasons(path, manifest="m.csv"):
    """The excluded rows' reasons of the manifest ``path / manifest`` (excluded.csv beside manifest.csv)."""
    name = "excluded.csv" if manifest == "manifest.csv" else f"{Path(manifest).stem}.excluded.csv"
    frame = pd.read_csv(path / name, dtype=str, keep_default_na=False)
    return dict(zip(frame["complex_id"], frame["reason"]))


def test_index_lines_give_affinity_resolution_and_names(pdbbind):
    data = read_index(pdbbind / "index" / "INDEX_general_PL_data.2020")
    assert data["2tpi"] == {
        "resolution": "2.10",
        "year": "1982",
        "affinity": "4.31",
        "measurement": "Kd=49uM",
        "reference": "2tpi.pdf",
        "ligand_name": "2-mer",
    }
    assert data["5nmr"]["resolution"] == "NMR"
    names = read_index(pdbbind / "index" / "INDEX_general_PL_name.2020")
    assert names["7thr"] == {"uniprot": "P00734", "protein": "ALPHA-THROMBIN HEAVY CHAIN"}
    assert names["5nmr"]["uniprot"] == ""


@pytest.mark.parametrize("line", ["not-a-code 2.0 1999 // x", "1a22  2.60  1997  Kd=4.3nM     // 1a22.pdf"])
def test_a_bad_index_line_names_the_file_and_line(tmp_path, line):
    index = tmp_path / "INDEX_general_PL_data.2020"
    index.write_text(f"# header\n{line}\n")
    with pytest.raises(ValueError, match=r"INDEX_general_PL_data.2020, line 2"):
        read_index(index)


@pytest.mark.parametrize("affinity", ["nan", "inf", "-3.0", "0", "4,31", "4.31x"])
def test_an_affinity_that_is_not_a_number_above_zero_stops_naming_file_and_line(tmp_path, affinity):
    index = tmp_path / "INDEX_general_PL_data.2020"
    index.write_text(
        f"# header\n2tpi  2.10  1982   4.31  Kd=49uM  // 2tpi.pdf (2-mer)\n"
        f"1h36  1.80  2003   {affinity}  Ki=0.63uM  // 1h36.pdf (R88)\n"
    )
    with pytest.raises(DataError, match=rf"INDEX_general_PL_data.2020, line 3: -logKd/Ki '{affinity}' is not a number"):
        read_index(index)


@pytest.mark.parametrize("name", ["INDEX_general_PL_data.2020", "INDEX_general_PL_name.2020"])
def test_a_pdb_code_on_two_lines_of_one_index_names_both_lines(tmp_path, name):
    index = tmp_path / name
    lines = (DATA_INDEX if "data" in name else NAME_INDEX).splitlines()
    index.write_text("\n".join([*lines, lines[4].replace("2tpi", "2TPI")]) + "\n")
    with pytest.raises(DataError, match=rf"{name}: PDB code 2TPI on lines 5 and {len(lines) + 1}"):
        read_index(index)


def test_a_duplicate_index_line_stops_the_command_with_exit_2(pdbbind, tmp_path, capsys):
    index = tmp_path / "INDEX_general_PL_data.2020"
    index.write_text(DATA_INDEX + "2tpi  2.10  1982   5.00  Kd=10uM  // 2tpi.pdf (2-mer)\n")
    assert main(["pdbbind", str(pdbbind), "--index", str(index), "--out", str(tmp_path / "m.csv")]) == 2
    err = capsys.readouterr().err
    assert "PDB code 2tpi on lines 5 and 9" in err and "Traceback" not in err


def test_only_the_protein_ligand_indexes_are_found(tmp_path):
    (tmp_path / "index").mkdir()
    names = ["INDEX_general_PL_data.2020", "INDEX_general_PP.2020", "INDEX_refined_data.2020", "INDEX_readme.txt"]
    for name in names:
        (tmp_path / "index" / name).write_text("")
    assert [p.name for p in default_indexes(tmp_path)] == ["INDEX_general_PL_data.2020", "INDEX_refined_data.2020"]


def test_folder_becomes_a_redock_manifest_with_every_exclusion_and_its_reason(pdbbind, tmp_path, capsys):
    out = tmp_path / "work" / "manifest.csv"
    assert main(["pdbbind", str(pdbbind), "--out", str(out)]) == 0
    manifest = read_redock_manifest(out)  # pecan redock's own reader accepts it
    assert list(manifest["complex_id"]) == ["1h36"]
    row = manifest.iloc[0]
    assert row["receptor"].endswith("1h36_protein.pdb") and row["crystal_ligand"].endswith("1h36_ligand.sdf")
    assert (row["affinity"], row["resolution"], row["year"], row["uniprot"]) == ("6.20", "1.80", "2003", "P04035")
    assert list(pd.read_csv(out).columns[:3]) == ["complex_id", "receptor", "crystal_ligand"]
    reasons = excluded_reasons(out.parent, out.name)
    assert reasons["1oyt"] == "reserved test protein: thrombin"  # by PDB entry
    assert reasons["7thr"] == "reserved test protein: thrombin"  # by UniProt accession
    assert reasons["5nmr"] == "reserved test protein: PDE2A"  # by protein name
    assert reasons["9pde"] == "reserved test protein: PDE2A"
    assert reasons["2tpi"] == "missing file: 2tpi_protein.pdb"
    assert reasons["3nol"] == "missing file: 3nol_ligand.sdf or 3nol_ligand.mol2"
    assert reasons["4bad"].startswith("unreadable ligand (4bad_ligand.sdf: ") and "4bad_ligand.mol2" in reasons["4bad"]
    assert "readme" not in reasons
    printed = capsys.readouterr().out
    assert "1 complexes" in printed and "reserved test proteins removed: PDE2A 2, thrombin 2" in printed


def test_a_code_in_two_folders_is_read_once(pdbbind, tmp_path, real_pose_text, real_pocket_text):
    second = tmp_path / "refined"
    add_complex(second, "1h36", real_pocket_text, real_pose_text)
    add_complex(second, "6new", real_pocket_text, real_pose_text)
    out = tmp_path / "manifest.csv"
    assert main(["pdbbind", str(pdbbind), str(second), "--out", str(out), "--receptor", "pocket"]) == 0
    manifest = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(manifest["complex_id"]) == ["1h36", "2tpi", "6new"]  # 2tpi has its pocket, not its protein
    assert manifest["receptor"][0].endswith("1h36_pocket.pdb") and "refined" not in manifest["receptor"][0]
    assert manifest["protein"][2] == ""  # no index entry: carried columns blank
    assert excluded_reasons(tmp_path, out.name)["1h36"].startswith("duplicate: 1h36 already read from ")


def test_poses_make_a_convert_manifest(pdbbind, tmp_path, real_pose_text):
    (pdbbind / "1h36" / "1h36_docked.sdf").write_text(real_pose_text)
    out = tmp_path / "convert.csv"
    argv = ["pdbbind", str(pdbbind), "--out", str(out), "--poses", "{id}_docked.sdf", "--score-property", "vina"]
    assert main(argv) == 0
    (entry,) = read_convert_manifest(out)  # pecan convert's own reader accepts it
    assert entry.poses.name == "1h36_docked.sdf" and entry.poses.exists() and entry.crystal_ligand.exists()
    assert entry.affinity == pytest.approx(6.2) and entry.score_property == "vina"
    assert excluded_reasons(tmp_path, "convert.csv")["5nmr"] == "reserved test protein: PDE2A"


@pytest.mark.parametrize("template", ["{0}", "{name}_docked.sdf", "{id_docked.sdf"])
def test_a_poses_template_without_the_id_field_is_exit_2_naming_the_option(pdbbind, tmp_path, capsys, template):
    argv = ["pdbbind", str(pdbbind), "--out", str(tmp_path / "m.csv"), "--poses", template]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--poses {template!r} is not a poses file template" in err and "Traceback" not in err
    assert not (tmp_path / "m.csv").exists()


def test_nothing_usable_is_exit_1_and_a_missing_folder_exit_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["pdbbind", str(tmp_path / "empty"), "--out", str(tmp_path / "m.csv")]) == 1
    assert "no INDEX file" in capsys.readouterr().out
    assert main(["pdbbind", str(tmp_path / "nowhere"), "--out", str(tmp_path / "m.csv")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_reserved_proteins_under_other_spellings_and_ids_are_left_out(pdbbind, tmp_path, capsys):
    names = pdbbind / "index" / "INDEX_general_PL_name.2020"
    names.write_text(
        "1h36  2003  ------  MYELOID CELL LEUKAEMIA 1\n"
        "2tpi  1982  P12345,P00734  SOME CHAIN\n"
        "5nmr  2009  ------  cGMP-dependent 3\u2019,5\u2019-cyclic phosphodiesterase\n"
        "9pde  2011  ------  NON-RECEPTOR TYPE 1B\n"
        "7thr  2010  ------  HIF 2 ALPHA\n"
    )
    assert main(["pdbbind", str(pdbbind), "--out", str(tmp_path / "m.csv")]) == 1
    reasons = excluded_reasons(tmp_path)
    assert reasons["1h36"] == "reserved test protein: MCL1" and reasons["2tpi"] == "reserved test protein: thrombin"
    assert reasons["5nmr"] == "reserved test protein: PDE2A" and reasons["9pde"] == "reserved test protein: PTP1B"
    assert reasons["7thr"] == "reserved test protein: HIF-2alpha"
    assert "note: no name index" not in capsys.readouterr().out


def test_a_data_index_alone_says_the_reserved_filter_matched_by_pdb_entry_only(pdbbind, tmp_path, capsys):
    data = pdbbind / "index" / "INDEX_general_PL_data.2020"
    assert main(["pdbbind", str(pdbbind), "--index", str(data), "--out", str(tmp_path / "m.csv")]) == 0
    out = capsys.readouterr().out
    assert "note: no name index" in out and "matched by PDB entry only" in out
    assert excluded_reasons(tmp_path)["1oyt"] == "reserved test protein: thrombin"  # the entry the corpus names
    assert "7thr" not in excluded_reasons(tmp_path)  # its name index says thrombin: unseen without it


def test_complexes_the_name_index_does_not_list_are_named_in_a_note(pdbbind, tmp_path, capsys):
    names = pdbbind / "index" / "INDEX_general_PL_name.2020"
    names.write_text("\n".join(line for line in NAME_INDEX.splitlines() if not line.startswith("1h36")) + "\n")
    assert main(["pdbbind", str(pdbbind), "--out", str(tmp_path / "m.csv")]) == 0
    out = capsys.readouterr().out
    assert "note: 1 complex(es) kept have no line in the name index (first: 1h36)" in out
    assert "matched them by PDB entry only" in out
    names.write_text(NAME_INDEX)
    assert main(["pdbbind", str(pdbbind), "--out", str(tmp_path / "m.csv")]) == 0
    assert "note:" not in capsys.readouterr().out


def test_a_readable_mol2_stands_in_for_an_unreadable_sdf(tmp_path, real_pocket_text):
    folder = add_complex(tmp_path / "root", "8ben", real_pocket_text, "not a molecule\n$$$$\n")
    (folder / "8ben_ligand.mol2").write_text(benzene_mol2())
    out = tmp_path / "manifest.csv"
    assert main(["pdbbind", str(tmp_path / "root"), "--out", str(out)]) == 0
    assert read_redock_manifest(out)["crystal_ligand"][0].endswith("8ben_ligand.mol2")


def test_poses_template_may_be_absolute_and_a_missing_poses_file_is_excluded(pdbbind, tmp_path, real_pose_text):
    docked = tmp_path / "docked"
    docked.mkdir()
    (docked / "1h36.sdf").write_text(real_pose_text)
    out = tmp_path / "convert.csv"
    assert main(["pdbbind", str(pdbbind), "--out", str(out), "--poses", str(docked / "{id}.sdf")]) == 0
    (entry,) = read_convert_manifest(out)
    assert entry.poses == docked / "1h36.sdf"
    assert excluded_reasons(tmp_path, out.name)["4bad"].startswith("unreadable ligand")  # the ligand is checked first
    (pdbbind / "6abc").mkdir()
    for name in ("6abc_protein.pdb", "6abc_ligand.sdf"):
        (pdbbind / "6abc" / name).write_text((pdbbind / "1h36" / name.replace("6abc", "1h36")).read_text())
    assert main(["pdbbind", str(pdbbind), "--out", str(out), "--poses", str(docked / "{id}.sdf")]) == 0
    assert excluded_reasons(tmp_path, out.name)["6abc"] == f"missing file: poses {docked / '6abc.sdf'}"


def test_two_manifests_in_one_folder_keep_their_own_exclusions(pdbbind, tmp_path, real_pose_text):
    """A redock manifest and a convert manifest written into one folder: each keeps its own excluded rows (the
    convert manifest leaves out the complexes without poses, the redock one does not)."""
    (pdbbind / "1h36" / "1h36_docked.sdf").write_text(real_pose_text)
    (pdbbind / "6abc").mkdir()  # a complex without docked poses: kept for redocking, left out of conversion
    for name in ("6abc_protein.pdb", "6abc_ligand.sdf"):
        (pdbbind / "6abc" / name).write_text((pdbbind / "1h36" / name.replace("6abc", "1h36")).read_text())
    redock, convert = tmp_path / "redock.csv", tmp_path / "convert.csv"
    assert main(["pdbbind", str(pdbbind), "--out", str(redock)]) in (0, 1)
    argv = ["pdbbind", str(pdbbind), "--out", str(convert), "--poses", "{id}_docked.sdf", "--score-property", "vina"]
    assert main(argv) == 0
    redock_reasons = excluded_reasons(tmp_path, "redock.csv")
    convert_reasons = excluded_reasons(tmp_path, "convert.csv")
    assert convert_reasons["6abc"].startswith("missing file: poses") and "6abc" not in redock_reasons
    assert not (tmp_path / "excluded.csv").exists()
