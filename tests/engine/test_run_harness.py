"""The run harness (pecan.engine.harness): the exit code of each error type, chosen in one place; the per-rank
log file and the process group of a job that fails, closed and left; commands that set up neither themselves."""

from __future__ import annotations

import ast
import logging
import sys
from pathlib import Path

import pytest

from pecan.engine import harness
from pecan.runtime.errors import EXIT_CODES, ConfigError, DataError
from tests.ddp import run_ranks
from tests.procs import ROOT


def run_body(body, **job) -> int:
    return harness.run(lambda: harness.Job(body=body, **job))


def raising(err: BaseException):
    def body(run):
        raise err

    return body


@pytest.mark.parametrize("error_type, code", EXIT_CODES, ids=[t.__name__ for t, _ in EXIT_CODES])
def test_each_expected_error_of_a_job_exits_with_its_code(error_type, code, caplog):
    assert run_body(raising(error_type("what went wrong"))) == code
    assert "what went wrong" in caplog.text


def test_an_invocation_error_exits_2_printed_before_any_job(capsys):
    def prepare():
        raise ConfigError("unknown key train.epoch")

    assert harness.run(prepare) == 2
    assert capsys.readouterr().err == "error: unknown key train.epoch\n"


def test_a_launcher_environment_that_makes_no_sense_is_an_invocation_error(monkeypatch, capsys):
    monkeypatch.setenv("RANK", "0")
    for name in ("WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert harness.run(lambda: pytest.fail("prepared under a broken launcher")) == 2
    assert "WORLD_SIZE is required" in capsys.readouterr().err


def test_a_clean_stop_exits_its_code_and_says_why(capsys):
    class Stopped(harness.JobStopped):
        exit_code = 0

    assert run_body(raising(Stopped("stopped at step 3; rerun to resume"))) == 0
    assert "stopped at step 3" in capsys.readouterr().out


def test_ctrl_c_before_the_job_handles_it_exits_130_with_the_job_s_line(capsys):
    assert run_body(raising(KeyboardInterrupt()), interrupted="nothing to save") == 130
    assert "nothing to save" in capsys.readouterr().err
    with pytest.raises(KeyboardInterrupt):  # a job that names no line: Python's own Ctrl-C
        run_body(raising(KeyboardInterrupt()))


def test_a_bug_keeps_its_traceback_and_the_clean_ups_still_run():
    closed = []

    def body(run):
        run.on_exit(lambda: closed.append("first"))
        run.on_exit(lambda: closed.append("second"))
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):
        run_body(body)
    assert closed == ["second", "first"]
    assert not [h for h in logging.getLogger().handlers if getattr(h, "pecan_run", False)]


def test_signal_handlers_a_job_installs_are_restored_when_it_fails():
    class Handlers:
        installed = restored = False

        def install(self):
            self.installed = True

        def restore(self):
            self.restored = True

    handlers = Handlers()

    def body(run):
        run.watch_signals(handlers)
        raise DataError("bad shard")

    assert run_body(body) == 1
    assert handlers.installed and handlers.restored


@pytest.mark.parametrize(
    "err, code",
    [(DataError("epochs.jsonl line 3 is damaged"), 1), (ConfigError("--strict"), 2), (ValueError("bad value"), 2)],
)
def test_a_command_without_a_job_maps_its_errors_the_same_way_and_prints_them(err, code, capsys):
    assert harness.invoke(lambda: raising(err)(None)) == code
    assert capsys.readouterr().err == f"error: {err}\n"


def test_a_command_without_a_job_keeps_a_bug_s_traceback():
    with pytest.raises(RuntimeError):
        harness.invoke(lambda: raising(RuntimeError("a bug"))(None))


FAILING_JOB = """
import logging, sys
import torch.distributed as dist
from pecan.engine import harness
from pecan.runtime.errors import DataError

def body(run):
    assert dist.is_initialized() and dist.get_world_size() == 2
    logging.getLogger("pecan.job").info("rank %d working", run.env.rank)
    raise DataError(f"shard{run.env.rank}.hdf5: bad group")

code = harness.run(lambda: harness.Job(body=body, log_dir=sys.argv[1]))
left = [h for h in logging.getLogger().handlers if getattr(h, "pecan_run", False)]
print("exit", code, "group", dist.is_initialized(), "handlers", len(left), flush=True)
sys.exit(code)
"""


def test_a_failing_two_rank_job_gets_its_rank_logs_and_leaves_its_process_group(tmp_path):
    codes, out = run_ranks([sys.executable, "-c", FAILING_JOB, str(tmp_path)], timeout=120, check=False)
    assert codes == [1, 1], out
    assert out.count("exit 1 group False handlers 0") == 2
    for rank in (0, 1):
        log = (tmp_path / "logs" / f"rank{rank}.log").read_text()
        assert f"rank {rank} working" in log and f"shard{rank}.hdf5: bad group" in log


# Who may set up a process group, the logs or the signals of a run: the harness (and the primitives it calls).
SETUP_CALLS = {"init_distributed", "init_process_group", "cleanup_distributed", "destroy_process_group"}
LOG_CALLS = {"setup_logging", "console_logs", "rank_log_file", "basicConfig", "addHandler"}
OWNERS = {
    "pecan/engine/harness.py": SETUP_CALLS | LOG_CALLS,
    "pecan/engine/distributed.py": {"init_process_group", "destroy_process_group"},
}


def called_names(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def test_only_the_harness_sets_up_a_process_group_or_the_run_logs():
    files = [*sorted((ROOT / "pecan").rglob("*.py")), ROOT / "main_app.py"]
    found = {}
    for path in files:
        name = path.relative_to(ROOT).as_posix()
        calls = called_names(path) & (SETUP_CALLS | LOG_CALLS)
        if calls - OWNERS.get(name, set()):
            found[name] = sorted(calls - OWNERS.get(name, set()))
    assert found == {}, "run the job under pecan.engine.harness.run instead"


def test_the_check_sees_a_command_that_sets_up_its_own_logging(tmp_path):
    module = tmp_path / "command.py"
    module.write_text("import logging\ndef main():\n    logging.basicConfig(level=logging.INFO)\n")
    assert called_names(module) & LOG_CALLS == {"basicConfig"}
