"""`pecan score` at screening scale: many ligands against one receptor in one call (a multi-ligand SDF grouped
by title, a directory of SDFs), ranks per ligand, a failures file, and a stream that holds one chunk of
ligands at a time."""

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from rdkit import Chem

from pecan.commands import score as score_command
from pecan.convert.examples import prolif_data, vina_poses_with_scores
from pecan.scoring import inputs, screen
from pecan.scoring.scores_csv import read_scores


@pytest.fixture(scope="module")
def vina(trained_run, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("screen")
    poses = vina_poses_with_scores(tmp / "vina.sdf")
    return tmp, trained_run.checkpoint, prolif_data() / "vina" / "rec.pdb", poses


def screen_file(source, out, titles, corrupt_after=None):
    """``source``'s records retitled; with ``corrupt_after`` (an index, or several) a record RDKit cannot parse
    follows each of those."""
    corrupt = {corrupt_after} if isinstance(corrupt_after, int) else set(corrupt_after or ())
    mols = list(Chem.SDMolSupplier(str(source), removeHs=False))
    with open(out, "w") as handle:
        for k, title in enumerate(titles):
            mol = Chem.Mol(mols[k % len(mols)])
            mol.SetProp("_Name", title)
            handle.write(
                Chem.MolToMolBlock(mol) + "".join(f">  <{p}>\n{mol.GetProp(p)}\n\n" for p in mol.GetPropNames())
            )
            handle.write("$$$$\n")
            if k in corrupt:
                handle.write(f"{title}\n  broken\n\n  2  1  0  0  0  0  0  0  0  0999 V2000\nnonsense\nM  END\n$$$$\n")
    return out


def run(vina, poses, out, *extra):
    _, checkpoint, receptor, _ = vina
    argv = [str(checkpoint), "--receptor", str(receptor), "--poses", str(poses), "--out", str(out)]
    return score_command.main([*argv, "--score-property", "vina_score", "--device", "cpu", "--progress", "off", *extra])


@pytest.mark.slow
def test_a_multi_ligand_sdf_grouped_by_title_ranks_each_ligand_and_keeps_every_pose(vina):
    tmp, _, _, poses = vina
    titles = ["ligA"] * 4 + ["ligB"] * 3 + ["ligA"] * 2 + ["7"] * 3  # ligA again later: a ligand of its own
    sdf = screen_file(poses, tmp / "screen.sdf", titles)
    out = tmp / "screen_scored.sdf"
    assert run(vina, sdf, out, "--group-by", "name") == 0
    scores = read_scores(tmp / "screen_scored.csv")
    assert list(dict.fromkeys(scores["complex_id"])) == ["ligA", "ligB", "ligA#2", "7"]
    assert scores.groupby("complex_id", sort=False).size().tolist() == [4, 3, 2, 3]
    for _, ligand in scores.groupby("complex_id"):
        assert ligand["pecan_rank"].tolist() == list(range(1, len(ligand) + 1))
        assert ligand["pecan_score"].is_monotonic_decreasing
    mols = list(Chem.SDMolSupplier(str(out), removeHs=False))
    assert [m.GetProp("pecan_complex") for m in mols] == scores["complex_id"].tolist()
    assert [m.GetProp("pecan_pose") for m in mols] == scores["pose_id"].tolist()
    assert (tmp / "screen_scored.failures.csv").read_text().splitlines() == ["complex_id,pose_id,source,reason"]


@pytest.mark.slow
def test_ligands_score_as_they_would_one_file_each(vina):
    """A ligand's scores in a screen equal those of its poses scored on their own (its own pocket and
    docking-score features): grouping changes what is ranked together, never a pose's inputs."""
    tmp, _, _, poses = vina
    sdf = screen_file(poses, tmp / "two.sdf", ["ligA"] * 5 + ["ligB"] * 4)
    assert run(vina, sdf, tmp / "two_scored.sdf", "--group-by", "name") == 0
    together = read_scores(tmp / "two_scored.csv")
    alone_dir = tmp / "alone"
    alone_dir.mkdir()
    screen_file(poses, alone_dir / "ligA.sdf", ["ligA"] * 5)
    mols = list(Chem.SDMolSupplier(str(poses), removeHs=False))[5:]
    with Chem.SDWriter(str(alone_dir / "ligB.sdf")) as writer:
        for mol in mols:
            mol.SetProp("_Name", "ligB")
            writer.write(mol)
    assert run(vina, alone_dir, tmp / "alone_scored.sdf") == 0  # a directory: each file one ligand
    alone = read_scores(tmp / "alone_scored.csv")
    assert list(dict.fromkeys(alone["complex_id"])) == ["ligA", "ligB"]
    merged = together.merge(alone, on=["complex_id", "pose_id"], validate="one_to_one")
    assert len(merged) == 9
    np.testing.assert_allclose(merged["pecan_score_x"], merged["pecan_score_y"], rtol=0, atol=1e-6)
    assert (merged["pecan_rank_x"] == merged["pecan_rank_y"]).all()


@pytest.mark.slow
def test_a_record_that_cannot_be_parsed_is_a_named_failure_not_a_stop(vina):
    tmp, _, _, poses = vina
    sdf = screen_file(poses, tmp / "broken.sdf", ["ligA"] * 3 + ["ligB"] * 3, corrupt_after=1)
    out = tmp / "broken_scored.sdf"
    assert run(vina, sdf, out, "--group-by", "name") == 0
    failures = pd.read_csv(tmp / "broken_scored.failures.csv", dtype=str, keep_default_na=False)
    assert len(failures) == 1
    assert failures.iloc[0]["complex_id"] == "ligA" and failures.iloc[0]["pose_id"] == "ligA_pose3"
    assert "cannot parse" in failures.iloc[0]["reason"] and failures.iloc[0]["source"] == str(sdf)
    assert len(read_scores(tmp / "broken_scored.csv")) == 6


def test_groups_are_read_lazily_and_released_a_chunk_at_a_time(monkeypatch):
    """The stream holds at most one chunk of groups: the next group is read only after the chunk before it
    was handed on."""
    handed, read = [], []

    def groups():
        for k in range(40):
            read.append(k)
            # Every group already handed on must not wait for this one.
            yield inputs.LigandGroup(f"lig{k}", None, "s.sdf", [object()] * 3)

    clock = screen.StageClock()
    for chunk in screen.chunks(groups(), 10, clock):
        assert len(read) - len(handed) == len(chunk) <= 4  # 4 groups of 3 poses reach 10
        handed.extend(chunk)
    assert len(handed) == 40 and clock.seconds["parse"] >= 0


@pytest.mark.multiprocess
def test_two_ranks_write_what_one_process_writes(vina):
    """Under a launcher each rank scores every other ligand; rank 0 joins the parts in input order, the
    ligands' numbers compared as numbers (ligand 10 after ligand 9, not after 1): the outputs are those of one
    process (the scores to float rounding: the batches differ), and the ranks' folder is gone. The ligands are
    found by the default grouping (a molecule per title run) on every rank. A broken record after each of 12
    ligands: the failures of both ranks are joined in input order (ligand 10 after 9, not after 1)."""
    import sys

    from tests.ddp import run_ranks_ok

    tmp, checkpoint, receptor, poses = vina
    titles = [f"lig{k:02d}" for k in range(12) for _ in range(1 + k % 3)]  # 12 ligands (numbers 0..11), 24 poses
    last_of_each = [len(titles) - 1 - titles[::-1].index(title) for title in dict.fromkeys(titles)]
    sdf = screen_file(poses, tmp / "ranks.sdf", titles, corrupt_after=last_of_each)
    assert run(vina, sdf, tmp / "one.sdf") == 0
    argv = [sys.executable, "-m", "pecan", "score", str(checkpoint), "--receptor", str(receptor), "--poses", str(sdf)]
    argv += ["--out", str(tmp / "two.sdf"), "--score-property", "vina_score", "--device", "cpu"]
    run_ranks_ok(argv, nprocs=2, timeout=600)
    assert (tmp / "two.failures.csv").read_text() == (tmp / "one.failures.csv").read_text()
    one, two = read_scores(tmp / "one.csv"), read_scores(tmp / "two.csv")
    assert list(dict.fromkeys(one["complex_id"])) == sorted(set(titles))
    assert len(two) == 24 and not (tmp / ".two.sdf.ranks").exists()
    np.testing.assert_allclose(two.pop("pecan_score"), one.pop("pecan_score"), rtol=0, atol=1e-6)
    pd.testing.assert_frame_equal(two, one)
    lines = [
        [line for line in (tmp / name).read_text().splitlines() if "." not in line] for name in ("one.sdf", "two.sdf")
    ]
    assert lines[0] == lines[1]  # every line but the numbers with decimals (coordinates, scores) is the same
    failures = pd.read_csv(tmp / "two.failures.csv", dtype=str, keep_default_na=False)
    assert failures.shape[0] == 12 and failures["complex_id"].tolist() == list(dict.fromkeys(titles))
