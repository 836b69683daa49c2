"""Checkpoints: wrapper prefixes, RNG round trip, atomic save, safe load, which file resume picks."""
import random

import numpy as np
import pytest
import torch

from pecan.train import checkpoint as ckpt


def test_clean_state_dict_strips_nested_wrapper_prefixes():
    value = torch.ones(1)
    state = {"module._orig_mod.layer.weight": value, "_orig_mod.module.bias": value, "plain": value,
             "head.module.x": value}
    assert list(ckpt.clean_state_dict(state)) == ["layer.weight", "bias", "plain", "head.module.x"]
    assert ckpt.clean_state_dict(state)["plain"] is value


def draws() -> tuple:
    return (random.random(), random.gauss(0, 1), float(np.random.random()), float(np.random.standard_normal()),
            float(torch.rand(1)))


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
