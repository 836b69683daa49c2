"""`pecan score`'s batches hold the tensors of PyG's Batch of the HDF5 reader's samples, and the model scores
them alike; the scoring modules import neither PyG nor ProLIF."""

import subprocess
import sys

import numpy as np
import pytest
import torch

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from rdkit import Chem
from torch_geometric.data import Batch
from torch_geometric.data import Data as PygData

import model as registry
from model.egnn import EGNNConfig
from model.readout import group_softmax
from pecan.convert.complexes import Options
from pecan.convert.examples import prolif_data, vina_poses_with_scores
from pecan.data.h5dataset import graph_to_data
from pecan.data.sample import SampleTable
from pecan.scoring.featurise import GroupConverter, LigandGroup
from pecan.scoring.graphs import collate, pose_graph
from pecan.scoring.memory import converted_index


class Data:
    pocket_radius, edge_cutoff, max_atoms, max_edges = 8.0, 4.5, 0, 0
    rmsd_threshold, label_source, label_conflict = 2.0, "auto", "error"


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    data = prolif_data() / "vina"
    poses = vina_poses_with_scores(tmp_path_factory.mktemp("graphs") / "vina.sdf")
    records = list(Chem.SDMolSupplier(str(poses), removeHs=False))
    group = LigandGroup("vina", data / "rec.pdb", str(poses), records, data / "lig.pdb", "vina_score")
    item = GroupConverter(Options()).convert(group)
    frame, samples = converted_index([item], Data)
    table = SampleTable.from_index(frame)
    graphs = [pose_graph(s.data, s.vdw, Data, f"pose {k}") for k, s in enumerate(samples)]
    return table, graphs


def pyg_batch(table, graphs, rows):
    items = []
    for i, graph in zip(rows, graphs):
        values = {
            **table.sample_field_values(np.array([i])),
            "y": table.label[[i]],
            "pose_features": table.pose_features[i],
        }
        items.append(PygData(**graph_to_data(graph, values).fields()))
    return Batch.from_data_list(items)


def test_graph_batch_holds_the_readers_tensors_and_scores_alike(converted):
    table, graphs = converted
    rows = np.array([4, 0, 7, 2])
    picked = [graphs[i] for i in rows]
    mine, theirs = collate(picked, table, rows), pyg_batch(table, picked, rows)
    assert set(mine.keys()) == set(theirs.keys()) and mine.num_graphs == theirs.num_graphs == 4
    for name in theirs.keys():
        assert mine[name].dtype == theirs[name].dtype, name
        assert torch.equal(mine[name], theirs[name]), name
    torch.manual_seed(0)
    egnn = registry.build_model("egnn", EGNNConfig(hidden=16, layers=2, use_docking_score=True)).eval()
    with torch.no_grad():
        assert torch.equal(egnn(mine), egnn(theirs))


def test_logits_do_not_depend_on_the_batch(converted):
    table, graphs = converted
    torch.manual_seed(1)
    egnn = registry.build_model("egnn", EGNNConfig(hidden=16, layers=2)).eval()
    rows = np.arange(len(graphs))
    with torch.no_grad():
        whole = egnn(collate(graphs, table, rows))
        one_by_one = torch.cat([egnn(collate([g], table, rows[[k]])) for k, g in enumerate(graphs)])
    torch.testing.assert_close(whole, one_by_one, rtol=0, atol=1e-5)


def test_group_softmax_is_pygs_softmax():
    from torch_geometric.utils import softmax

    graph = torch.tensor([0, 0, 1, 1, 1, 3, 3])
    score = torch.randn(7, 2) * 30
    torch.testing.assert_close(group_softmax(score, graph, 4), softmax(score, graph, num_nodes=4, dim=0))


def test_the_scoring_path_imports_neither_pyg_nor_prolif():
    code = (
        "import sys\n"
        "import pecan.scoring.poses, pecan.scoring.ranks, pecan.scoring.screen, model.egnn\n"
        "import pecan.commands.score\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch_geometric', 'prolif', 'MDAnalysis'))\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_a_whole_scoring_run_imports_no_pyg(tmp_path):
    """Nor at its end: the summary comes from pecan.scoring.figures, not the shard scorer (which imports the
    data loader and PyG, 3 s)."""
    poses = vina_poses_with_scores(tmp_path / "vina.sdf")
    code = (
        "import sys\n"
        "from pecan.scoring.poses import ScoreRequest, score_poses\n"
        "from pecan.pretrained import default_checkpoint\n"
        f"request = ScoreRequest(str(default_checkpoint()), {str(tmp_path / 'out.sdf')!r}, "
        f"receptor={str(prolif_data() / 'vina' / 'rec.pdb')!r}, poses={str(poses)!r}, "
        "score_property='vina_score', device='cpu', progress='off')\n"
        "assert score_poses(request) == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch_geometric'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
