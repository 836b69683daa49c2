"""A rank's share of a plan: every job to exactly one rank, whatever the number of ranks; the ranks' records."""

import pytest

from pecan.runtime import shares
from pecan.runtime.shares import Place


@pytest.mark.parametrize("world_size", [1, 2, 3, 7, 12])
def test_every_job_goes_to_exactly_one_rank(world_size):
    jobs = [f"c{k}" for k in range(10)]
    taken = [job for rank in range(world_size) for job in shares.share(jobs, rank, world_size)]
    assert sorted(taken) == sorted(jobs)
    assert shares.share(jobs, 1, 3) == ["c1", "c4", "c7"]


def test_share_lines_list_every_rank_even_an_idle_one():
    assert shares.share_lines(["a", "b"], 3, "complexes") == [
        "rank 0 of 3: 1 complexes: a",
        "rank 1 of 3: 1 complexes: b",
        "rank 2 of 3: 0 complexes",
    ]


def test_finished_ranks_count_only_this_plan_and_a_restarted_rank_is_unfinished(tmp_path):
    for rank in range(2):
        shares.write_rank_file(tmp_path, Place(rank, 2), "plan-a", ["x"])
    assert sorted(shares.finished_ranks(tmp_path, 2, "plan-a")) == [0, 1]
    assert shares.finished_ranks(tmp_path, 2, "plan-b") == {}
    assert shares.finished_ranks(tmp_path, 3, "plan-a") == {}  # another world size is another run
    shares.clear_rank_file(tmp_path, Place(1, 2))
    assert sorted(shares.finished_ranks(tmp_path, 2, "plan-a")) == [0]


def test_leftover_temps_of_the_given_outputs_only_are_removed(tmp_path):
    mine, other = tmp_path / "a.sdf", tmp_path / "b.sdf"
    (tmp_path / ".a.sdf.x1y2.tmp").write_text("half")
    (tmp_path / ".b.sdf.z3.tmp").write_text("another rank's, being written")
    removed = shares.remove_leftover_temps([mine])
    assert [p.name for p in removed] == [".a.sdf.x1y2.tmp"] and (tmp_path / ".b.sdf.z3.tmp").exists()
    assert not other.exists()
