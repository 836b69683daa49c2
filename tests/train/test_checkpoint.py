"""Checkpoints: wrapper prefixes, RNG round trip, atomic save, safe load, resume choice and config fit."""

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from pecan import config
from pecan.config import ConfigError
from pecan.train import checkpoint as ckpt


def test_clean_state_dict_strips_nested_wrapper_prefixes():
    value = torch.ones(1)
    state = {
        "module._orig_mod.layer.weight": value,
        "_orig_mod.module.bias": value,
        "plain": value,
        "head.module.x": value,
    }
    assert list(ckpt.clean_state_dict(state)) == ["layer.weight", "bias", "plain", "head.module.x"]
    assert ckpt.clean_state_dict(state)["plain"] is value


def draws() -> tuple:
    return (
        random.random(),
        random.gauss(0, 1),
        float(np.random.random()),
        float(np.random.standard_normal()),
        float(torch.rand(1)),
    )


def test_rng_state_round_trip_restores_every_generator(tmp_path):
    random.seed(1)
    np.random.seed(2)
    torch.manual_seed(3)
    random.gauss(0, 1)  # leaves a cached Gaussian in Python's state
    np.random.standard_normal()  # and one in NumPy's
    ckpt.save_checkpoint(tmp_path / "rng.pt", {"rng": ckpt.rng_state()})
    expected = draws()
    random.seed(99)
    np.random.seed(99)
    torch.manual_seed(99)
    ckpt.set_rng_state(ckpt.load_checkpoint(tmp_path / "rng.pt")["rng"])  # weights_only load
    assert draws() == expected


def test_save_is_atomic_and_leaves_no_temp_files(tmp_path):
    path = ckpt.save_checkpoint(tmp_path / "deep" / "last.pt", {"a": torch.arange(3)})
    assert path == tmp_path / "deep" / "last.pt"
    assert sorted(p.name for p in path.parent.iterdir()) == ["last.pt"]
    assert torch.equal(ckpt.load_checkpoint(path)["a"], torch.arange(3))


def test_failed_save_keeps_the_old_checkpoint(tmp_path):
    path = ckpt.save_checkpoint(tmp_path / "last.pt", {"epoch": 1})
    with pytest.raises(Exception):
        ckpt.save_checkpoint(path, {"bad": lambda: None})  # not picklable
    assert ckpt.load_checkpoint(path) == {"epoch": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.pt"]


def test_load_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.pt"):
        ckpt.load_checkpoint(tmp_path / "missing.pt")
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="broken.pt"):
        ckpt.load_checkpoint(broken)


def test_resume_path_choices(tmp_path):
    assert ckpt.resume_path("never", tmp_path) is None
    assert ckpt.resume_path("auto", tmp_path) is None
    last = ckpt.save_checkpoint(tmp_path / "checkpoints" / "last.pt", {})
    assert ckpt.resume_path("auto", tmp_path) == last
    assert ckpt.resume_path("never", tmp_path) is None
    assert ckpt.resume_path(str(last), tmp_path / "elsewhere") == last
    with pytest.raises(FileNotFoundError, match="train.resume"):
        ckpt.resume_path(str(tmp_path / "nope.pt"), tmp_path)


# ---------------------------------------------------------------------------- resuming under the same model config


def test_config_differences_lists_each_changed_key():
    saved = {"model": {"hidden": 64, "layers": 4, "gone": 1}, "train": {"lr": 1.0}}
    current = {"model": {"hidden": 128, "layers": 4, "new": 2}, "train": {"lr": 2.0}}
    assert ckpt.config_differences(saved, current, "model") == [
        "model.gone: checkpoint 1, config None",
        "model.hidden: checkpoint 64, config 128",
        "model.new: checkpoint None, config 2",
    ]
    assert ckpt.config_differences({"model": None}, {"model": {"hidden": 64}}, "model") == [
        "model.hidden: checkpoint None, config 64"
    ]
    assert ckpt.config_differences({}, {}, "model") == []


def resume_config(tmp_path, resume: str, *overrides: str):
    return config.load(
        None, [f"train.resume={resume}", f"train.out_dir={tmp_path / 'run'}", f"data.data_dir={tmp_path}", *overrides]
    )


def test_resume_check_picks_the_checkpoint_or_none(tmp_path):
    assert ckpt.check_resume_compatible(resume_config(tmp_path, "never")) is None
    assert ckpt.check_resume_compatible(resume_config(tmp_path, "auto")) is None
    last = tmp_path / "run" / "checkpoints" / "last.pt"
    ckpt.save_checkpoint(last, {"model": {}, "config": resume_config(tmp_path, "auto").to_dict()})
    assert ckpt.check_resume_compatible(resume_config(tmp_path, "auto")) == last
    assert ckpt.check_resume_compatible(resume_config(tmp_path, "never")) is None
    # A learning-rate change is allowed: only the model section must match.
    assert ckpt.check_resume_compatible(resume_config(tmp_path, str(last), "train.lr=0.5")) == last
    old = ckpt.save_checkpoint(tmp_path / "old.pt", {"model": {}, "epoch": 3})  # before configs were stored
    assert ckpt.check_resume_compatible(resume_config(tmp_path, str(old))) == old


def test_resume_check_names_the_differing_model_keys(tmp_path):
    path = ckpt.save_checkpoint(tmp_path / "c.pt", {"model": {}, "config": resume_config(tmp_path, "never").to_dict()})
    with pytest.raises(
        ConfigError,
        match=r"train\.resume: checkpoint .*c\.pt was written with a different "
        r"model config \(model\.hidden: checkpoint 64, config 32; model\.layers: checkpoint 4, "
        r"config 2\)",
    ):
        ckpt.check_resume_compatible(resume_config(tmp_path, str(path), "model.hidden=32", "model.layers=2"))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp / "nope.pt", r"train\.resume: checkpoint .*nope\.pt does not exist"),
        (
            lambda tmp: ckpt.save_checkpoint(tmp / "other.pt", {"state_dict": {}}),
            r"train\.resume: not a PECAN checkpoint: .*other\.pt",
        ),
        (
            lambda tmp: (tmp / "broken.pt").write_bytes(b"not a checkpoint") and tmp / "broken.pt",
            r"train\.resume: cannot load checkpoint .*broken\.pt",
        ),
    ],
)
def test_resume_check_errors_are_config_errors_naming_the_file(tmp_path, make, message):
    with pytest.raises(ConfigError, match=message):
        ckpt.check_resume_compatible(resume_config(tmp_path, str(make(tmp_path))))


def test_load_refuses_anything_but_tensors_and_plain_containers(tmp_path):
    # weights_only: a pickled object of an arbitrary class could run code when loaded.
    path = tmp_path / "foreign.pt"
    torch.save({"where": Path("/etc")}, path)
    with pytest.raises(ValueError, match="cannot load checkpoint .*foreign.pt"):
        ckpt.load_checkpoint(path)


class FakeCuda:
    """Stands in for the CUDA generators on a machine without a GPU: records what resume sets."""

    def __init__(self, monkeypatch):
        self.state, self.restored = [torch.tensor([7, 8], dtype=torch.uint8)], []
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: self.state)
        monkeypatch.setattr(torch.cuda, "set_rng_state_all", self.restored.append)


def test_cuda_generators_saved_and_restored(monkeypatch):
    cuda = FakeCuda(monkeypatch)
    state = ckpt.rng_state()
    assert state["cuda"] is cuda.state
    ckpt.set_rng_state(state)
    assert cuda.restored == [cuda.state]
    # A checkpoint written without a GPU resumes on one: its CUDA generators are left as they are.
    del state["cuda"]
    ckpt.set_rng_state(state)
    assert cuda.restored == [cuda.state]
