"""Gather and sum by edge index: PyTorch's index ops (what the EGNN layer uses) against CSR sparse products.

    python -m benchmarks.bench_aggregation --threads 2 --out benchmarks/bench_aggregation.json

The two per-edge primitives of a message-passing step, each timed forward + backward on the shapes of the compute
benchmark (3,200 nodes, ~47k edges, 64 features):

- gather ``h[index]`` (``index_select``; its backward is a sum by index),
- sum by index (``index_add_``; its backward is a gather).

``csr`` does the same with a sparse CSR node x edge matrix built once per batch: the sum is ``A @ m``, the gather's
backward ``A @ g`` (a custom autograd function; the CSR build is timed separately). Each is timed with the index
sorted (as PECAN stores edges, sorted by target) and shuffled, interleaved over ``--repeats`` rounds, medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch


def csr_matrix(index: torch.Tensor, nodes: int) -> torch.Tensor:
    """The nodes x edges 0/1 matrix with a one at (index[e], e), as sparse CSR."""
    order = torch.argsort(index, stable=True)
    rows = torch.zeros(nodes + 1, dtype=torch.long)
    rows[1:] = torch.bincount(index, minlength=nodes).cumsum(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "sparse CSR support is in beta"
        return torch.sparse_csr_tensor(rows, order, torch.ones(index.numel()), size=(nodes, index.numel()))


class CSRGather(torch.autograd.Function):
    """values[index]; backward: the gradient summed per node with the CSR matrix."""

    @staticmethod
    def forward(ctx, values, index, matrix):
        ctx.matrix = matrix
        return values.index_select(0, index)

    @staticmethod
    def backward(ctx, grad):
        return torch.sparse.mm(ctx.matrix, grad.contiguous()), None, None


class CSRSum(torch.autograd.Function):
    """Sum of values per index with the CSR matrix; backward: the gradient gathered per edge."""

    @staticmethod
    def forward(ctx, values, index, matrix):
        ctx.index = index
        return torch.sparse.mm(matrix, values)

    @staticmethod
    def backward(ctx, grad):
        return grad.index_select(0, ctx.index), None, None


def main(argv=None) -> int:
    """Time the primitives interleaved; print and write medians."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--nodes", type=int, default=3200)
    parser.add_argument("--edges", type=int, default=47000)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=10, help="timed calls per case per round")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    indexes = {"sorted": torch.randint(0, args.nodes, (args.edges,), generator=generator).sort().values}
    indexes["shuffled"] = indexes["sorted"][torch.randperm(args.edges, generator=generator)]
    h = torch.randn(args.nodes, args.features, generator=generator)
    m = torch.randn(args.edges, args.features, generator=generator)
    matrices = {name: csr_matrix(index, args.nodes) for name, index in indexes.items()}

    def gather(kind, name):
        index, matrix = indexes[name], matrices[name]
        values = h.clone().requires_grad_()
        out = values.index_select(0, index) if kind == "index" else CSRGather.apply(values, index, matrix)
        out.backward(m)

    def summed(kind, name):
        index, matrix = indexes[name], matrices[name]
        values = m.clone().requires_grad_()
        out = (
            values.new_zeros(args.nodes, args.features).index_add_(0, index, values)
            if kind == "index"
            else CSRSum.apply(values, index, matrix)
        )
        out.backward(h)

    cases = {
        f"{op.__name__}|{kind}|{name}": (op, kind, name)
        for op in (gather, summed)
        for kind in ("index", "csr")
        for name in indexes
    }
    cases["csr_build|csr|sorted"] = (lambda kind, name: csr_matrix(indexes[name], args.nodes), "csr", "sorted")
    times = {key: [] for key in cases}
    for _ in range(args.repeats):
        for key, (op, kind, name) in cases.items():
            op(kind, name)  # warm
            start = time.perf_counter()
            for _ in range(args.calls):
                op(kind, name)
            times[key].append((time.perf_counter() - start) / args.calls * 1e3)
    medians = {key: statistics.median(value) for key, value in times.items()}
    print("| primitive (fwd + bwd) | implementation | index | median ms |\n|---|---|---|---|")
    for key, value in medians.items():
        print("| {} | {} | {} | {:.2f} |".format(*key.split("|"), value))
    result = {
        "threads": args.threads,
        "nodes": args.nodes,
        "edges": args.edges,
        "features": args.features,
        "median_ms": medians,
        "ms": times,
        "argv": sys.argv[1:],
        "torch": torch.__version__,
    }
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
