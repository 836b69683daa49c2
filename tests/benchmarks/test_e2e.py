"""benchmarks/e2e.py: the inputs it builds are what the readers must accept and exclude, its checks catch a wrong
output, and a failing step stops its path with exit status 1."""

import json

import pandas as pd
import pytest

from benchmarks import bench_ranks, e2e, e2e_checks


def test_the_crossdocked_miniature_places_every_record_at_its_types_line_rmsd(tmp_path):
    pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
    from pecan.commands.sources import main as sources

    counts, problems = e2e_checks.lay_out_crossdocked(tmp_path / "cd", tmp_path / "types")
    assert not problems and counts == {"types_lines": 12, "pose_files": 8, "pockets": 2}
    types = sorted(str(p) for p in (tmp_path / "types").glob("*.types"))
    out = tmp_path / "out"
    assert sources(["crossdocked", *types, "--root", str(tmp_path / "cd"), "--out", str(out), "--check-rmsd"]) == 0
    counts, problems = e2e_checks.crossdocked_sources(out)()
    assert not problems and counts["rmsd_agree"] == 12 and (counts["fold0_train"], counts["fold0_test"]) == (2, 2)


@pytest.mark.slow
def test_the_pdbbind_folder_gives_a_manifest_of_its_complexes_and_excludes_the_rest(tmp_path):
    pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
    from pecan.commands.sources import main as sources

    chosen = e2e_checks.quickest_corpus(2)
    assert len({c.split("_")[0] for c in chosen}) == 2  # one complex per PDB code
    counts, problems = e2e_checks.build_pdbbind_folder(tmp_path / "pdbbind", chosen, tmp_path)
    assert not problems and counts == {"complexes": 2, "folders": 5}
    assert sources(["pdbbind", str(tmp_path / "pdbbind"), "--out", str(tmp_path / "manifest.csv")]) == 0
    assert e2e_checks.sources(tmp_path, chosen)() == ({"complexes": 2, "excluded": 3}, [])
    (tmp_path / "pdbbind" / "index" / "INDEX_general_PL_name.2020").unlink()  # 2qbq is then let through, unread
    assert sources(["pdbbind", str(tmp_path / "pdbbind"), "--out", str(tmp_path / "manifest.csv")]) == 0
    _, problems = e2e_checks.sources(tmp_path, chosen)()
    assert problems == ["2qbq: excluded as 'missing file: 2qbq_protein.pdb', not 'reserved test protein: PTP1B'"]


def _receptor(path, h_x="1.000", n_x="0.000"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"ATOM      1  N   ARG B  45     {n_x:>7} -10.000 -35.000  0.00  0.00    +0.000 N \n"
        f"ATOM      2  H   ARG B  45     {h_x:>7}  -9.643 -34.280  0.00  0.00    +0.000 HD\n"
    )


def test_redock_outputs_that_differ_in_receptor_hydrogen_positions_alone_are_the_same(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    for out, seconds in ((one, 1.0), (two, 2.0)):  # the seconds a complex took are no difference
        out.mkdir()
        pd.DataFrame({"complex_id": ["a"], "seconds": [seconds]}).to_csv(out / "redock.csv", index=False)
    _receptor(one / "receptors" / "a.pdbqt")
    _receptor(two / "receptors" / "a.pdbqt", h_x="-62.077")
    assert bench_ranks.redock_differences(one, two) == ([], 1)
    _receptor(two / "receptors" / "a.pdbqt", n_x="5.000")  # a heavy atom moved: a real difference
    assert bench_ranks.redock_differences(one, two) == (["receptors/a.pdbqt differs"], 0)


def test_a_failing_step_stops_its_path_and_the_summary_says_so(tmp_path):
    steps = e2e.Steps("corpus", tmp_path)
    out = tmp_path / "manifest.csv"
    assert not steps.command("sources", ["sources", "pdbbind", str(tmp_path / "none"), "--out", str(out)], None)
    assert not steps.call("later", lambda: ({"ran": 1}, []))
    first, later = steps.records
    assert first["problems"][0].startswith("exit 2: ") and first["command"].startswith("python -m pecan sources")
    assert "WORK/none" in first["command"]  # the work folder's path is not in the summary
    assert later == {
        "path": "corpus",
        "step": "later",
        "command": "",
        "seconds": 0.0,
        "counts": {},
        "ok": False,
        "problems": ["skipped: an earlier step failed"],
    }
    json.dumps(steps.records)  # the summary is JSON


def test_a_missing_output_is_a_failed_check_not_a_crash(tmp_path):
    steps = e2e.Steps("corpus", tmp_path)
    assert not steps.call("redock", e2e_checks.redocked(tmp_path / "never_written", ["7ecr_sin"]))
    (record,) = steps.records
    assert record["problems"][0].startswith("FileNotFoundError: ") and "redock.csv" in record["problems"][0]
