"""The shipped pretrained model: `pecan score` uses it when no checkpoint is given.

``corpus_egnn.pt`` is a scoring-only checkpoint (model weights, model config, pinned sample settings, the
training-data record; no optimizer, scheduler or RNG state), trained by studies/corpus/ship.py on the
public redocked corpus of studies/corpus; ``MODEL_CARD.md`` beside it says on what, with which exclusions
and figures, and holds the checkpoint's config as a JSON block that a test compares with the checkpoint.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CHECKPOINT = HERE / "corpus_egnn.pt"
CARD = HERE / "MODEL_CARD.md"
# What scoring reads from a checkpoint; everything else (optimizer, scheduler, RNG, sampler) is training state.
SCORING_KEYS = (
    "model",
    "model_config",
    "config",
    "sample_settings",
    "feature_layout",
    "training_data",
    "complexes",
    "epoch",
    "config_digest",
    "best_auc",
    "metrics",
)
CONFIG_BLOCK = re.compile(r"```json\n(.*?)\n```", re.S)


def default_checkpoint() -> Path:
    """The shipped checkpoint; FileNotFoundError naming it when this installation lacks it."""
    if not CHECKPOINT.exists():
        raise FileNotFoundError(f"no shipped model at {CHECKPOINT}: give a checkpoint (RUN/checkpoints/best.pt)")
    return CHECKPOINT


def slim_checkpoint(source: Path, out: Path) -> Path:
    """A copy of ``source`` with the scoring keys only, written atomically."""
    import torch

    from pecan.runtime.fileio import atomic_path

    state = torch.load(source, map_location="cpu", weights_only=True)
    slim = {key: state[key] for key in SCORING_KEYS if key in state}
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        torch.save(slim, tmp)
    return out


def card_config(state: dict) -> dict[str, Any]:
    """The part of a checkpoint its model card repeats verbatim."""
    return {
        "model_config": state.get("model_config"),
        "sample_settings": state.get("sample_settings"),
        "training_data": state.get("training_data"),
    }


def config_in_card(text: str) -> dict[str, Any]:
    """The JSON block of a model card."""
    match = CONFIG_BLOCK.search(text)
    if match is None:
        raise ValueError("the model card has no ```json block")
    return json.loads(match.group(1))


def _rate(item: dict, complexes: int) -> str:
    return (
        f"{item['hits']}/{complexes} ({100 * item['rate']:.0f}% [{100 * item['ci95'][0]:.0f}, "
        f"{100 * item['ci95'][1]:.0f}])"
    )


def _figures(results: dict | None) -> str:
    if not results:
        return "No cluster-split figures were attached when this card was written (ship.py --results).\n"
    pooled = results["pooled"]
    n = pooled["complexes"]
    lines = [
        f"Cluster-split cross-validation (`studies/corpus`, recipe tag `{results['tag']}`), pooled over "
        f"{len(results['folds'])} folds, {n} complexes, {pooled['poses']} poses; 95% bootstrap intervals over "
        "complexes:",
        "",
        "| ranking | top-1 | top-3 | pose AUC |",
        "|---|---|---|---|",
        f"| PECAN (this recipe) | {_rate(pooled['model_top1'], n)} | {_rate(pooled['model_top3'], n)} "
        f"| {pooled['model_auc']:.2f} |",
        f"| docking score (Vina) | {_rate(pooled['docking_top1'], n)} | {_rate(pooled['docking_top3'], n)} "
        f"| {pooled['docking_auc']:.2f} |",
    ]
    for peer in results.get("peers", []):
        lines.append(
            f"| {peer} | {_rate(pooled[f'{peer}_top1'], n)} | {_rate(pooled[f'{peer}_top3'], n)} "
            f"| {pooled[f'{peer}_auc']:.2f} |"
        )
    lines.append(f"| ceiling (any near-native pose) | {_rate(pooled['ceiling'], n)} | | |")
    diff = pooled["top1_difference"]
    lines += [
        "",
        f"Top-1 difference PECAN - docking score: {100 * diff['mean']:+.1f} pp "
        f"[{100 * diff['ci95'][0]:+.1f}, {100 * diff['ci95'][1]:+.1f}].",
    ]
    for peer in results.get("peers", []):
        d = pooled[f"top1_difference_vs_{peer}"]
        lines.append(
            f"Top-1 difference PECAN - {peer}: {100 * d['mean']:+.1f} pp "
            f"[{100 * d['ci95'][0]:+.1f}, {100 * d['ci95'][1]:+.1f}]."
        )
    return "\n".join(lines) + "\n"


def card_text(checkpoint: Path, corpus: dict, results: dict | None, recipe: str, overrides: list[str]) -> str:
    """The model card of ``checkpoint``: data, exclusions, splits, figures, limits, and its config block."""
    import torch

    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    docked = corpus["docked"]
    poses = docked[docked["is_crystal"] == 0] if "is_crystal" in docked else docked
    excluded = corpus["excluded"]
    reserved = excluded[excluded["reason"].str.startswith("reserved")]
    parameters = sum(int(v.numel()) for v in state["model"].values())
    size = checkpoint.stat().st_size / 1e6
    score_property = ((state.get("training_data") or {}).get("docking_score") or {}).get("property") or "docking_score"
    return f"""# PECAN pretrained rescorer: `corpus_egnn.pt`

An EGNN ({parameters:,} parameters, {size:.2f} MB) that scores docked protein–ligand poses: the probability
that a pose is within 2 A heavy-atom RMSD of the crystal pose. `pecan score --receptor R.pdb --poses P.sdf
--out S.sdf` uses it when no checkpoint is given.

## Training data
- {poses["complex_id"].nunique()} public crystal complexes of `studies/corpus` (PoseBusters benchmark set, Astex
  diverse set, CASF-2013 core set; provenance per file in `studies/corpus/sources.csv`), each ligand
  redocked into its own receptor with `pecan redock` (AutoDock Vina, from an RDKit conformer, never the
  crystal geometry): {len(poses)} docked poses, {int(poses["label"].sum())} near-native.
- Recipe: `{recipe}`{" with " + ", ".join(f"`{o}`" for o in overrides) if overrides else ""}; best epoch by
  the AUC of the recipe's held-out share of complexes (`data.val_fraction`).
- The docking score (SD property `{score_property}`, Vina kcal/mol) is a model input: poses without it cannot be scored.

## Exclusions
{len(excluded)} candidates are left out (`studies/corpus/excluded.csv`), {len(reserved)} of them as
**reserved external test proteins** (TYK2, thrombin, MCL1, PTP1B, HIF-2α, PDE2A: by PDB entry and by >= 40%
sequence identity of a binding chain). Figures of this model on those proteins are external tests; nothing
about them was used to train, tune or select it.

## Splits and figures
The shipped model is trained on every corpus complex; its expected performance is measured by the same recipe
under 5-fold cluster-split cross-validation (single-linkage protein clusters at 30% sequence identity, so no
test complex shares that identity with a training one).

{_figures(results)}
GNINA's training data overlaps these PDB entries, so its figures here are optimistic.

## Do not use it for
- Binding affinity or ranking different ligands by potency: it scores poses of one ligand against each other.
- Poses from programs or protocols unlike Vina redocking without checking (a QuickVina 2 test is in
  BENCHMARKS.md); cross-docked receptors, apo structures, covalent ligands, peptides and nucleic acids were
  not in its training data.
- Claims about the reserved proteins beyond what an external test measures.

## Checkpoint config (verbatim from the checkpoint; a test compares them)

```json
{json.dumps(card_config(state), indent=1, sort_keys=True)}
```
"""
