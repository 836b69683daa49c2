"""The GPU check in one command: the compute table, short real training runs, peak memory, one JSON.

    python -m benchmarks.gpu_check --out gpu_check.json                 # on a GPU (about 5-7 min on one H100)
    bash scripts/gpu_check.sh                                            # the same, with carried wheels (below)
    python -m benchmarks.gpu_check --device cpu --quick --out check.json  # the CPU path, in seconds (tests)

Stages, each in its own process with its own time limit (a stage that fails or runs out of time is recorded
as such and the next one runs, so the JSON always comes back):

  env      torch, CUDA and GPU names, the code's git commit
  compute  benchmarks/bench_compute.py: PECAN's EGNN beside the textbook layer, fp32 / bf16 / bf16 + compile,
           coordinate updates off and on; then the demo model's steps/s and peak CUDA memory at batches of
           8/32/128 graphs of 400 atoms, and the largest batch that fits (fp32 and bf16)
  train    real training runs of ``configs/demo.yaml`` on a larger synthetic set (``--shards`` shards of 24
           complexes), one per mode (fp32, bf16, bf16 + compile), tracing on: per epoch the wall time,
           samples/s, the data-wait share, CUDA peak memory (the trainer's own epochs.jsonl figures), and
           how many trace files were written (0 where the native dftracer package is missing)

The whole check stays inside ``--budget-s`` (default 450 s, under the 8 minutes a lent GPU is sized for): each
stage gets what is left of it, the training runs share theirs. ``--quick`` shrinks every stage to seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN_MODES = {"fp32": ('"off"', False), "bf16": ("bf16", False), "bf16_compile": ("bf16", True)}


def parse_args(argv=None) -> argparse.Namespace:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", help="cuda (the check) or cpu (its own test)")
    parser.add_argument("--out", default="gpu_check.json", help="the one JSON written")
    parser.add_argument("--work", default="", help="scratch folder (data, runs); default: a temporary one")
    parser.add_argument("--budget-s", type=float, default=450.0, help="the whole check's time limit")
    parser.add_argument("--shards", type=int, default=16, help="synthetic shards for the training runs")
    parser.add_argument("--epochs", type=int, default=3, help="epochs per training run")
    parser.add_argument("--modes", nargs="+", default=list(TRAIN_MODES), choices=list(TRAIN_MODES))
    parser.add_argument("--stages", nargs="+", default=["env", "compute", "train"], choices=["env", "compute", "train"])
    parser.add_argument("--quick", action="store_true", help="tiny sizes everywhere (the CPU test)")
    return parser.parse_args(argv)


def run_stage(command: list[str], seconds: float, log: Path) -> dict:
    """Run ``command`` from the repository root for at most ``seconds``; its output goes to ``log``."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    start = time.perf_counter()
    with log.open("w") as out:
        try:
            code = subprocess.run(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=seconds)
            status = "ok" if code.returncode == 0 else f"failed (exit {code.returncode})"
        except subprocess.TimeoutExpired:
            status = f"timed out after {seconds:.0f} s"
    tail = log.read_text(errors="replace").splitlines()[-15:]
    return {"status": status, "seconds": time.perf_counter() - start, "command": command[1:], "log_tail": tail}


def environment(device: str) -> dict:
    """What ran the check."""
    import torch

    found = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "host": platform.node(),
        "cpus": os.cpu_count(),
    }
    if device == "cuda" and torch.cuda.is_available():
        properties = torch.cuda.get_device_properties(0)
        found.update(gpu=properties.name, gpu_memory_gib=properties.total_memory / 2**30)
        found["multiprocessors"] = properties.multi_processor_count
    try:
        found["dftracer"] = __import__("importlib.metadata").metadata.version("dftracer")
    except Exception:  # the native package is optional: no traces then
        found["dftracer"] = None
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    found["commit"] = commit.stdout.strip() or None
    return found


def compute_stage(args, work: Path, seconds: float) -> dict:
    """bench_compute's table (and on CUDA its demo-model stage with peak memory) in a child process."""
    out = work / "compute.json"
    command = [sys.executable, "-m", "benchmarks.bench_compute", "--device", args.device, "--out", str(out)]
    if args.quick:
        command += ["--graphs", "2", "--atoms", "60", "--steps", "1", "--repeats", "1", "--threads", "1"]
        command += ["--modes", "fp32", "bf16", "--coords", "off", "--demo", "--demo-batches", "2"]
    else:
        command += ["--steps", "5", "--repeats", "3", "--largest-up-to", "8192"]
    result = run_stage(command, seconds, work / "compute.log")
    if out.exists():
        result["table"] = json.loads(out.read_text())
    return result


def epoch_figures(run_dir: Path) -> list[dict]:
    """The figures of each epoch record of a run (the trainer's own)."""
    path = run_dir / "epochs.jsonl"
    if not path.exists():
        return []
    keep = ("epoch", "wall_s", "samples_per_s", "data_wait_share", "data_wait_s", "forward_s", "backward_s")
    rows = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if "epoch" not in record or "wall_s" not in record:
            continue  # a stop marker
        row = {key: record.get(key) for key in keep}
        peaks = (record.get("ranks") or {}).get("cuda_peak_mb") or [None]
        row["cuda_peak_mb"] = None if None in peaks else max(peaks)
        row["val_auc"] = record.get("val_auc")
        rows.append(row)
    return rows


def train_stage(args, work: Path, seconds: float) -> dict:
    """Real training runs, one per mode, on a synthetic set generated once (its time recorded apart)."""
    data = work / "data"
    shards = 2 if args.quick else args.shards
    generate = [sys.executable, "-m", "pecan", "synth", "--out", str(data), "--shards", str(shards)]
    generate += ["--complexes-per-shard", "4" if args.quick else "24", "--no-progress"]
    started = time.perf_counter()
    result = {"generate": run_stage(generate, seconds / 3, work / "synth.log"), "runs": {}}
    for index, mode in enumerate(args.modes):
        left = seconds - (time.perf_counter() - started)
        share = left / (len(args.modes) - index)
        if share < 5:
            result["runs"][mode] = {"status": "not run: no time left"}
            continue
        amp, compile_on = TRAIN_MODES[mode]
        run_dir = work / f"run_{mode}"
        command = [sys.executable, "-m", "pecan", "train", str(ROOT / "configs" / "demo.yaml")]
        for key, value in (
            ("data.data_dir", data),
            ("synthetic.enabled", "false"),
            ("train.out_dir", run_dir),
            ("train.device", args.device),
            ("train.amp", amp),
            ("train.compile", str(compile_on).lower()),
            ("train.epochs", 1 if args.quick else args.epochs),
            ("trace.enabled", "true"),
            ("train.plots", "false"),
        ):
            command += ["--set", f"{key}={value}"]
        run = run_stage(command, share, work / f"train_{mode}.log")
        run["epochs"] = epoch_figures(run_dir)
        later = run["epochs"][1:] or run["epochs"]
        if later:
            run["steady_samples_per_s"] = statistics.median(e["samples_per_s"] for e in later)
            run["steady_data_wait_share"] = statistics.median(e["data_wait_share"] for e in later)
        traces = run_dir / "traces"
        run["trace_files"] = len(list(traces.glob("*"))) if traces.exists() else 0
        result["runs"][mode] = run
    return result


def main(argv=None) -> int:
    """Run the stages inside the budget; write the JSON (also after a failed stage)."""
    args = parse_args(argv)
    started = time.perf_counter()
    work = Path(args.work or tempfile.mkdtemp(prefix="pecan-gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    report: dict = {"argv": sys.argv[1:] if argv is None else list(argv), "device": args.device}
    out = Path(args.out)

    def left() -> float:
        return args.budget_s - (time.perf_counter() - started)

    def write() -> None:
        report["total_s"] = time.perf_counter() - started
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(report, indent=1, default=str))
        os.replace(tmp, out)

    if "env" in args.stages:
        report["env"] = environment(args.device)
        if args.device == "cuda" and "gpu" not in report["env"]:
            report["error"] = "no CUDA device visible to torch"
            write()
            print(f"gpu_check: {report['error']}; wrote {out}", file=sys.stderr)
            return 1
        write()
    if "compute" in args.stages:
        train_reserve = 0.55 if "train" in args.stages else 0.0
        report["compute"] = compute_stage(args, work, max(left() * (1 - train_reserve), 10.0))
        write()
        print(f"compute: {report['compute']['status']} ({report['compute']['seconds']:.0f} s)", flush=True)
    if "train" in args.stages:
        report["train"] = train_stage(args, work, max(left() - 5.0, 10.0))
        write()
        for mode, run in report["train"]["runs"].items():
            print(
                f"train {mode}: {run['status']}, steady {run.get('steady_samples_per_s', 0):.0f} samples/s, "
                f"data wait {run.get('steady_data_wait_share', 0):.1%}, {run.get('trace_files', 0)} trace files",
                flush=True,
            )
    failed = [name for name in ("compute",) if name in report and report[name]["status"] != "ok"]
    failed += [f"train {m}" for m, r in report.get("train", {}).get("runs", {}).items() if r["status"] != "ok"]
    print(f"gpu_check: wrote {out} in {report['total_s']:.0f} s; " + (f"not ok: {failed}" if failed else "all ok"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
