"""benchmarks/sim_schedule.py: the schedules' makespans by hand on tiny cases, and the run end to end on a
small draw of the corpus's recorded times."""

import json

import numpy as np
import pytest

from benchmarks import sim_schedule


def test_makespans_by_hand():
    seconds = np.array([1.0, 1.0, 5.0, 1.0, 1.0, 1.0])
    assert sim_schedule.fixed_share(seconds, 2) == 7.0  # worker 0: 1 + 5 + 1; worker 1: 1 + 1 + 1
    assert sim_schedule.next_free(seconds, 2) == 6.0  # the 5 s job starts at 1 s
    assert sim_schedule.longest_first(seconds, seconds, 2) == 5.0  # the 5 s job alone on one worker


@pytest.mark.slow
def test_the_run_writes_every_policy_and_the_predictors_rank(tmp_path):
    out = tmp_path / "sim.json"
    assert sim_schedule.main(["--complexes", "3000", "--draws", "1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    table = result["ratio_to_ideal"]
    for workers in map(str, sim_schedule.WORKERS):
        assert table["longest first (true)"][workers] <= table["next free"][workers] <= table["fixed share"][workers]
        assert table["longest first (true)"][workers] >= 1.0
    assert result["spearman_rho"]["longest first (true)"] == 1.0
    assert 0.3 < result["spearman_rho"]["longest first (ligand)"] < 0.7
    assert result["corpus"]["complexes"] == 660
