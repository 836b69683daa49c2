"""The shipped model's card (pecan/pretrained/MODEL_CARD.md): what it was trained on, with which teacher,
its exclusions, figures and limits, and its checkpoint's config verbatim as a JSON block a test compares."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

from pecan.engine.state import CheckpointState

CONFIG_BLOCK = re.compile(r"```json\n(.*?)\n```", re.S)


def card_config(state: CheckpointState) -> dict[str, Any]:
    """The part of a checkpoint its model card repeats verbatim."""
    return {
        "model_config": state.model_config,
        "sample_settings": state.sample_settings,
        "training_data": state.training_data,
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


def _auc(value) -> str:
    return f" (validation AUC of the chosen epoch {value:.3f})" if isinstance(value, (int, float)) else ""


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
    weights = results.get("docking_weights")
    if weights:
        chosen = ", ".join(f"{w:g}" for w in weights.values())
        lines += [
            "",
            "PECAN's ranking here is its consensus with the docking score (`--docking-weight`), each held-out fold's "
            f"weight chosen on the other folds' poses ({chosen}); its pose AUC is the model score's, pooled over every "
            "pose of every complex (it also rewards scoring one ligand's poses above another's; `pecan score` prints "
            "the AUC within each ligand beside it, and the held-out per-pose scores behind this table are not "
            "committed, so that figure is not given here).",
        ]
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


def trained_on(state: CheckpointState) -> dict[str, Any]:
    """What the checkpoint itself records of its training data: complexes and poses trained on, complexes held
    out to choose the epoch, the validation AUC of the chosen epoch."""
    record = state.training_data or {}
    split = state.complexes or {}
    return {
        "complexes": int(record.get("complexes") or len(split.get("train") or [])),
        "poses": int(record.get("poses") or 0),
        "held_out": len(split.get("val") or []),
        "best_auc": state.best_auc,
    }


TEACHER_NOTE = """\
- Training targets: a teacher's score of every docked pose, not the RMSD label (the crystal pose, which the
  teacher never scored, keeps its label): GNINA 1.0's default CNN ensemble's pose score (`CNNscore`), computed
  with gninatorch 0.0.2 (MIT licence), which ships GNINA's CNN weights in PyTorch form
  (`studies/peers/results/corpus_gnina.csv`, column `{column}`; docs/distillation.md). GNINA is distributed
  under GPL-2.0 and Apache-2.0 (dual licence). Its scores were training targets only: this checkpoint holds
  none of GNINA's weights, and scoring needs no GNINA."""
"""The card's note on a teacher (ship.py --teacher); ``{column}`` is the teacher's score column."""


def _bullet(text: str) -> str:
    """``text`` as a card bullet wrapped to the card's width."""
    return textwrap.fill(text, width=114, subsequent_indent="  ", break_on_hyphens=False)


def _docking_note(state: CheckpointState, score_property: str, weight: float) -> str:
    """How the model and `pecan score` use the docking score: a model input, a consensus, or neither."""
    if (state.model_config or {}).get("use_docking_score", False):
        return (
            f"- The docking score (SD property `{score_property}`, Vina kcal/mol) is a model input: poses without it "
            "cannot be scored."
        )
    if weight:
        return _bullet(
            "- The model does not read the docking score. `pecan score` ranks each ligand's poses by its consensus "
            f"with it (`--docking-weight`, shipped weight {weight:g} in `shipped.json`: z(logit) + {weight:g} "
            f"z(-docking score) over the ligand's poses; docs/scoring.md), from the SD property `{score_property}` "
            "(Vina kcal/mol): poses without it are refused unless scored with `--docking-weight 0` (the model alone)."
        )
    return "- The model does not read the docking score: poses are scored from their structure alone."


def _score_meaning(state: CheckpointState, weight: float) -> str:
    """What a score depends on: the other poses of its ligand when the model reads the docking score."""
    if (state.model_config or {}).get("use_docking_score", False):
        return """\
- A score ranks the poses of one ligand against each other. The model reads each pose's docking score and its
  gap to the best docking score among the poses of its ligand scored together, so a score depends on which
  poses are scored with it: a subset without the best-docked pose, or one pose alone, gets other scores (the
  subset's best is taken as the best). Score all docked poses of a ligand together, one ligand per group
  (`pecan score` groups a multi-ligand SDF by molecule by default; docs/scoring.md)."""
    consensus = (
        " The rank (`pecan_rank`, and `pecan_consensus`) does depend on them: the consensus standardises the "
        "model's logit and the docking score over the poses of a ligand scored together, so score all docked "
        "poses of a ligand together, one ligand per group (`pecan score` groups a multi-ligand SDF by molecule by "
        "default; docs/scoring.md)."
        if weight
        else ""
    )
    return _bullet(
        "- A score (`pecan_score`, 0 to 1) is the model's for one pose from its structure alone, not a calibrated "
        "probability (near-native poses may score below 0.5: read it as a ranking within the ligand): it does not "
        f"depend on the other poses scored with it.{consensus} Scores rank the poses of one ligand; they are not "
        "comparable across ligands."
    )


def card_text(
    checkpoint: Path,
    excluded,
    results: dict | None,
    recipe: str,
    overrides: list[str],
    teacher: str | None = None,
    docking_weight: float = 0.0,
) -> str:
    """The model card of ``checkpoint``: data, teacher, exclusions, splits, figures, limits, and its config block.
    Every count of its training data comes from the checkpoint's own record (``trained_on``), so the two agree;
    ``teacher`` is the teacher's score column when it was trained on one, ``docking_weight`` the shipped
    consensus weight."""
    state = CheckpointState.load(checkpoint)
    data = trained_on(state)
    reserved = excluded[excluded["reason"].str.startswith("reserved")]
    parameters = sum(int(v.numel()) for v in state.model.values())
    size = checkpoint.stat().st_size / 1e6
    score_property = state.docking_score_record.get("property") or "docking_score"
    teacher_note = TEACHER_NOTE.format(column=teacher) + "\n" if teacher else ""
    ranked = (
        f", ranking each ligand's poses by its consensus\nwith the docking score (weight {docking_weight:g}, below)"
        if docking_weight
        else ""
    )
    return f"""# PECAN pretrained rescorer: `{checkpoint.name}`

An EGNN ({parameters:,} parameters, {size:.2f} MB) that scores docked protein–ligand poses: higher for a pose
nearer the crystal pose (trained towards poses within 2 A heavy-atom RMSD; not a calibrated probability).
`pecan score --receptor R.pdb --poses P.sdf
--out S.sdf` uses it when no checkpoint is given{ranked}.

## Training data
- Trained on {data["complexes"]} public crystal complexes of `studies/corpus` ({data["poses"]:,} poses; PoseBusters
  benchmark set, Astex diverse set, CASF-2013 core set; provenance per file in `studies/corpus/sources.csv`), each
  ligand redocked into its own receptor with `pecan redock` (AutoDock Vina, from an RDKit conformer, never the
  crystal geometry). {data["held_out"]} more docked complexes were held out (`data.val_fraction`) to choose the
  epoch{_auc(data["best_auc"])}; they were not trained on.
- Recipe: `{recipe}`{" with " + ", ".join(f"`{o}`" for o in overrides) if overrides else ""}.
{teacher_note}{_docking_note(state, score_property, docking_weight)}
- Receptors (`studies/corpus/README.md`, Rules): whole residues within 16 A of the crystal ligand; waters,
  alternate locations after the first and crystallisation additives dropped; metal ions and cofactors kept;
  hydrogens added by Open Babel (`obabel -h`) where the source had none, so every training receptor had
  hydrogens. `pecan score` does the same to a receptor without hydrogens where Open Babel is installed (and
  warns where it is not, or with `--receptor-hydrogens keep`): scored without them, the model's scores move
  (by up to 0.04 on ProLIF's Vina example, where no score rises).

## What a score means
{_score_meaning(state, docking_weight)}
- A pose with a ligand heavy atom inside the receptor (within 2.0 A of a receptor heavy atom, 1.5 A of a metal)
  is flagged `pecan_clash` and ranked after every pose of its ligand without one: the model itself does not see
  that such a pose cannot exist (a Vina pose of ProLIF's example moved into the protein scores 0.127, above
  four of the nine real poses, and its consensus is above six of them).

## Exclusions
{len(excluded)} candidates are left out (`studies/corpus/excluded.csv`), {len(reserved)} of them as
**reserved external test proteins** (TYK2, thrombin, MCL1, PTP1B, HIF-2α, PDE2A: by PDB entry and by >= 40%
sequence identity of a binding chain). Figures of this model on those proteins are external tests; nothing
about them was used to train, tune or select it.

## Splits and figures
The shipped model is trained on the corpus complexes docked when it was built, less the share held out to choose
its epoch (above); its expected performance is measured by the same recipe under 5-fold cluster-split
cross-validation (single-linkage protein clusters at 30% sequence identity, so no
test complex shares that identity with a training one).

{_figures(results)}
GNINA's training data overlaps these PDB entries, so its figures here are optimistic. The shipped checkpoint
itself trained on the corpus's PoseBusters, Astex and CASF-2013 complexes (all but those held out to choose its
epoch): its own scores of those sets are in-sample, not a benchmark; the figures above are the recipe's
cluster-split folds, each fold's model scoring only complexes it never trained on.

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
