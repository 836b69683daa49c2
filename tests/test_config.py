"""Config: YAML + overrides, type checks, unknown keys, env gates, saved resolved config."""
import pytest
import yaml

from pecan import config as cfgmod
from pecan.config import ConfigError


def write(tmp_path, text):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return path


def test_load_with_overrides(tmp_path):
    path = write(tmp_path, "data:\n  data_dir: d\n  batch_size: 4\ntrain:\n  epochs: 3\n")
    config = cfgmod.load(path, ["train.epochs=1", "data.train_fns=[a.hdf5,b.hdf5]", "train.lr=0.01",
                                "model.nn_type=3"])
    assert config.train.epochs == 1
    assert config.data.train_fns == ["a.hdf5", "b.hdf5"]
    assert config.data.batch_size == 4
    assert config.train.lr == pytest.approx(0.01)
    assert config.model.nn_type == 3


def test_int_widens_to_float_but_not_bool(tmp_path):
    config = cfgmod.load(write(tmp_path, "data: {data_dir: d}\ntrain: {lr: 1}\n"))
    assert isinstance(config.train.lr, float)
    with pytest.raises(ConfigError, match="train.epochs"):
        cfgmod.load(write(tmp_path, "data: {data_dir: d}\ntrain: {epochs: true}\n"))


@pytest.mark.parametrize("text, key", [
    ("data: {data_dir: d, batchsize: 3}\n", "data.batchsize"),
    ("data: {data_dir: d}\nmodle: {}\n", "modle"),
    ("data: {data_dir: d, batch_size: many}\n", "data.batch_size"),
    ("data: {data_dir: d, io_mode: fast}\n", "data.io_mode"),
    ("data: {data_dir: d, val_fraction: 1.5}\n", "data.val_fraction"),
    ("train: {epochs: 2}\n", "data.train_csvs"),
])
def test_bad_config_names_key_and_file(tmp_path, text, key):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        cfgmod.load(path)
    assert key in str(err.value) and str(path) in str(err.value)


def test_bad_override_names_key(tmp_path):
    path = write(tmp_path, "data: {data_dir: d}\n")
    with pytest.raises(ConfigError, match="train.epoch"):
        cfgmod.load(path, ["train.epoch=1"])
    with pytest.raises(ConfigError, match="section.key"):
        cfgmod.load(path, ["epochs=1"])


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match="nope.yaml"):
        cfgmod.load(tmp_path / "nope.yaml")


def test_compile_env_gate(tmp_path, monkeypatch):
    path = write(tmp_path, "data: {data_dir: d}\ntrain: {compile: true}\n")
    monkeypatch.setenv("PECAN_TORCH_COMPILE", "0")
    assert cfgmod.load(path).train.compile is False
    monkeypatch.setenv("PECAN_TORCH_COMPILE", "1")
    assert cfgmod.load(write(tmp_path, "data: {data_dir: d}\n")).train.compile is True
    monkeypatch.setenv("PECAN_TORCH_COMPILE", "maybe")
    with pytest.raises(ConfigError, match="PECAN_TORCH_COMPILE"):
        cfgmod.load(path)


def test_save_round_trip_and_digest(tmp_path):
    config = cfgmod.load(write(tmp_path, "data: {data_dir: d}\n"), ["train.epochs=2"])
    out = tmp_path / "run" / "config.yaml"
    cfgmod.save(config, out)
    again = cfgmod.from_dict(yaml.safe_load(out.read_text()), str(out))
    assert again == config and again.digest() == config.digest()
    assert not list(out.parent.glob("*.tmp*"))
    again.train.epochs = 3
    assert again.digest() != config.digest()


def test_describe_documents_every_field():
    text = cfgmod.describe()
    for section in ("data", "model", "train", "trace"):
        assert f"`{section}." in text
    assert "`data.io_mode`" in text and "`train.amp`" in text


def test_bundled_configs_are_valid():
    from pathlib import Path

    configs = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))
    assert len(configs) >= 2
    for path in configs:
        cfgmod.load(path)
