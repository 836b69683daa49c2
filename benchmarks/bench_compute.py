"""Compute benchmark: PECAN's EGNN training step against a textbook EGNN, fp32 / bf16 / bf16 + compile.

    python -m benchmarks.bench_compute --threads 2 --out benchmarks/bench_compute.json
    python -m benchmarks.bench_compute --device cuda --out benchmarks/bench_compute_cuda.json

Graphs: random radius graphs (default 8 graphs x 400 atoms, cutoff 4.5 A, ~14.7 edges per atom, 10% ligand
atoms; edges built by PECAN's graph builder, so sorted by target like the data path's batches; ``--edge-order``
adds the same edges sorted by source or shuffled), the same batch for every model. Each configuration (model x
coordinate updates x mode x edge order) is one
training step (forward, backward, AdamW) repeated ``--steps`` times per round; configurations are
interleaved over ``--repeats`` rounds after a warm-up, and medians are reported. Ratios compare models side
by side in the same rounds: ``vs textbook`` is textbook time / this time (above 1: faster than the
textbook), ``vs fp32`` is this model's fp32 time / this time.

``textbook`` is the layer of Satorras, Hoogeboom and Welling 2021 (eqs. 3-6) in its plainest form: per edge
concatenate h_i, h_j and the squared distance, a two-layer edge MLP, a sigmoid attention gate, index_add
aggregation, a residual node MLP and, with coordinate updates, a tanh-bounded mean coordinate update. It
shares PECAN's input embedding and ligand readout, so the two differ only in their layers. ``--levers``
adds PECAN variants with one speed-up undone each (``--old-rev`` adds the layer as of a git revision).

On CUDA (``--device cuda``) the same table is followed by the demo model's (``--config``) steps/s at
batches of 8/32/128 graphs with peak memory, and the largest batch that fits (doubling until out of memory);
``--demo`` runs that stage on the CPU too (steps/s only).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.data import Batch, Data

from model import egnn, readout
from pecan import config as config_module
from pecan.data.graph import radius_edges
from pecan.engine.amp import amp_context

ROOT = Path(__file__).resolve().parents[1]

MODES = ("fp32", "bf16", "bf16_compile")
EDGE_ORDERS = {
    "target": "sorted by target (PECAN's graph builder and packs)",
    "source": "sorted by source",
    "shuffled": "random order",
}


def parse_args(argv=None) -> argparse.Namespace:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (torch.set_num_threads)")
    parser.add_argument("--graphs", type=int, default=8)
    parser.add_argument("--atoms", type=int, default=400)
    parser.add_argument("--edges-per-atom", type=float, default=14.7)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per configuration per round")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--coords", nargs="+", default=["off", "on"], choices=["off", "on"])
    parser.add_argument(
        "--edge-order",
        nargs="+",
        default=["target"],
        choices=list(EDGE_ORDERS),
        help="edge order of the batch: target-sorted (as PECAN's graph builder and packs store "
        "edges), source-sorted, or shuffled; several are timed interleaved",
    )
    parser.add_argument("--levers", action="store_true", help="also time PECAN with one speed-up undone each")
    parser.add_argument("--old-rev", default="", help="also time model/egnn.py as of this git revision")
    parser.add_argument("--config", default=str(ROOT / "configs" / "demo.yaml"), help="demo model (CUDA stage)")
    parser.add_argument("--demo-batches", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--demo", action="store_true", help="run the demo-model stage (always on with CUDA)")
    parser.add_argument(
        "--largest-up-to", type=int, default=65536, help="CUDA: stop doubling the batch at this many graphs"
    )
    parser.add_argument("--out", default="")
    return parser.parse_args(argv)


# ---------------------------------------------------------------------------- graphs


def radius_graph_batch(graphs: int, atoms: int, edges_per_atom: float, cutoff: float = 4.5, seed: int = 0) -> Batch:
    """Random pose-like graphs: atoms uniform in a cube sized for ``edges_per_atom``, 10% ligand atoms."""
    generator = torch.Generator().manual_seed(seed)
    ball = 4.0 / 3.0 * torch.pi * cutoff**3
    side = (atoms * ball / edges_per_atom) ** (1.0 / 3.0) * 0.91  # 0.91: fewer neighbours at the cube's faces
    data = []
    for _ in range(graphs):
        pos = torch.rand(atoms, 3, generator=generator) * side
        is_ligand = torch.arange(atoms) < max(atoms // 10, 1)
        edge_index = torch.from_numpy(radius_edges(pos.numpy(), cutoff))  # as the data path builds them
        ends = is_ligand[edge_index[0]].long() + is_ligand[edge_index[1]].long()
        x = torch.randn(atoms, egnn.input_sizes()["in_features"], generator=generator)
        pose = torch.randint(0, 6, (1, egnn.input_sizes()["pose_features"]), generator=generator).float()
        data.append(
            Data(
                x=x,
                pos=pos,
                edge_index=edge_index.contiguous(),
                edge_type=2 - ends,
                is_ligand=is_ligand,
                pose_features=pose,
                y=torch.randint(0, 2, (1,), generator=generator).float(),
                num_nodes=atoms,
            )
        )
    return Batch.from_data_list(data)


# ---------------------------------------------------------------------------- textbook baseline


class TextbookLayer(nn.Module):
    """Satorras et al. 2021, eqs. 3-6, in their plainest form (attention gate; optional coordinate update)."""

    def __init__(self, hidden: int, attention: bool = True, update_coords: bool = False) -> None:
        super().__init__()
        self.edge_mlp = nn.Sequential(
            nn.Linear(2 * hidden + 1, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU()
        )
        self.gate = nn.Linear(hidden, 1) if attention else None
        self.node_mlp = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
        self.coord_mlp = (
            nn.Sequential(nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 1, bias=False))
            if update_coords
            else None
        )

    def forward(self, h, x, edge_index):
        source, target = edge_index[0], edge_index[1]
        difference = x[target] - x[source]
        squared_distance = (difference * difference).sum(dim=-1, keepdim=True)
        m = self.edge_mlp(torch.cat([h[target], h[source], squared_distance], dim=-1))  # eq. 3
        if self.gate is not None:
            m = m * torch.sigmoid(self.gate(m))
        m = m.float()
        if self.coord_mlp is not None:  # eq. 4, mean over neighbours, tanh-bounded
            move = difference * torch.tanh(self.coord_mlp(m).float())
            count = x.new_zeros(x.size(0), 1).index_add(0, target, torch.ones_like(squared_distance))
            x = x + x.new_zeros(x.shape).index_add(0, target, move) / count.clamp_min(1.0)
        aggregated = h.new_zeros(h.size(0), m.size(1), dtype=torch.float32).index_add(0, target, m)  # eq. 5
        return h + self.node_mlp(torch.cat([h, aggregated], dim=-1)), x  # eq. 6, residual


class TextbookClassifier(nn.Module):
    """Textbook layers between PECAN's input embedding and ligand readout."""

    def __init__(self, in_features: int, pose_features: int, hidden: int, layers: int, update_coords: bool) -> None:
        super().__init__()
        self.embedding = nn.Linear(in_features, hidden)
        self.layers = nn.ModuleList(TextbookLayer(hidden, True, update_coords) for _ in range(layers))
        self.head = nn.Sequential(nn.Linear(2 * hidden + pose_features, hidden), nn.SiLU(), nn.Linear(hidden, 1))

    def forward(self, batch):
        h, x = self.embedding(batch.x).float(), batch.pos
        for layer in self.layers:
            h, x = layer(h, x, batch.edge_index)
        pooled = readout.ligand_mean_max(h.float(), batch.is_ligand, batch.batch, readout.graph_count(batch))
        pose = torch.log1p(batch.pose_features.float().clamp_min(0.0))
        return self.head(torch.cat([pooled, pose], dim=-1)).squeeze(-1).float()


# ---------------------------------------------------------------------------- PECAN variants (levers)


class ConcatMessageLayer(egnn.EGNNLayer):
    """Lever undone: one concatenation [h_i, h_j, radial, a_ij] per edge through the whole first linear map."""

    def message(self, h, edge_index, edge_type, radial):
        source, target = edge_index[0], edge_index[1]
        distance_features = radial[:, : self.radial_size]  # without the edge-type one-hot
        embedded = self.edge_type_embedding(edge_type).float()
        features = torch.cat([h[target], h[source], distance_features, embedded], dim=-1)
        message = self.edge_mlp(features)
        if self.gate is not None:
            message = message * torch.sigmoid(self.gate(message))
        return message


class PerLayerGeometry(egnn.EGNNClassifier):
    """Lever undone: every layer recomputes distances and their expansion."""

    def shared_geometry(self, pos, edge_index, edge_type):
        return None


def old_module(rev: str):
    """model/egnn.py as of git revision ``rev``, imported under another name."""
    source = subprocess.run(
        ["git", "show", f"{rev}:model/egnn.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "egnn_old.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("egnn_old", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # PyG's MessagePassing looks its module up there
    spec.loader.exec_module(module)
    return module


def model_factories(args) -> dict:
    """name -> function(update_coords) returning a freshly seeded model."""
    sizes = egnn.input_sizes()
    common = dict(hidden=args.hidden, layers=args.layers, attention=True, cutoff=4.5)
    factories = {
        "textbook": lambda coords: TextbookClassifier(
            sizes["in_features"], sizes["pose_features"], args.hidden, args.layers, coords
        ),
        "pecan": lambda coords: egnn.EGNNClassifier(**sizes, **common, update_coords=coords),
    }
    if args.levers:

        def concat(coords):
            model = egnn.EGNNClassifier(**sizes, **common, update_coords=coords)
            for layer in model.layers:
                layer.__class__ = ConcatMessageLayer
            return model

        factories["pecan_concat_first_linear"] = concat
        factories["pecan_geometry_per_layer"] = lambda coords: PerLayerGeometry(**sizes, **common, update_coords=coords)
    if args.old_rev:
        old = old_module(args.old_rev)
        factories[f"pecan@{args.old_rev[:7]}"] = lambda coords: old.EGNNClassifier(**common, update_coords=coords)
    return factories


# ---------------------------------------------------------------------------- timing


def sync(device: torch.device) -> None:
    """Wait for queued device work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_step(model, optimizer, batch, amp: str, device: torch.device) -> torch.Tensor:
    """One training step: forward, BCE loss, backward, AdamW."""
    with amp_context(device, amp):
        logits = model(batch)
    loss = F.binary_cross_entropy_with_logits(logits.float(), batch.y.float())
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def prepare(factory, coords: bool, mode: str, device: torch.device):
    """Seeded model (compiled for the compile mode), its optimizer and AMP setting."""
    torch.manual_seed(0)
    raw = factory(coords).to(device)
    model = torch.compile(raw, dynamic=True) if mode.endswith("compile") else raw
    return model, torch.optim.AdamW(raw.parameters(), lr=1e-3), "off" if mode == "fp32" else "bf16"


def reorder_edges(batch: Batch, order: str, seed: int = 1) -> Batch:
    """The same graphs with their edge list in ``order`` (the edge set, hence the model's output, is unchanged)."""
    source, target = batch.edge_index
    if order == "target":
        permutation = torch.argsort(target * batch.num_nodes + source)
    elif order == "source":
        permutation = torch.argsort(source * batch.num_nodes + target)
    else:
        permutation = torch.randperm(source.numel(), generator=torch.Generator().manual_seed(seed))
    out = batch.clone()
    out.edge_index, out.edge_type = batch.edge_index[:, permutation].contiguous(), batch.edge_type[permutation]
    return out


def time_table(args, batches: dict[str, Batch], device: torch.device) -> dict:
    """Warm up every configuration, then time them interleaved; medians and ratios."""
    factories = model_factories(args)
    runs = {}
    for name, factory in factories.items():
        for coords in args.coords:
            for mode in args.modes:
                if mode != "fp32" and name not in ("textbook", "pecan"):
                    continue  # levers and old revisions are compared in fp32 only
                for order, batch in batches.items():
                    key = f"{name}|coords_{coords}|{mode}|{order}"
                    model, optimizer, amp = prepare(factory, coords == "on", mode, device)
                    start = time.perf_counter()
                    for _ in range(2):
                        train_step(model, optimizer, batch, amp, device)
                    sync(device)
                    runs[key] = {
                        "state": (model, optimizer, amp),
                        "batch": batch,
                        "warmup_s": time.perf_counter() - start,
                        "step_s": [],
                    }
                    print(f"warm-up {key:<55} {runs[key]['warmup_s']:6.1f} s", flush=True)
    for round_index in range(args.repeats):
        for key, run in runs.items():
            model, optimizer, amp = run["state"]
            batch = run["batch"]
            sync(device)
            start = time.perf_counter()
            for _ in range(args.steps):
                train_step(model, optimizer, batch, amp, device)
            sync(device)
            run["step_s"].append((time.perf_counter() - start) / args.steps)
        print(f"round {round_index + 1}/{args.repeats} done", flush=True)
    results = {}
    for key, run in runs.items():
        name, coords, mode, order = key.split("|")
        median = statistics.median(run["step_s"])
        results[key] = {
            "model": name,
            "coords": coords,
            "mode": mode,
            "edge_order": order,
            "median_step_s": median,
            "step_s": run["step_s"],
            "warmup_s": run["warmup_s"],
        }
    for key, result in results.items():
        same = f"|{result['coords']}|{result['mode']}|{result['edge_order']}"
        textbook = results.get("textbook" + same)
        fp32 = results.get(f"{result['model']}|{result['coords']}|fp32|{result['edge_order']}")
        result["vs_textbook"] = textbook["median_step_s"] / result["median_step_s"] if textbook else None
        result["vs_fp32"] = fp32["median_step_s"] / result["median_step_s"] if fp32 else None
    return results


def print_table(results: dict) -> None:
    """Markdown table of the timed configurations."""
    print("| model | coords | mode | edges | median ms/step | steps/s | vs textbook | vs fp32 | warm-up s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for result in results.values():
        ratio = "-" if result["vs_textbook"] is None else f"{result['vs_textbook']:.2f}x"
        fp32 = "-" if result["vs_fp32"] is None else f"{result['vs_fp32']:.2f}x"
        print(
            f"| {result['model']} | {result['coords']} | {result['mode']} | {result['edge_order']} | "
            f"{1000 * result['median_step_s']:.1f} | "
            f"{1 / result['median_step_s']:.1f} | {ratio} | {fp32} | {result['warmup_s']:.1f} |"
        )


def demo_model_stage(args, device: torch.device) -> dict:
    """The demo model's steps/s (and on CUDA peak memory) per batch size, then (CUDA) the largest batch."""
    config = config_module.load(args.config)
    factory = lambda coords: egnn.build(config.model, egnn.input_sizes())  # noqa: E731
    out = {"model": dataclass_dict(config.model), "batches": {}}
    batches = {
        graphs: radius_graph_batch(graphs, args.atoms, args.edges_per_atom).to(device) for graphs in args.demo_batches
    }
    for mode in args.modes:
        model, optimizer, amp = prepare(factory, False, mode, device)
        for graphs, batch in batches.items():
            for _ in range(2):
                train_step(model, optimizer, batch, amp, device)
            sync(device)
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            start = time.perf_counter()
            for _ in range(args.steps * args.repeats):
                train_step(model, optimizer, batch, amp, device)
            sync(device)
            seconds = (time.perf_counter() - start) / (args.steps * args.repeats)
            peak = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None
            out["batches"][f"{graphs}|{mode}"] = {"steps_per_s": 1 / seconds, "peak_mib": peak}
            print(
                f"| demo model | batch {graphs} | {mode} | {1 / seconds:.1f} steps/s | peak "
                f"{'-' if peak is None else f'{peak:.0f}'} MiB |",
                flush=True,
            )
    if device.type == "cuda":
        out["largest_batch"] = largest_batch(args, factory, device)
    return out


def largest_batch(args, factory, device: torch.device) -> dict:
    """Double the batch (fp32 and bf16 eager) until a training step runs out of memory."""
    found = {}
    for mode in ("fp32", "bf16"):
        model, optimizer, amp = prepare(factory, False, mode, device)
        graphs, fits = args.demo_batches[-1], 0
        while graphs <= args.largest_up_to:
            try:
                batch = radius_graph_batch(graphs, args.atoms, args.edges_per_atom).to(device)
                train_step(model, optimizer, batch, amp, device)
                sync(device)
                fits, graphs = graphs, graphs * 2
            except torch.cuda.OutOfMemoryError:
                break
            finally:
                batch = None
                optimizer.zero_grad(set_to_none=True)
                torch.cuda.empty_cache()
        found[mode] = {"graphs": fits, "atoms": fits * args.atoms}
        print(f"largest batch that fits ({mode}): {fits} graphs = {fits * args.atoms} atoms", flush=True)
    return found


def dataclass_dict(value) -> dict:
    """A config section as a plain dict."""
    import dataclasses

    return dataclasses.asdict(value)


def main(argv=None) -> int:
    """Time the configurations; on CUDA also the demo model stage; write JSON."""
    args = parse_args(argv)
    device = torch.device(args.device)
    torch.set_num_threads(args.threads)
    batch = radius_graph_batch(args.graphs, args.atoms, args.edges_per_atom).to(device)
    edges_per_atom = batch.edge_index.size(1) / batch.num_nodes
    print(
        f"{args.graphs} graphs x {args.atoms} atoms, {edges_per_atom:.1f} edges/atom, hidden {args.hidden}, "
        f"{args.layers} layers, {device}, {torch.get_num_threads()} threads",
        flush=True,
    )
    results = time_table(args, {order: reorder_edges(batch, order) for order in args.edge_order}, device)
    print_table(results)
    report = {
        "device": str(device),
        "threads": args.threads,
        "edges_per_atom": edges_per_atom,
        "argv": sys.argv[1:],
        "torch": torch.__version__,
        "results": results,
    }
    if device.type == "cuda":
        report["gpu"] = torch.cuda.get_device_name(device)
    if device.type == "cuda" or args.demo:
        report["demo_model"] = demo_model_stage(args, device)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
