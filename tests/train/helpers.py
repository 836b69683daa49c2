"""Small run configurations over tiny shards for trainer tests."""

from pathlib import Path

from pecan import config as cfgmod
from tests.shards import write_dataset


def tiny_run(tmp_path: Path, *overrides: str, n_complexes: int = 4, n_poses: int = 6):
    """A config over 2 shards x n_complexes x (n_poses + crystal), small model, fast settings."""
    data_dir = tmp_path / "data"
    if not (data_dir / "index.csv").exists():
        write_dataset(data_dir, n_shards=2, n_complexes=n_complexes, n_poses=n_poses)
    text = f"""
data: {{data_dir: {data_dir}, train_csvs: [index.csv], val_fraction: 0.25, batch_size: 4, num_workers: 0,
        cache_dir: {tmp_path / "cache"}}}
model: {{hidden: 16, layers: 2, rbf: 8}}
train: {{epochs: 2, lr: 0.003, out_dir: {tmp_path / "run"}, progress: false, plots: false}}
"""
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return path, cfgmod.load(path, list(overrides))
