"""One Markdown row per results JSON of the corpus benchmark: the model, the docking score and each peer on
the same poses, with the paired top-1 intervals.

    python -m studies.corpus.table studies/corpus/results/c93_recipe.json [...]
    python -m studies.corpus.table --by-source studies/corpus/results/c608_base.json [...]

``--by-source``: per source of the corpus manifest (posebusters, astex, coreset2013), the top-1 of the model,
the docking score and each peer, and the ceiling; and on how many complexes the model's first pose and the
docking score's differ in outcome (model right where the docking score is wrong, and the reverse).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pandas as pd

MANIFEST = Path(__file__).resolve().parent / "manifest.csv"

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


def by_source(result: dict, sources: dict[str, str]) -> list[str]:
    """Lines of per-source top-1 counts (``sources``: complex -> source) and the model/docking disagreements."""
    rankers = ["model", "docking", *result.get("peers", [])]
    hits: dict[str, Counter] = {name: Counter() for name in [*rankers, "ceiling", "complexes"]}
    wins = losses = 0
    for fold in result["folds"].values():
        for complex_id, row_hits in fold["per_complex"].items():
            source = sources[complex_id]
            hits["complexes"][source] += 1
            hits["ceiling"][source] += row_hits["ceiling"]
            for name in rankers:
                hits[name][source] += row_hits[f"{name}_top1"]
            wins += row_hits["model_top1"] > row_hits["docking_top1"]
            losses += row_hits["model_top1"] < row_hits["docking_top1"]
    lines = [
        f"| source ({result['tag']}) | complexes | {' | '.join(rankers)} | ceiling |",
        "|---" * (len(rankers) + 3) + "|",
    ]
    for source in sorted(hits["complexes"]):
        counts = " | ".join(str(hits[name][source]) for name in [*rankers, "ceiling"])
        lines.append(f"| {source} | {hits['complexes'][source]} | {counts} |")
    lines.append(f"model right where the docking score is wrong: {wins}; the reverse: {losses}")
    return lines


def main(argv=None) -> int:
    """Print the table (or, with --by-source, the per-source tables)."""
    args = list(argv if argv is not None else sys.argv[1:])
    if args and args[0] == "--by-source":
        manifest = pd.read_csv(MANIFEST, dtype=str, keep_default_na=False)
        sources = dict(zip(manifest["complex_id"], manifest["source"]))
        for path in map(Path, args[1:]):
            print("\n".join(by_source(json.loads(path.read_text()), sources)))
        return 0
    print(HEADER)
    for path in map(Path, args):
        print(row(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
