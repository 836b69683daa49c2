"""Host lists and tasks-per-node values through python-hostlist: the expansions the launchers need, and the
errors a bad value becomes (a ValueError that says what is wrong and names the value)."""

import pytest

from pecan.engine.hostlist import _expand_tasks_per_node, expand_hostlist


@pytest.mark.parametrize(
    "hostlist, expected",
    [
        (" node[1-2] , x ", ["node1", "node2", "x"]),  # blanks around hosts are dropped
        ("a,a", ["a", "a"]),  # duplicates kept: the list is the launcher's, in its order
        ("a,,b,", ["a", "b"]),
        ("node[1-010]", [f"node{i}" for i in range(1, 11)]),  # padding comes from the lower bound
    ],
)
def test_expand_hostlist_keeps_the_launchers_order(hostlist, expected):
    assert expand_hostlist(hostlist) == expected


@pytest.mark.parametrize(
    "bad, message",
    [
        ("node[01-", "unbalanced brackets in host list 'node[01-'"),
        ("node01]", "unbalanced brackets in host list 'node01]'"),
        ("node[a-b]", "bad range in host list 'node[a-b]'"),
        ("node[]", "bad range in host list 'node[]'"),
        ("node[4-2]", "start > stop in host list 'node[4-2]'"),
        ("n[[1]]", "nested brackets in host list 'n[[1]]'"),
    ],
)
def test_a_bad_hostlist_is_a_value_error_naming_it(bad, message):
    with pytest.raises(ValueError) as error:
        expand_hostlist(bad)
    assert str(error.value) == message


def test_tasks_per_node():
    assert _expand_tasks_per_node("4(x2),3", "SLURM_TASKS_PER_NODE") == [4, 4, 3]
    assert _expand_tasks_per_node(" 2(x3) , 1", "SLURM_TASKS_PER_NODE") == [2, 2, 2, 1]


@pytest.mark.parametrize("bad", ["two", "", "4(2)", "4 (x2)", "4(x2)x"])
def test_bad_tasks_per_node_names_the_variable_and_value(bad):
    with pytest.raises(ValueError) as error:
        _expand_tasks_per_node(bad, "SLURM_STEP_TASKS_PER_NODE")
    assert str(error.value) == f"SLURM_STEP_TASKS_PER_NODE={bad!r} is not a Slurm tasks-per-node list"
