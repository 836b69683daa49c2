"""train.init_from: a checkpoint's model weights start a new run (pre-training, then fine-tuning)."""

import pytest
import torch

from pecan.engine.distributed import discover
from pecan.runtime.errors import ConfigError
from pecan.train import checkpoint as ckpt
from pecan.train.trainer import Trainer
from tests.train.helpers import tiny_run


def _setup(config):
    return Trainer.from_config(config, discover({}), torch.device("cpu"))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One epoch of the tiny run: (its directory, its last.pt)."""
    tmp_path = tmp_path_factory.mktemp("init_from")
    _, config = tiny_run(tmp_path, "train.epochs=1")
    first = _setup(config)
    try:
        first.fit()
    finally:
        first.close()
    return tmp_path, tmp_path / "run" / "checkpoints" / "last.pt"


def test_a_new_run_starts_from_the_checkpoints_weights_and_trains_on(trained):
    tmp_path, path = trained
    saved = ckpt.clean_state_dict(ckpt.load_checkpoint(path)["model"])
    _, config = tiny_run(tmp_path, "train.epochs=1", f"train.init_from={path}", f"train.out_dir={tmp_path / 'fine'}")
    second = _setup(config)
    try:
        start = second.raw_model.state_dict()
        assert all(torch.equal(start[k], saved[k]) for k in saved)  # not a random initialisation
        _, fresh = tiny_run(tmp_path, "train.epochs=1", f"train.out_dir={tmp_path / 'fresh'}")
        random = _setup(fresh)
        try:
            assert not all(torch.equal(start[k], v) for k, v in random.raw_model.state_dict().items())
        finally:
            random.close()  # releases its run lock and heartbeat
        second.fit()
        trained = second.raw_model.state_dict()
        assert any(not torch.equal(trained[k], saved[k]) for k in saved)  # and training moved on from there
    finally:
        second.close()


def test_other_model_settings_or_a_missing_file_name_the_key(trained):
    tmp_path, path = trained
    _, config = tiny_run(tmp_path, "model.hidden=8", f"train.init_from={path}", f"train.out_dir={tmp_path / 'b'}")
    with pytest.raises(
        ConfigError,
        match=r"train.init_from: .*last.pt was trained with other model settings "
        r"\(model.hidden: checkpoint 16, config 8\)",
    ):
        _setup(config)
    _, config = tiny_run(tmp_path, f"train.init_from={tmp_path / 'none.pt'}", f"train.out_dir={tmp_path / 'c'}")
    with pytest.raises(ConfigError, match="train.init_from: checkpoint not found: .*none.pt"):
        _setup(config)
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    _, config = tiny_run(tmp_path, f"train.init_from={tmp_path / 'junk.pt'}", f"train.out_dir={tmp_path / 'd'}")
    with pytest.raises(ConfigError, match="train.init_from: cannot load checkpoint .*junk.pt"):
        _setup(config)
