"""Strict YAML: a key that appears twice in one mapping (flow or block style) is an error naming
the key and both lines, exit 2."""

from __future__ import annotations

import textwrap

import pytest

from tests.app_run import run


@pytest.mark.parametrize(
    "extra, key, lines",
    [
        # write_config writes data, model and train on lines 1-3: the extra line is line 4
        ("data: {val_fraction: 0.5}\n", "data", "line 1 and line 4"),
        ("trace: {enabled: false, dir: t, enabled: true}\n", "enabled", "line 4 and line 4"),
    ],
)
def test_duplicate_yaml_key_exits_2_naming_key_and_lines(tmp_path, data_dir, caplog, capsys, extra, key, lines):
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys, extra=extra)
    assert code == 2 and f"key '{key}' appears twice" in text and lines in text and "run.yaml" in text


def test_duplicate_key_in_block_style_names_both_lines(tmp_path):
    from pecan import config

    path = tmp_path / "c.yaml"
    path.write_text(
        textwrap.dedent("""\
        train:
          lr: 0.01
          epochs: 2
          lr: 0.5
        """)
    )
    with pytest.raises(config.ConfigError, match=r"key 'lr' appears twice in one mapping, at line 2 and line 4"):
        config.load(path)
