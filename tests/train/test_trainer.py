"""Single-process trainer: learning, reports, checkpoints, resume, AMP, compile."""

import ast
import inspect
import json
import math
from pathlib import Path

import pytest
import torch

from pecan import report
from pecan.engine.amp import amp_context
from pecan.engine.distributed import discover
from pecan.train import checkpoint as ckpt
from pecan.train import trainer as trainer_module
from pecan.train.components import cosine_schedule
from pecan.train.run_dir import LOCK_NAME
from pecan.train.trainer import Trainer
from tests.configs import SMALL_MODEL
from tests.train.helpers import tiny_run


def run(config):
    trainer = Trainer.from_config(config, discover({}), torch.device("cpu"))
    try:
        return trainer, trainer.fit()
    finally:
        trainer.close()


@pytest.mark.slow
def test_two_epochs_learn_and_report(tmp_path):
    _, config = tiny_run(tmp_path, "train.epochs=4")
    trainer, records = run(config)
    assert records[-1]["train_loss"] < records[0]["train_loss"]
    written = report.read_records(tmp_path / "run" / "epochs.jsonl")
    assert [r["epoch"] for r in written] == [1, 2, 3, 4]
    for record in written:
        missing = [f for f in report.REQUIRED_FIELDS if f not in record]
        assert not missing
        assert record["world_size"] == 1 and record["ranks_in_sync"]
        assert record["samples"] == len(trainer.data.train_set)
        assert 0.0 <= record["data_wait_share"] <= 1.0
    assert written[1]["h5_calls_per_sample"] == 0 and written[1]["file_opens_per_sample"] == 0
    assert (tmp_path / "run" / "config.yaml").exists()
    run_info = report.read_records(tmp_path / "run" / "runs.jsonl")[0]
    assert run_info["config_digest"] == config.digest() and "torch" in run_info["packages"]
    assert (tmp_path / "run" / "checkpoints" / "best.pt").exists()


@pytest.mark.parametrize("mode", ["reopen", "hoist"])
def test_h5_levels_report_their_io(tmp_path, mode):
    _, config = tiny_run(tmp_path, f"data.io_mode={mode}", "train.epochs=1")
    _, records = run(config)
    assert records[0]["h5_calls_per_sample"] > 0
    if mode == "reopen":
        assert records[0]["file_opens_per_sample"] >= 1


@pytest.mark.slow
def test_checkpoint_is_safe_and_resumes(tmp_path):
    _, config = tiny_run(tmp_path, "train.epochs=2", "train.deterministic=true")
    _, full = run(config)
    state = ckpt.load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")
    assert state["epoch"] == 2 and not any(k.startswith(("module.", "_orig_mod.")) for k in state["model"])

    # Same run, stopped after epoch 1 and resumed in a new trainer.
    _, config2 = tiny_run(tmp_path, "train.epochs=2", "train.deterministic=true", f"train.out_dir={tmp_path / 'r2'}")
    first = Trainer.from_config(config2, discover({}), torch.device("cpu"))
    first.run_epoch(0)
    first.close()
    second, resumed = run(config2)
    assert second.start_epoch == 1 and len(resumed) == 1
    assert resumed[0]["train_loss"] == pytest.approx(full[1]["train_loss"], rel=1e-5)
    assert resumed[0]["val_auc"] == pytest.approx(full[1]["val_auc"], rel=1e-5)
    assert resumed[0]["weights_checksum"] == pytest.approx(full[1]["weights_checksum"], rel=1e-6)


def test_resume_explicit_missing_path_errors(tmp_path):
    _, config = tiny_run(tmp_path, f"train.resume={tmp_path / 'nope.pt'}")
    with pytest.raises(FileNotFoundError, match="nope.pt"):
        Trainer.from_config(config, discover({}), torch.device("cpu"))


@pytest.mark.parametrize(
    "setting, error, message",
    [
        ("train.resume={tmp}/nope.pt", FileNotFoundError, "nope.pt"),
        ("data.val_fraction=0.0", ValueError, "the validation split is empty"),
    ],
    ids=["resume", "data"],
)
def test_a_failed_start_releases_out_dir(tmp_path, setting, error, message):
    """A start that fails after taking out_dir (at the resume, or building the data before a trainer
    exists) releases the lock before the error reaches the caller; the next start takes out_dir."""
    _, config = tiny_run(tmp_path, setting.format(tmp=tmp_path), f"train.sync_dir={tmp_path / 'shared'}")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "note.txt").write_text("in out_dir before the start\n")
    with pytest.raises(error, match=message):
        Trainer.from_config(config, discover({}), torch.device("cpu"))
    assert not (tmp_path / "run" / LOCK_NAME).exists()
    assert (tmp_path / "shared" / "note.txt").exists()  # the output sync was closed: its final sync ran


def test_an_epoch_runs_its_collectives_once(tmp_path, monkeypatch):
    """The epoch record is gathered once (weight check, I/O counters, every rank's figures) and formatted
    before and after the checkpoint: the checkpoint's copy lacks only the checkpoint's own time."""
    from pecan.train import components, records

    calls = []

    def counted(function):
        def call(tensor, env=None, what=""):
            calls.append(what)
            return function(tensor, env, what=what)

        return call

    monkeypatch.setattr(records, "gather_varlen", counted(records.gather_varlen))
    monkeypatch.setattr(records, "all_reduce_sum", counted(records.all_reduce_sum))
    monkeypatch.setattr(components, "gather_varlen", counted(components.gather_varlen))
    _, config = tiny_run(tmp_path, "train.epochs=2")
    trainer = Trainer.from_config(config, discover({}), torch.device("cpu"))
    try:
        record = trainer.run_epoch(0)
    finally:
        trainer.close()
    assert sorted(what for what in calls if what in ("weights", "io_counts", "epoch_report")) == [
        "epoch_report",
        "io_counts",
        "weights",
    ]
    assert trainer.records == [record] and record["ranks"]["checkpoint_s"] == [record["checkpoint_s"]] != [0.0]
    (carried,) = json.loads(ckpt.load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")["records"])
    assert (
        list(carried) == list(record) and carried["checkpoint_s"] == 0.0 and carried["ranks"]["checkpoint_s"] == [0.0]
    )
    timed = {"wall_s", "samples_per_s", "data_wait_share", "checkpoint_s", "checkpoint_s_mean", "checkpoint_s_max"}
    assert {k: v for k, v in carried.items() if k not in timed | {"ranks"}} == {
        k: v for k, v in record.items() if k not in timed | {"ranks"}
    }


def test_trainer_attributes_are_declared_in_init():
    """What a trainer holds is what its __init__ declares: no method and no other module of pecan/train
    assigns an attribute __init__ does not create."""
    tree = ast.parse(inspect.getsource(trainer_module))
    (trainer_class,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Trainer"]
    assigned: dict[str, set[str]] = {}
    for method in (node for node in trainer_class.body if isinstance(node, ast.FunctionDef)):
        for node in ast.walk(method):
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for target in targets:
                for part in ast.walk(target) if target is not None else ():
                    if isinstance(part, ast.Attribute) and getattr(part.value, "id", None) == "self":
                        assigned.setdefault(method.name, set()).add(part.attr)
    declared = assigned["__init__"]
    assert {"data", "raw_model", "optimizer", "resumed_from", "loss"} <= declared
    assert {name: sorted(attrs - declared) for name, attrs in assigned.items() if attrs - declared} == {}
    outside = []
    for path in sorted(Path(trainer_module.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            for target in node.targets if isinstance(node, ast.Assign) else []:
                if isinstance(target, ast.Attribute) and getattr(target.value, "id", None) == "trainer":
                    if target.attr not in declared:
                        outside.append(f"{path.name}: trainer.{target.attr}")
    assert outside == []


def test_bf16_autocast_trains(tmp_path):
    _, config = tiny_run(tmp_path, "train.amp=bf16", "train.epochs=1")
    _, records = run(config)
    assert math.isfinite(records[0]["train_loss"]) and math.isfinite(records[0]["val_loss"])


def test_amp_context_choices():
    with amp_context(torch.device("cpu"), "bf16"):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16
    with amp_context(torch.device("cpu"), "off"):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32


def test_cosine_schedule_shape():
    factor = cosine_schedule(100, 10)
    assert factor(0) == pytest.approx(0.1) and factor(9) == pytest.approx(1.0)
    assert factor(10) == pytest.approx(1.0) and factor(100) == pytest.approx(0.05)
    assert factor(55) < factor(20)


@pytest.mark.slow
def test_compile_trains_and_checkpoint_loads_uncompiled(tmp_path):
    # A one-layer model and two steps: what is checked (a compiled run trains, its checkpoint has the bare
    # module's keys) does not grow with the model, while the compile time (train and eval graphs) does.
    # aot_eager: the same capture, prefixes and checkpoint as inductor without its C++ builds (tens of seconds
    # on a cold cache); inductor's numerics are tested on the model (tests/model/test_egnn.py).
    settings = {"model": SMALL_MODEL, "train.max_steps_per_epoch": 2, "train.compile_backend": "aot_eager"}
    _, config = tiny_run(tmp_path, "train.compile=true", "train.epochs=1", settings=settings)
    trainer, records = run(config)
    assert math.isfinite(records[0]["train_loss"])
    assert records[0]["compile"] is True and records[0]["compile_backend"] == "aot_eager"
    assert isinstance(trainer.model, torch._dynamo.eval_frame.OptimizedModule)
    state = ckpt.load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")
    assert not any("_orig_mod" in k for k in state["model"])
    from model import build_model

    fresh = build_model("egnn", config.model)
    fresh.load_state_dict(state["model"])  # strict: every key matches an uncompiled model
