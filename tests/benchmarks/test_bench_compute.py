"""benchmarks/bench_compute.py: the textbook baseline is a proper EGNN and the CPU path runs end to end."""

import json

import torch

from benchmarks import bench_aggregation, bench_compute


def test_random_graphs_have_the_requested_density():
    batch = bench_compute.radius_graph_batch(2, 300, 14.7)
    assert batch.num_graphs == 2 and batch.num_nodes == 600
    assert 12.5 < batch.edge_index.size(1) / batch.num_nodes < 17.0
    assert set(batch.edge_type.unique().tolist()) == {0, 1, 2}


def test_textbook_layer_is_equivariant():
    torch.manual_seed(0)
    batch = bench_compute.radius_graph_batch(1, 60, 10.0)
    layer = bench_compute.TextbookLayer(16, attention=True, update_coords=True)
    with torch.no_grad():
        layer.coord_mlp[-1].weight.mul_(10.0)
    h = torch.randn(60, 16)
    q, _ = torch.linalg.qr(torch.randn(3, 3))
    shift = torch.randn(3) * 5.0
    with torch.no_grad():
        h_out, x_out = layer(h, batch.pos, batch.edge_index)
        h_moved, x_moved = layer(h, batch.pos @ q.T + shift, batch.edge_index)
    assert (x_out - batch.pos).abs().max() > 1e-3
    torch.testing.assert_close(h_moved, h_out, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(x_moved, x_out @ q.T + shift, atol=1e-4, rtol=1e-4)


def test_cpu_run_writes_the_table_and_demo_stage(tmp_path):
    out = tmp_path / "compute.json"
    code = bench_compute.main(
        [
            "--threads",
            "1",
            "--graphs",
            "1",
            "--atoms",
            "40",
            "--steps",
            "1",
            "--repeats",
            "1",
            "--modes",
            "fp32",
            "bf16",
            "--levers",
            "--demo",
            "--demo-batches",
            "1",
            "2",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    results = report["results"]
    assert {r["model"] for r in results.values()} == {
        "textbook",
        "pecan",
        "pecan_concat_first_linear",
        "pecan_geometry_per_layer",
    }
    assert results["textbook|coords_on|fp32|target"]["vs_textbook"] == 1.0
    assert all(r["median_step_s"] > 0 and r["vs_fp32"] > 0 for r in results.values())
    assert set(report["demo_model"]["batches"]) == {"1|fp32", "2|fp32", "1|bf16", "2|bf16"}


def test_edge_orders_hold_the_same_edges_and_give_the_same_logits():
    from model import egnn

    batch = bench_compute.radius_graph_batch(2, 80, 10.0)
    target = batch.edge_index[1]
    assert bool((target.diff() >= 0).all())  # built as the data path builds them
    torch.manual_seed(0)
    model = egnn.EGNNClassifier(**egnn.input_sizes(), hidden=16, layers=2, update_coords=True).eval()
    reference = model(batch)
    for order in ("target", "source", "shuffled"):
        other = bench_compute.reorder_edges(batch, order)
        pairs = {(s, t, k) for (s, t), k in zip(other.edge_index.t().tolist(), other.edge_type.tolist())}
        assert pairs == {(s, t, k) for (s, t), k in zip(batch.edge_index.t().tolist(), batch.edge_type.tolist())}
        torch.testing.assert_close(model(other), reference, atol=1e-5, rtol=1e-5)
    source_sorted = bench_compute.reorder_edges(batch, "source").edge_index[0]
    assert bool((source_sorted.diff() >= 0).all())


def test_csr_primitives_equal_index_ops():
    generator = torch.Generator().manual_seed(0)
    index = torch.randint(0, 30, (200,), generator=generator)
    matrix = bench_aggregation.csr_matrix(index, 30)
    h = torch.randn(30, 4, generator=generator, requires_grad=True)
    m = torch.randn(200, 4, generator=generator, requires_grad=True)
    gathered = bench_aggregation.CSRGather.apply(h, index, matrix)
    summed = bench_aggregation.CSRSum.apply(m, index, matrix)
    torch.testing.assert_close(gathered, h[index])
    torch.testing.assert_close(summed, torch.zeros(30, 4).index_add_(0, index, m))
    (gathered.sum() + (summed * summed).sum()).backward()
    torch.testing.assert_close(h.grad, torch.bincount(index, minlength=30).float().unsqueeze(1).expand(30, 4))
    torch.testing.assert_close(m.grad, 2 * summed.detach()[index])
