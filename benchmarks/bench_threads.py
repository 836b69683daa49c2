"""Intra-op threads per process on an idle and on a loaded node: the demo model's training steps/s at 1 and 2
threads, with no other work and with ``--busy`` processes spinning on the same cores.

    python -m benchmarks.bench_threads --out benchmarks/bench_threads.json
    python -m benchmarks.bench_threads --cpus 0 1 --busy 0 1 2     # a 2-core share of a larger node

Each measurement is a fresh interpreter (``--child``) that sets its thread count, builds the demo model
(``--config``, default configs/demo.yaml) and a batch of ``--graphs`` random pose-like graphs (bench_compute's
``radius_graph_batch``: ``--atoms`` atoms, ~14.7 edges per atom), warms up, then times training steps (forward,
BCE, backward, AdamW) for ``--seconds``. Busy processes are plain Python loops, started before the child and
stopped after it. Thread counts are interleaved over ``--repeats`` rounds and medians reported; the node's
1-minute load average before each round is recorded, since other work on a shared node is part of the result.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUSY_LOOP = "while True:\n    pass\n"


def parse_args(argv=None) -> argparse.Namespace:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 1], help="busy processes on the same cores")
    parser.add_argument("--cpus", type=int, nargs="*", default=[], help="pin everything to these CPUs")
    parser.add_argument("--config", default=str(ROOT / "configs" / "demo.yaml"))
    parser.add_argument("--graphs", type=int, default=8, help="graphs per batch (the demo's data.batch_size)")
    parser.add_argument("--atoms", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=8.0, help="timed seconds per measurement")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="")
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)  # internal: time N threads
    return parser.parse_args(argv)


def child(args) -> None:
    """Time the demo model's training steps at ``args.child`` threads; print one JSON line."""
    import torch

    from benchmarks.bench_compute import radius_graph_batch, train_step
    from model import egnn
    from pecan import config as config_module

    torch.set_num_threads(args.child)
    torch.manual_seed(0)
    config = config_module.load(args.config)
    model = egnn.build(config.model, egnn.input_sizes())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = radius_graph_batch(args.graphs, args.atoms, 14.7)
    for _ in range(3):
        train_step(model, optimizer, batch, "off", torch.device("cpu"))
    steps, start = 0, time.perf_counter()
    cpu0 = time.process_time()
    while time.perf_counter() - start < args.seconds:
        train_step(model, optimizer, batch, "off", torch.device("cpu"))
        steps += 1
    wall = time.perf_counter() - start
    share = (time.process_time() - cpu0) / (wall * args.child)
    print(json.dumps({"steps_per_s": steps / wall, "cpu_share": share, "threads": torch.get_num_threads()}))


def pinned(cpus: list[int]):
    """A preexec_fn pinning a child to ``cpus`` (None: no pinning)."""
    if not cpus:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


def measure(args, threads: int, busy: int) -> dict:
    """One child at ``threads`` threads while ``busy`` loops spin on the same cores."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads)}
    loops = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP], preexec_fn=pinned(args.cpus)) for _ in range(busy)]
    try:
        command = [sys.executable, "-m", "benchmarks.bench_threads", "--child", str(threads)]
        command += ["--config", args.config, "--graphs", str(args.graphs), "--atoms", str(args.atoms)]
        command += ["--seconds", str(args.seconds)]
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, preexec_fn=pinned(args.cpus), check=True
        )
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(args) -> dict:
    """Every (busy, threads) pair, interleaved over the rounds; medians."""
    runs: dict[str, dict] = {}
    for round_index in range(args.repeats):
        for busy in args.busy:
            for threads in args.threads:
                load = os.getloadavg()[0]
                result = measure(args, threads, busy)
                entry = runs.setdefault(f"busy{busy}|threads{threads}", {"busy": busy, "threads": threads})
                for key, value in (*result.items(), ("load_before", load)):
                    entry.setdefault(key + "_all", []).append(value)
                print(f"round {round_index + 1}: busy {busy}, {threads} thread(s): {result}", flush=True)
    for entry in runs.values():
        entry["steps_per_s"] = statistics.median(entry["steps_per_s_all"])
        entry["samples_per_s"] = entry["steps_per_s"] * args.graphs
        entry["cpu_share"] = statistics.median(entry["cpu_share_all"])
    return runs


def cpu_model() -> str:
    """The CPU's model name (lscpu's 'Model name')."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def main(argv=None) -> int:
    """Measure, print a table, write JSON."""
    args = parse_args(argv)
    if args.child:
        child(args)
        return 0
    runs = run(args)
    print(f"\n{cpu_model()}, {os.cpu_count()} CPUs, pinned to {args.cpus or 'all'}")
    print("| busy processes | threads | steps/s | samples/s | CPU share | load before (median) |")
    print("|---|---|---|---|---|---|")
    for entry in runs.values():
        load = statistics.median(entry["load_before_all"])
        print(
            f"| {entry['busy']} | {entry['threads']} | {entry['steps_per_s']:.2f} | {entry['samples_per_s']:.1f} | "
            f"{entry['cpu_share']:.0%} | {load:.1f} |"
        )
    if args.out:
        summary = {"cpu": cpu_model(), "cpus": os.cpu_count(), "pinned": args.cpus, "args": vars(args), "runs": runs}
        Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
