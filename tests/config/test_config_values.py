"""Config values checked at load: an invalid value or an unknown key exits 2 naming the key (and the
file), configs users write (nulls, an empty section, exponents) are accepted, float strings are still checked."""

import pytest

from pecan import config as cfgmod
from tests.app_run import run


@pytest.mark.parametrize(
    "setting, key",
    [
        ("train.device=gpu", "train.device"),
        ("train.device=cuda", "train.device"),
        ("model.name=foo", "model.name"),
        ("model.nn_type=99", "model.nn_type"),
        ("model.nn_type=-3", "model.nn_type"),
        ("train.weight_decay=-1", "train.weight_decay"),
        ("train.warmup_steps=-1", "train.warmup_steps"),
        ("model.rbf=0", "model.rbf"),
        ("model.cutoff=-2", "model.cutoff"),
        ("train.seed=-3", "train.seed"),
        ("data.max_atoms=0", "data.max_atoms"),
        ("train.lr=.nan", "train.lr"),
        ("train.resume=/nowhere/last.pt", "train.resume"),
    ],
)
def test_invalid_values_exit_2_naming_key(tmp_path, data_dir, caplog, capsys, setting, key):
    if setting == "train.device=cuda":
        import torch

        if torch.cuda.is_available():
            pytest.skip("a GPU is visible: cuda is a valid device here")
    code, text = run(tmp_path, data_dir, setting, caplog=caplog, capsys=capsys)
    assert code == 2 and key in text
    assert "run.yaml" in text or key == "train.resume"
    assert not (tmp_path / "run").exists()


def test_unknown_key_exits_2(tmp_path, data_dir, caplog, capsys):
    code, text = run(tmp_path, data_dir, "data.batchsize=3", caplog=caplog, capsys=capsys)
    assert code == 2 and "data.batchsize" in text


@pytest.mark.parametrize(
    "yaml_text, check",
    [
        (
            "data: {train_csvs: null, val_csvs: null, train_fns: null, val_fns: null, data_dir: d}",
            lambda c: c.data.train_csvs == [] and c.data.val_fns == [],
        ),
        ("train:\ndata: {data_dir: d}", lambda c: c.train.epochs == 7),
        (
            "train: {lr: 1e-3, weight_decay: 1E+4}\ndata: {data_dir: d}",
            lambda c: c.train.lr == 1e-3 and c.train.weight_decay == 1e4,
        ),
    ],
)
def test_configs_users_write_are_accepted(tmp_path, yaml_text, check):
    path = tmp_path / "c.yaml"
    path.write_text(yaml_text)
    config = cfgmod.load(path, ["train.epochs=7"])
    assert check(config)


def test_yaml_float_strings_are_still_checked(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("train: {lr: 1e-x}\ndata: {data_dir: d}")
    with pytest.raises(cfgmod.ConfigError, match="train.lr"):
        cfgmod.load(path)


def test_listwise_with_rmsd_target_names_the_target_as_the_bad_value(tmp_path):
    from pecan import config as config_module

    path = tmp_path / "c.yaml"
    path.write_text("data: {data_dir: d}\ntrain: {ranking_loss: listwise, ranking_target: rmsd}\n")
    with pytest.raises(config_module.ConfigError) as err:
        config_module.load(str(path))
    message = str(err.value)
    assert "'train.ranking_target'" in message and "got 'rmsd'" in message and "listwise" in message
