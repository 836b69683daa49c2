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
    config = cfgmod.load(path, ["train.epochs=1", "data.train_fns=[a.hdf5,b.hdf5]", "train.lr=0.01", "model.nn_type=3"])
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


@pytest.mark.parametrize(
    "text, key",
    [
        ("data: {data_dir: d, batchsize: 3}\n", "data.batchsize"),
        ("data: {data_dir: d}\nmodle: {}\n", "modle"),
        ("data: {data_dir: d, batch_size: many}\n", "data.batch_size"),
        ("data: {data_dir: d, io_mode: fast}\n", "data.io_mode"),
        ("data: {data_dir: d, val_fraction: 1.5}\n", "data.val_fraction"),
        ("train: {epochs: 2}\n", "data.train_csvs"),
    ],
)
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
    from pecan.config.docs import describe

    text = describe()
    for section in ("data", "model", "train", "trace"):
        assert f"`{section}." in text
    assert "`data.io_mode`" in text and "`train.amp`" in text


def test_bundled_configs_are_valid():
    from pathlib import Path

    configs = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))
    assert len(configs) >= 2
    for path in configs:
        cfgmod.load(path)


# ---------------------------------------------------------------------------- parsing rules, one per type


def build(section: str, **values):
    raw = {"data": {"data_dir": "d"}}
    raw.setdefault(section, {}).update(values)
    return cfgmod.from_dict(raw, source="cfg.yaml")


def rejects(section: str, key: str, value) -> str:
    with pytest.raises(ConfigError) as err:
        build(section, **{key: value})
    message = str(err.value)
    assert f"{section}.{key}" in message and "cfg.yaml" in message
    return message


def test_int_fields_take_ints_only():
    assert build("train", epochs=3).train.epochs == 3
    for bad in (True, 2.5, "3", None):
        rejects("train", "epochs", bad)


def test_float_fields_widen_ints_and_reject_bools():
    lr = build("train", lr=1).train.lr
    assert lr == 1.0 and isinstance(lr, float)
    assert build("train", lr=0.25).train.lr == 0.25
    assert "must be float" in rejects("train", "lr", True)
    rejects("train", "lr", "fast")


def test_float_in_exponent_form_from_yaml_or_override(tmp_path):
    # YAML 1.1 parses 1e-3 (no dot) as a string; it is still the float the user meant.
    path = tmp_path / "run.yaml"
    path.write_text("data: {data_dir: d}\ntrain: {lr: 1e-3, weight_decay: 5E-5}\n")
    config = cfgmod.load(path, ["train.grad_clip=2e0"])
    assert (config.train.lr, config.train.weight_decay, config.train.grad_clip) == (1e-3, 5e-5, 2.0)


def test_bool_fields_take_bools_only():
    assert build("train", compile=False).train.compile is False
    assert build("train", deterministic=True).train.deterministic is True
    for bad in (1, "yes", 0):
        rejects("train", "deterministic", bad)


def test_str_fields_take_scalars_not_bools_or_lists():
    assert build("data", index_prefix=5).data.index_prefix == "5"
    assert build("data", index_prefix=1.5).data.index_prefix == "1.5"
    rejects("data", "index_prefix", True)
    rejects("data", "index_prefix", ["a"])


def test_literal_fields_take_listed_values_only():
    assert build("data", io_mode="hoist").data.io_mode == "hoist"
    message = rejects("data", "io_mode", "fast")
    assert "'packed'" in message and "'fast'" in message


def test_list_fields_take_a_list_or_a_lone_string():
    assert build("data", train_fns="a.hdf5").data.train_fns == ["a.hdf5"]
    assert build("data", train_fns=["a.hdf5", "b.hdf5"]).data.train_fns == ["a.hdf5", "b.hdf5"]
    assert "list of str" in rejects("data", "train_fns", {"a": 1})
    rejects("data", "train_fns", [True])


def test_optional_fields_take_none_or_the_type():
    assert build("model", nn_type=None).model.nn_type is None
    assert build("model", nn_type=3).model.nn_type == 3
    assert "int or NoneType" in rejects("model", "nn_type", "three")


def test_sections_must_be_mappings_and_keys_known():
    assert cfgmod.from_dict({"data": {"data_dir": "d"}, "model": None}).model.hidden == 64
    with pytest.raises(ConfigError, match="section 'model' must be a mapping, got list"):
        cfgmod.from_dict({"data": {"data_dir": "d"}, "model": [1]}, source="cfg.yaml")
    with pytest.raises(ConfigError, match="cfg.yaml: section 'train' must be a mapping, got list"):
        cfgmod.from_dict({"data": {"data_dir": "d"}, "train": [1]}, source="cfg.yaml")
    with pytest.raises(ConfigError) as err:
        cfgmod.from_dict({"data": {"data_dir": "d"}, "model": {"hiden": 3}}, source="cfg.yaml")
    assert "model.hiden" in str(err.value) and "hidden" in str(err.value) and "cfg.yaml" in str(err.value)


@pytest.mark.parametrize(
    "text, keys, value",
    [
        ("train.epochs=3", ["train", "epochs"], 3),
        ("train.lr=0.001", ["train", "lr"], 1e-3),
        ("data.train_fns=[a, b]", ["data", "train_fns"], ["a", "b"]),
        ("train.resume=", ["train", "resume"], ""),
        ("train.out_dir=a=b", ["train", "out_dir"], "a=b"),
        (" train.compile =true", ["train", "compile"], True),
    ],
)
def test_parse_override(text, keys, value):
    assert cfgmod.parse_override(text) == (keys, value)


@pytest.mark.parametrize(
    "text, message",
    [
        ("epochs", "expected section.key=value"),
        ("epochs=1", "key must be section.key"),
        ("a.b.c=1", "key must be section.key"),
        (".epochs=1", "key must be section.key"),
        ("train.epochs=[1", "not valid YAML"),
    ],
)
def test_bad_override_is_named(text, message):
    with pytest.raises(ConfigError, match=message) as err:
        cfgmod.parse_override(text)
    assert text in str(err.value)


@pytest.mark.parametrize(
    "raw, expected",
    [
        (None, None),
        ("", None),
        ("1", True),
        ("true", True),
        (" Yes ", True),
        ("ON", True),
        ("0", False),
        ("false", False),
        ("no", False),
        ("Off", False),
    ],
)
def test_env_flag_values(raw, expected):
    environ = {} if raw is None else {"PECAN_X": raw}
    assert cfgmod.env_flag("PECAN_X", environ) is expected


def test_env_flag_malformed_names_the_variable():
    with pytest.raises(ConfigError, match=r"PECAN_X must be 0 or 1 .*got '2'"):
        cfgmod.env_flag("PECAN_X", {"PECAN_X": "2"})


def test_empty_config_is_all_defaults_and_a_non_mapping_is_named():
    # An empty file (None) is an empty mapping: it fails only on the required data keys.
    with pytest.raises(ConfigError, match="'data.data_dir' is required"):
        cfgmod.from_dict(None, source="cfg.yaml")
    with pytest.raises(ConfigError, match="^cfg.yaml: top level must be a mapping of sections$"):
        cfgmod.from_dict([1], source="cfg.yaml")


def test_model_section_by_legacy_number_and_its_errors_named():
    data = {"data_dir": "d"}
    assert cfgmod.from_dict({"data": data, "model": {"nn_type": 2}}).model.name == "ggcnn"
    assert cfgmod.from_dict({"data": data, "model": {"name": "egnn", "nn_type": 0}}).model.name == "cnn3d"
    for model, message in [
        ({"name": [1]}, "cfg.yaml: 'model.name' must be str, got [1]"),
        ({"nn_type": "three"}, "cfg.yaml: 'model.nn_type' must be int or NoneType, got 'three'"),
        (
            {"name": "nope"},
            "cfg.yaml: 'model.name'/'model.nn_type': unknown model 'nope'; valid: cnn3d, sgcnn, ggcnn, egnn",
        ),
    ]:
        with pytest.raises(ConfigError) as err:
            cfgmod.from_dict({"data": data, "model": model}, source="cfg.yaml")
        assert str(err.value) == message


def test_key_of_another_variant_names_the_variants_that_have_it():
    # "name" comes first: every key is checked, not only those before the first valid one.
    with pytest.raises(ConfigError) as err:
        cfgmod.from_dict({"data": {"data_dir": "d"}, "model": {"name": "egnn", "use_vdw": True}}, source="cfg.yaml")
    assert str(err.value) == (
        "cfg.yaml: 'model.use_vdw' is a key of the sgcnn and ggcnn variant, not of egnn (the selected model); "
        "egnn keys: attention, cutoff, docking_prior, dropout, hidden, layers, name, nn_type, rbf, update_coords, "
        "use_docking_score, "
        "use_pose_features"
    )


@pytest.fixture
def no_pecan_env(monkeypatch):
    """The given mapping, not the process environment, is what these tests read."""
    for name in cfgmod.ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def test_env_value_reads_the_given_environment(no_pecan_env):
    assert cfgmod.env_value("PECAN_TORCH_COMPILE", {"PECAN_TORCH_COMPILE": "1"}) is True
    assert cfgmod.env_value("PECAN_CACHE_DIR", {"PECAN_CACHE_DIR": " /scratch/cache "}) == "/scratch/cache"
    assert cfgmod.env_value("PECAN_CACHE_DIR", {"PECAN_CACHE_DIR": "  "}) is None
    assert cfgmod.env_value("PECAN_CACHE_DIR", {}) is None


def test_apply_env_fills_empty_paths_and_overrides_flags(no_pecan_env):
    config = cfgmod.from_dict({"data": {"data_dir": "d", "index_dir": "/set/index"}, "train": {"compile": True}})
    environ = {"PECAN_CACHE_DIR": "/env/cache", "PECAN_INDEX_CSV_DIR": "/env/index", "PECAN_TORCH_COMPILE": "0"}
    assert cfgmod.apply_env(config, environ) is config
    assert (config.data.cache_dir, config.data.index_dir) == ("/env/cache", "/set/index")
    assert (config.train.compile, config.data.decode_cache) == (False, True)
