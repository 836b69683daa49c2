"""The one config factory of the tests: a tiny run's YAML file and its typed config.

``write_config(tmp, {"train.epochs": 1, "model": {"name": "sgcnn"}})`` starts from the tiny run below
(shards written on first use), sets dotted keys, replaces a whole section where a key has no dot, drops a
key whose value is ``DROP``, and writes one flow-style line per section (so a test can name line numbers).
``make_config`` also loads it through ``pecan.config.load``, the path every run takes."""

from __future__ import annotations

import copy
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

import yaml

from pecan import config as cfgmod
from tests.shards import write_dataset

DROP = object()  # a settings value that removes the key from the tiny run
SMALL_MODEL = {"hidden": 8, "layers": 1, "rbf": 4}


def tiny_sections(tmp: Path) -> dict[str, dict[str, Any]]:
    """The tiny run over tmp/data: 25% validation, batches of 4, a 2-layer EGNN, 2 epochs, no plots."""
    return {
        "data": {
            "data_dir": str(tmp / "data"),
            "train_csvs": ["index.csv"],
            "val_fraction": 0.25,
            "batch_size": 4,
            "num_workers": 0,
            "cache_dir": str(tmp / "cache"),
        },
        "model": {"hidden": 16, "layers": 2, "rbf": 8},
        "train": {"epochs": 2, "lr": 0.003, "out_dir": str(tmp / "run"), "progress": False, "plots": False},
    }


def apply_settings(raw: dict, settings: Mapping[str, Any]) -> dict:
    """Dotted keys set (or, with ``DROP``, remove) one value; a plain section name replaces the section."""
    for key, value in settings.items():
        *sections, name = key.split(".")
        target = raw
        for section in sections:
            target = target.setdefault(section, {})
        if value is DROP:
            target.pop(name, None)
        else:
            target[name] = copy.deepcopy(value)
    return raw


def config_text(raw: Mapping[str, Any]) -> str:
    """One flow-style YAML line per section."""
    dumps = [
        yaml.safe_dump({name: part}, default_flow_style=True, width=10_000, sort_keys=False)
        for name, part in raw.items()
    ]
    return "".join(f"{dump.strip()[1:-1]}\n" for dump in dumps)  # each dump is "{name: {...}}": keep the inside


def write_config(
    tmp: Path,
    settings: Optional[Mapping[str, Any]] = None,
    *,
    extra_yaml: str = "",
    dataset: Optional[dict] = None,
    name: str = "run.yaml",
) -> Path:
    """Write tmp/<name> for the tiny run with ``settings`` applied; ``extra_yaml`` is appended as written.

    The shards (``write_dataset(tmp / "data", **dataset)``, 2 x 4 complexes x 6 poses unless given) are
    written when tmp/data holds no index yet; ``dataset={}`` with a ``data`` section of its own writes none."""
    dataset = {"n_shards": 2, "n_complexes": 4, "n_poses": 6} if dataset is None else dataset
    if dataset and not (tmp / "data" / "index.csv").exists():
        write_dataset(tmp / "data", **dataset)
    raw = apply_settings(tiny_sections(tmp), settings or {})
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / name
    path.write_text(config_text(raw) + extra_yaml)
    return path


def make_config(tmp: Path, settings: Optional[Mapping[str, Any]] = None, *overrides: str, **kwargs):
    """(YAML path, typed config) of the tiny run; ``overrides`` are ``--set`` strings applied on load."""
    path = write_config(tmp, settings, **kwargs)
    return path, cfgmod.load(path, list(overrides))


@dataclass(frozen=True)
class TrainedRun:
    """A finished one-epoch tiny run: its YAML, typed config and a copy of last.pt kept outside the run."""

    root: Path
    config_path: Path
    config: cfgmod.Config
    checkpoint: Path

    def copy_to(self, tmp: Path, *overrides: str) -> tuple[Path, cfgmod.Config]:
        """The run directory copied to tmp/run, with a tmp/run.yaml that trains there on the same shards."""
        shutil.copytree(self.root / "run", tmp / "run")
        return make_config(tmp, self.shared_data(), *overrides, dataset={})

    def shared_data(self) -> dict[str, str]:
        """Settings that point a tiny run at this run's shards and pack cache (read, never changed)."""
        return {"data.data_dir": str(self.root / "data"), "data.cache_dir": str(self.root / "cache")}


def train_once(root: Path) -> TrainedRun:
    """Train the tiny run for one epoch through main_app (the path a user's run takes)."""
    import main_app

    path = write_config(root)
    assert main_app.main([str(path), "--set", "train.epochs=1"]) == 0
    checkpoint = root / "model.pt"
    shutil.copy(root / "run" / "checkpoints" / "last.pt", checkpoint)
    return TrainedRun(root, path, cfgmod.load(path, ["train.epochs=1"]), checkpoint)
