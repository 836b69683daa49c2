"""Train every model variant on the same split for the same epochs and tabulate AUC, top-1 and s/epoch.

    python -m benchmarks.compare_variants --epochs 3 --json benchmarks/variants_demo.json

Each variant runs ``main_app.py`` on its config (egnn: configs/demo.yaml, others: configs/<name>.yaml) with
the same data overrides, seed and epochs, one after the other, into ``<out>/<name>``. The table reports the
last epoch's held-out figures, the mean wall time of the epochs after the first (all of them when there is
one), and what chance gives on the same held-out complexes: AUC 0.5, and for top-1 the mean share of
near-native docked poses per complex that has one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from pecan import config as config_module
from pecan.report import read_records

ROOT = Path(__file__).resolve().parents[1]

CONFIGS = {
    "egnn": "configs/demo.yaml",
    "sgcnn": "configs/sgcnn.yaml",
    "ggcnn": "configs/ggcnn.yaml",
    "cnn3d": "configs/cnn3d.yaml",
}


def top1_chance(config_path: str, overrides: list[str]) -> float:
    """Expected top-1 success of a random ranking on the held-out docked poses."""
    from pecan.data.loader import load_split_indexes

    config = config_module.load(ROOT / config_path, overrides)
    _, val = load_split_indexes(config.data)
    docked = val[~val["is_crystal"].astype(bool)]
    share = docked.groupby("complex_id")["label"].mean()
    return float(share[share > 0].mean())


def run_variant(name: str, overrides: list[str], out: Path, timeout: int) -> dict:
    """Train one variant; return its summary row."""
    run_dir = out / name
    settings = [*overrides, f"train.out_dir={run_dir}", "train.resume=never", "train.progress=false"]
    command = [sys.executable, "main_app.py", CONFIGS[name], *sum((["--set", s] for s in settings), [])]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    records = read_records(run_dir / "epochs.jsonl")
    steady = records[1:] or records
    last = records[-1]
    return {
        "variant": name,
        "config": CONFIGS[name],
        "epochs": len(records),
        "val_auc": last["val_auc"],
        "val_top1": last["val_top1"],
        "val_acc": last["val_acc"],
        "s_per_epoch": statistics.fmean(r["wall_s"] for r in steady),
        "samples_per_s": statistics.fmean(r["samples_per_s"] for r in steady),
        "total_s": time.perf_counter() - start,
    }


def markdown(rows: list[dict], chance: float) -> str:
    """The README table."""
    lines = [
        "| variant | config | epochs | val AUC | val top-1 | s/epoch | samples/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| `{row['variant']}` | `{row['config']}` | {row['epochs']} | {row['val_auc']:.3f} | "
            f"{row['val_top1']:.3f} | {row['s_per_epoch']:.1f} | {row['samples_per_s']:.1f} |"
        )
    lines.append(f"| chance | | | 0.500 | {chance:.3f} | | |")
    return "\n".join(lines)


def main(argv=None) -> int:
    """Run the variants, print the table, optionally write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=0, help="train.max_steps_per_epoch (0: full epochs)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        help="extra SECTION.KEY=VALUE applied to every variant (data.* keeps the split shared)",
    )
    parser.add_argument("--out", default="runs/compare", help="parent of the per-variant run directories")
    parser.add_argument("--json", default="", help="also write the rows and settings here")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds allowed per variant")
    args = parser.parse_args(argv)
    overrides = [f"train.epochs={args.epochs}", f"train.max_steps_per_epoch={args.max_steps}", *args.overrides]
    rows = []
    for name in args.variants:
        rows.append(run_variant(name, overrides, ROOT / args.out, args.timeout))
        print(
            f"{name}: AUC {rows[-1]['val_auc']:.3f}, top-1 {rows[-1]['val_top1']:.3f}, "
            f"{rows[-1]['s_per_epoch']:.1f} s/epoch",
            flush=True,
        )
    chance = top1_chance(CONFIGS["egnn"], args.overrides)
    table = markdown(rows, chance)
    print(table)
    if args.json:
        path = ROOT / args.json
        path.parent.mkdir(parents=True, exist_ok=True)
        arguments = sys.argv[1:] if argv is None else argv
        payload = {
            "command": "python -m benchmarks.compare_variants " + " ".join(arguments),
            "overrides": overrides,
            "top1_chance": chance,
            "rows": rows,
            "table": table,
        }
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(payload, indent=2))
        tmp.replace(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
