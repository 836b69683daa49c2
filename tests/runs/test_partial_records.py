"""`pecan runs report|plot|compare` over records written by older versions or cut short (no wall_s or
world_size, a val_auc written as text, fit_* fields on some epochs only), a config.yaml with YAML tags, and a
plot --out that names a file, an epochs.jsonl with no epoch record: each is read or refused with a message, never
a traceback."""

import json

import pytest
import yaml

from pecan import cli
from tests.test_report import record


def run_dir(path, change=lambda r: None, config_text=None):
    """A 3-epoch run directory whose records ``change`` edits (config.yaml: ``config_text`` or a plain one)."""
    path.mkdir(parents=True)
    config = yaml.safe_dump({"model": {"hidden": 8}, "train": {"epochs": 3}})
    (path / "config.yaml").write_text(config_text or config)
    lines = []
    for epoch in (1, 2, 3):
        one = record(epoch)
        change(one)
        lines.append(json.dumps(one))
    (path / "epochs.jsonl").write_text("\n".join(lines) + "\n")
    return path


CASES = {
    "no_wall_s": lambda r: r.pop("wall_s"),
    "no_world_size": lambda r: r.pop("world_size"),
    "val_auc_as_text": lambda r: r.update(val_auc="0.7"),
    "val_auc_not_a_number": lambda r: r.update(val_auc="n/a"),
    "epoch_and_loss_only": lambda r: [r.pop(k) for k in list(r) if k not in ("epoch", "train_loss")],
    # train.fit_check_every: the fit check's fields on the last epoch only (one written as text)
    "fit_on_the_last_epoch_only": lambda r: r.update(fit_top1="0.5", fit_docking_top1=0.75) if r["epoch"] == 3 else 0,
}


def _actions(tmp_path, good, other):
    actions = [["runs", "report", str(other)], ["runs", "compare", f"a={good}", f"b={other}"]]
    try:
        import matplotlib  # noqa: F401

        actions.append(["runs", "plot", str(other), "--out", str(tmp_path / "plots")])
        actions.append(["runs", "plot", str(good), str(other), "--out", str(tmp_path / "plots")])
    except ImportError:
        pass
    return actions


@pytest.mark.parametrize("case", list(CASES))
def test_partial_and_older_records_are_read(tmp_path, capsys, case):
    good, other = run_dir(tmp_path / "good"), run_dir(tmp_path / case, CASES[case])
    for argv in _actions(tmp_path, good, other):
        assert cli.main(argv) == 0, argv
    captured = capsys.readouterr()
    if case == "val_auc_as_text":
        assert "| 0.7000 |" in captured.out  # read as the number it spells
    if case == "val_auc_not_a_number":
        assert "val_auc is not a number in 3 record(s) (first: 'n/a'); left out" in captured.err
    if case == "fit_on_the_last_epoch_only":
        assert " | fit top1 0.50 (docking 0.75)" in captured.out
    if case in ("no_wall_s", "epoch_and_loss_only"):
        assert "| n/a |" in captured.out and "wall n/a" in captured.out


@pytest.mark.parametrize("tagged", ["model: !!python/object:os.system {hidden: 8}", "model: !custom {hidden: 8}"])
def test_a_yaml_tag_in_config_yaml_is_read_as_its_plain_value(tmp_path, capsys, tagged):
    good = run_dir(tmp_path / "good")
    other = run_dir(tmp_path / "tagged", config_text=f"{tagged}\ntrain: {{epochs: 3}}\n")
    assert cli.main(["runs", "compare", f"a={good}", f"b={other}"]) == 0
    assert "every setting agrees" in capsys.readouterr().out  # the tagged mapping compares as {hidden: 8}


def test_config_yaml_that_is_not_yaml_is_named(tmp_path, capsys):
    good, other = run_dir(tmp_path / "good"), run_dir(tmp_path / "bad", config_text="model: [unclosed\n")
    assert cli.main(["runs", "compare", f"a={good}", f"b={other}"]) == 1
    err = capsys.readouterr().err
    assert f"{other / 'config.yaml'}: not readable as YAML" in err and "Traceback" not in err


def test_plot_out_naming_a_file_is_an_invocation_error(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="plots need the .[plots] extra")
    good = run_dir(tmp_path / "good")
    (tmp_path / "taken.png").write_text("not a directory")
    for out in (tmp_path / "taken.png", tmp_path / "taken.png" / "below"):
        assert cli.main(["runs", "plot", str(good), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert "--out" in err and f"{tmp_path / 'taken.png'} is a file" in err
    assert (tmp_path / "taken.png").read_text() == "not a directory"


@pytest.mark.parametrize("action", ["compare", "plot"])
@pytest.mark.parametrize("content", ["", "\n", '{"event": "stopped", "epoch": 0}\n'])
def test_runs_commands_on_an_empty_epochs_file_name_it(tmp_path, capsys, action, content):
    from pecan import cli

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "epochs.jsonl").write_text(content)
    argv = ["runs", action, f"a={run_dir}"] if action == "compare" else ["runs", action, str(run_dir)]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert str(run_dir / "epochs.jsonl") in err and "no epoch records" in err and "Traceback" not in err
