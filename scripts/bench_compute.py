"""Compute benchmark: the demo model's training step in fp32 eager, bf16 autocast, and bf16 + torch.compile.

    python scripts/bench_compute.py --data /tmp/pecan-bench-compute --steps 30 --repeats 3 --out compute.json

Runs on CPU or CUDA (``--device cuda``). Batches come from packed synthetic shards (generated once), the
same batches for every mode. Modes are timed in interleaved rounds after warm-up (the compile warm-up,
i.e. the cold compile, is reported separately). Reports median seconds per step, steps/s, ratios to fp32
eager, peak memory (CUDA: max allocated; CPU: not separable per mode, omitted), and the loss after a
short identical training run per mode as a numerical sanity check.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from pecan import config as config_module  # noqa: E402
from pecan.data.loader import load_split_frames, make_dataset, prepare_packs  # noqa: E402
from pecan.synthetic import ensure_dataset  # noqa: E402
from pecan.train.trainer import amp_context, apply_compile  # noqa: E402

MODES = ("fp32", "bf16", "bf16_compile")


def parse_args(argv=None) -> argparse.Namespace:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "pecan-bench-compute"))
    parser.add_argument("--config", default=str(ROOT / "configs" / "demo.yaml"), help="model and graph settings")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batches", type=int, default=8, help="distinct batches cycled through")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per mode per round")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--out", default="")
    return parser.parse_args(argv)


def batches(args, config) -> list:
    """Fixed batches of the demo's graph settings."""
    ensure_dataset(args.data, n_shards=1, complexes_per_shard=8, seed=1, progress=False)
    data = config.data
    data.data_dir, data.train_csvs, data.train_fns, data.val_fraction = args.data, ["index.csv"], [], 0.0
    data.cache_dir = str(Path(args.data) / "packs")
    frame, _ = load_split_frames(data)
    dataset = make_dataset(data, frame, prepare_packs(data, [frame]))
    size = data.batch_size
    out = []
    for k in range(args.batches):
        batch = dataset.__getitems__(list(range(k * size, (k + 1) * size)))
        del batch.io_counts
        out.append(batch.to(args.device))
    return out


def build(mode: str, config, device: torch.device):
    """A fresh model (same seed) and optimizer for one mode."""
    from model import build_model

    torch.manual_seed(0)
    raw = build_model(config.model.name, config.model, nn_type=config.model.nn_type).to(device)
    model = apply_compile(raw, mode.endswith("compile"))
    optimizer = torch.optim.AdamW(raw.parameters(), lr=config.train.lr)
    return model, optimizer


def step(model, optimizer, batch, amp: str, device: torch.device) -> torch.Tensor:
    """One training step."""
    with amp_context(device, amp):
        logits = model(batch)
    loss = F.binary_cross_entropy_with_logits(logits.float(), batch.y.float())
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main(argv=None) -> int:
    """Warm up every mode, then time interleaved rounds."""
    args = parse_args(argv)
    device = torch.device(args.device)
    config = config_module.load(args.config)
    data = batches(args, config)
    state, results = {}, {}
    for mode in args.modes:
        model, optimizer = build(mode, config, device)
        amp = "off" if mode == "fp32" else "bf16"
        start = time.perf_counter()
        for batch in data:  # every batch size once: compile sees the shapes it will meet
            step(model, optimizer, batch, amp, device)
        sync(device)
        warm = time.perf_counter() - start
        state[mode] = (model, optimizer, amp)
        results[mode] = {"warmup_s": warm, "step_s": [], "peak_mb": None}
        print(f"{mode:<13} warm-up {warm:6.1f}s ({len(data)} steps)", flush=True)
    for _ in range(args.repeats):
        for mode in args.modes:
            model, optimizer, amp = state[mode]
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            sync(device)
            start = time.perf_counter()
            for k in range(args.steps):
                step(model, optimizer, data[k % len(data)], amp, device)
            sync(device)
            results[mode]["step_s"].append((time.perf_counter() - start) / args.steps)
            if device.type == "cuda":
                results[mode]["peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
    for mode in args.modes:
        model, optimizer, amp = state[mode]
        results[mode]["final_loss"] = float(step(model, optimizer, data[0], amp, device))
    base = statistics.median(results[args.modes[0]]["step_s"])
    print("| mode | median s/step | steps/s | vs first mode | peak MiB | warm-up s | loss after run |")
    print("|---|---|---|---|---|---|---|")
    for mode in args.modes:
        median = statistics.median(results[mode]["step_s"])
        results[mode]["median_step_s"] = median
        peak = results[mode]["peak_mb"]
        print(f"| {mode} | {median:.4f} | {1 / median:.1f} | {base / median:.2f}x | "
              f"{'-' if peak is None else f'{peak:.0f}'} | {results[mode]['warmup_s']:.1f} | "
              f"{results[mode]['final_loss']:.4f} |")
    if args.out:
        Path(args.out).write_text(json.dumps({"device": str(device), "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
