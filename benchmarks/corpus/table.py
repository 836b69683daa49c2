"""One Markdown row per results JSON of the corpus benchmark: the model, the docking score and each peer on
the same poses, with the paired top-1 intervals.

    python benchmarks/corpus/table.py benchmarks/corpus/results/c93_recipe.json [...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HEADER = (
    "| recipe (tag) | complexes / poses | model top-1 | Vina top-1 | GNINA top-1 | GNINA default2018 top-1 | ceiling "
    "| top-3 model / Vina / GNINA | AUC model / Vina / GNINA | model - Vina (pp) | model - GNINA (pp) |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def _rate(item: dict, n: int) -> str:
    return f"{item['hits']}/{n} ({100 * item['rate']:.0f}% [{100 * item['ci95'][0]:.0f}, {100 * item['ci95'][1]:.0f}])"


def _diff(item: dict | None) -> str:
    if item is None:
        return "-"
    return f"{100 * item['mean']:+.1f} [{100 * item['ci95'][0]:+.1f}, {100 * item['ci95'][1]:+.1f}]"


def row(result: dict) -> str:
    """The pooled figures of one run."""
    p = result["pooled"]
    n = p["complexes"]
    peers = result.get("peers", [])

    def peer(key: str, name: str) -> str:
        return _rate(p[f"{name}_{key}"], n) if name in peers else "-"

    top3 = [p["model_top3"]["hits"], p["docking_top3"]["hits"]]
    auc = [f"{p['model_auc']:.2f}", f"{p['docking_auc']:.2f}"]
    if "gnina" in peers:
        top3.append(p["gnina_top3"]["hits"])
        auc.append(f"{p['gnina_auc']:.2f}")
    return (
        f"| {' '.join(result['overrides']) or 'configs/redock.yaml'} ({result['tag']}) | {n} / {p['poses']} "
        f"| {_rate(p['model_top1'], n)} | {_rate(p['docking_top1'], n)} | {peer('top1', 'gnina')} "
        f"| {peer('top1', 'gnina2018')} | {_rate(p['ceiling'], n)} | {' / '.join(map(str, top3))} "
        f"| {' / '.join(auc)} | {_diff(p['top1_difference'])} | {_diff(p.get('top1_difference_vs_gnina'))} |"
    )


def main(argv=None) -> int:
    """Print the table."""
    print(HEADER)
    for path in map(Path, argv if argv is not None else sys.argv[1:]):
        print(row(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
