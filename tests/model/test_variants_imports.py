"""Lazy variant imports: nothing imports a variant it does not use, and no variant needs torch-scatter or
torch-sparse (their import is made to fail)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VARIANT_MODULES = {"egnn": "model.egnn", "sgcnn": "model.sgcnn", "ggcnn": "model.ggcnn", "cnn3d": "model.cnn3d"}

BLOCK_EXTENSIONS = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('torch_scatter', 'torch_sparse'):
            raise ImportError(f'{name} is blocked for this test')
sys.meta_path.insert(0, Block())
for name in ('torch_scatter', 'torch_sparse'):
    sys.modules.pop(name, None)
"""


def run_fresh(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


@pytest.mark.slow
def test_every_variant_runs_when_torch_scatter_and_torch_sparse_cannot_be_imported():
    code = (
        BLOCK_EXTENSIONS
        + """
import torch, types
for name in ('torch_scatter', 'torch_sparse'):
    try:
        __import__(name)
        raise SystemExit(f'{name} imported despite the block')
    except ImportError:
        pass
import model
from tests.model.variant_batches import tiny_batch, tiny_model
from model.egnn import EGNNConfig
egnn = model.build_model('egnn', EGNNConfig(hidden=8, layers=2, rbf=4))
for net in (egnn, tiny_model('sgcnn'), tiny_model('ggcnn'), tiny_model('cnn3d')):
    logits = net(tiny_batch(2))
    logits.sum().backward()
    assert torch.isfinite(logits).all()
import torch_geometric.typing as t
print(sorted(n for n in sys.modules if n.startswith(('torch_scatter', 'torch_sparse'))), t.WITH_TORCH_SCATTER)
"""
    )
    assert run_fresh(code) == "[] False"


@pytest.mark.parametrize("variant", sorted(VARIANT_MODULES))
@pytest.mark.slow
def test_only_the_selected_variant_is_imported(variant):
    code = f"""
import sys
from pecan import config
cfg = config.load('configs/{"demo" if variant == "egnn" else variant}.yaml')
import model
from tests.model.variant_batches import tiny_batch
section = cfg.model
if '{variant}' != 'egnn':
    import dataclasses
    from tests.model.variant_batches import TINY
    section = dataclasses.replace(section, **TINY['{variant}'])
net = model.build_model(section.name, section, section.nn_type)
net(tiny_batch(2))
print(' '.join(sorted(sys.modules)))
"""
    imported = set(run_fresh(code).split())
    assert VARIANT_MODULES[variant] in imported
    others = {m for v, m in VARIANT_MODULES.items() if v != variant}
    assert imported.isdisjoint(others), imported & others
