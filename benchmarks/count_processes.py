"""A pytest plugin that counts the fresh interpreters a test run starts: python children of the pytest
process, torchrun agents, and the ranks each agent starts (``--nproc_per_node``). The counts are written
as JSON to $COUNT_OUT at the end of the session.

    COUNT_OUT=counts.json python -m pytest -p benchmarks.count_processes tests/...
"""

import json
import os
import subprocess
import sys

COUNTS = {"python_children": 0, "torchrun_agents": 0, "agent_ranks": 0}
_real_init = subprocess.Popen.__init__


def _nproc(argv: list[str]) -> int:
    """The ranks one torchrun agent starts on its node."""
    for arg in argv:
        if arg.startswith(("--nproc_per_node=", "--nproc-per-node=")):
            return int(arg.split("=", 1)[1])
    return 1


def _starts_python(argv: list[str]) -> bool:
    """Whether the command is a python interpreter (directly, or through ``sh -c '... python ...'``)."""
    if argv and (sys.executable in argv[0] or os.path.basename(argv[0]).startswith("python")):
        return True
    return argv[:2] == ["sh", "-c"] and len(argv) > 2 and sys.executable in argv[2]


def _counting_init(self, args, *rest, **kwargs):
    """Popen.__init__ that counts the command before starting it."""
    argv = [str(a) for a in args] if isinstance(args, (list, tuple)) else [str(args)]
    if "torch.distributed.run" in argv:
        COUNTS["torchrun_agents"] += 1
        COUNTS["agent_ranks"] += _nproc(argv)
    elif _starts_python(argv):
        COUNTS["python_children"] += 1
    _real_init(self, args, *rest, **kwargs)


subprocess.Popen.__init__ = _counting_init


def pytest_sessionfinish(session, exitstatus):
    """Write the counts, with their sum (the fresh interpreters), to $COUNT_OUT."""
    COUNTS["fresh_interpreters"] = sum(COUNTS.values())
    with open(os.environ["COUNT_OUT"], "w") as handle:
        json.dump(COUNTS, handle)
