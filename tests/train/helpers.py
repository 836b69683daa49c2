"""Small run configurations over tiny shards for trainer tests."""

from pathlib import Path
from typing import Any, Mapping, Optional

from tests.configs import make_config


def tiny_run(
    tmp_path: Path,
    *overrides: str,
    n_complexes: int = 4,
    n_poses: int = 6,
    settings: Optional[Mapping[str, Any]] = None,
):
    """(YAML path, config) of the tiny run (tests/configs.py) over 2 shards x n_complexes x (n_poses + crystal);
    ``settings`` go into the YAML, ``overrides`` are ``--set`` strings applied on load."""
    dataset = {"n_shards": 2, "n_complexes": n_complexes, "n_poses": n_poses}
    return make_config(tmp_path, settings, *overrides, dataset=dataset)
