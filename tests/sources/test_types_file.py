"""GNINA's types files: the line formats and how a line's names map to structure files and records."""

import pytest

from pecan.sources.types_file import fold_of, ligand_record, parse_line, read_types, receptor_file


def test_crossdocked_line_label_pk_rmsd_receptor_ligand_and_vina_comment(tmp_path):
    pocket = "ABL1_HUMAN_1_2_0"
    text = f"0 -6.7 4.21 {pocket}/1a02_A_rec_0.gninatypes {pocket}/1a02_A_rec_1a02_x_lig_tt_docked_3.gninatypes #-7.8"
    line = parse_line(text, tmp_path / "a.types", 1, ("label", "affinity", "rmsd"))
    assert line.numbers == {"label": 0.0, "affinity": -6.7, "rmsd": 4.21}
    assert line.receptor.endswith("1a02_A_rec_0.gninatypes") and line.ligand.endswith("_docked_3.gninatypes")
    assert line.comment == "-7.8"


def test_lines_without_an_rmsd_column_fill_what_they_have(tmp_path):
    line = parse_line(
        "1 3.28 3zsx/3zsx_rec_0.gninatypes 3zsx/3zsx_crystal_0.gninatypes #-7.21",
        tmp_path,
        1,
        ("label", "affinity", "rmsd"),
    )
    assert line.numbers == {"label": 1.0, "affinity": 3.28}


@pytest.mark.parametrize(
    "text",
    ["1 6.0 0.2 rec_0.gninatypes", "1 6.0 0.2 0.3 rec_0.gninatypes lig_0.gninatypes", "rec.pdb lig.sdf", "1 a b c"],
)
def test_a_malformed_line_names_the_file_and_line(tmp_path, text):
    with pytest.raises(ValueError, match=r"types file .*x.types, line 7"):
        parse_line(text, tmp_path / "x.types", 7, ("label", "affinity", "rmsd"))


def test_blank_and_comment_lines_are_skipped(tmp_path):
    path = tmp_path / "t.types"
    path.write_text("# header\n\n1 6 0.5 r_0.gninatypes l_0.gninatypes\n")
    assert [line.line for line in read_types(path)] == [3]


def test_receptor_names_map_to_the_pdb_they_were_made_from(tmp_path):
    assert receptor_file("P/1a02_A_rec_0.gninatypes", tmp_path) == tmp_path / "P/1a02_A_rec.pdb"
    assert receptor_file("P/1a02_A_rec.pdb", tmp_path) == tmp_path / "P/1a02_A_rec.pdb"


def test_ligand_names_map_to_a_record_of_the_multi_pose_file(tmp_path):
    (tmp_path / "P").mkdir()
    (tmp_path / "P" / "x_lig_tt_docked.sdf.gz").write_bytes(b"")
    (tmp_path / "P" / "x_lig_it1_tt_docked_0.sdf").write_text("")
    assert ligand_record("P/x_lig_tt_docked_3.gninatypes", tmp_path) == (tmp_path / "P/x_lig_tt_docked.sdf.gz", 3)
    assert ligand_record("P/x_lig_tt_docked_3.sdf.gz", tmp_path) == (tmp_path / "P/x_lig_tt_docked.sdf.gz", 3)
    # a one-pose file named with its index (as the generative models' test sets ship them)
    assert ligand_record("P/x_lig_it1_tt_docked_0.gninatypes", tmp_path) == (
        tmp_path / "P/x_lig_it1_tt_docked_0.sdf",
        0,
    )
    assert ligand_record("P/x_lig_it1_tt_docked_0.sdf", tmp_path) == (tmp_path / "P/x_lig_it1_tt_docked_0.sdf", 0)
    # nothing there: the multi-pose file it would be, so the missing file is named
    assert ligand_record("Q/y_min_0.gninatypes", tmp_path) == (tmp_path / "Q/y_min.sdf.gz", 0)


def test_fold_files(tmp_path):
    assert fold_of(tmp_path / "it2_tt_v1.1_0_train0.types") == ("train", 0)
    assert fold_of(tmp_path / "it2_tt_v1.1_completeset_test2.types") == ("test", 2)
    assert fold_of(tmp_path / "small.types") is None


@pytest.mark.parametrize(
    "text, field",
    [
        ("1 nan 0.2 rec_0.gninatypes lig_0.gninatypes", "field 2 (affinity) 'nan' is not a number"),
        ("1 6.0 1,5 rec_0.gninatypes lig_0.gninatypes", "field 3 (rmsd) '1,5' is not a number"),
        ("yes 6.0 0.2 rec_0.gninatypes lig_0.gninatypes", "field 1 (label) 'yes' is not a number"),
        ("1 6.0 0.2 0.3 rec_0.gninatypes lig_0.gninatypes", "field 4 '0.3' is a number past the 3 columns"),
        ("1 6.0 0.2 rec_0.gninatypes", "1 file name(s) after the numbers"),
        ("1 6.0 0.2 rec_0.gninatypes a_0.gninatypes b_0.gninatypes", "3 file name(s) after the numbers"),
    ],
)
def test_a_bad_line_is_quoted_whole_and_the_wrong_field_named(tmp_path, text, field):
    with pytest.raises(ValueError) as raised:
        parse_line(text + "  # -7.1", tmp_path / "x.types", 7, ("label", "affinity", "rmsd"))
    message = str(raised.value)
    assert field in message and repr(text + "  # -7.1") in message


def test_numbers_are_read_as_written(tmp_path):
    line = parse_line("1 \u22126.7 0.5 r_0.gninatypes l_0.gninatypes", tmp_path, 1, ("label", "affinity", "rmsd"))
    assert line.numbers["affinity"] == -6.7
