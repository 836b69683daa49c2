"""ContactCounter (pecan.convert.contacts) against InteractionCounter (ProLIF) on the redocked corpus.

For each complex of ``studies/corpus/docked/manifest.csv`` (``--complexes`` of them, evenly spaced),
the pocket is cut as the converter cuts it (whole residues within 8 A of the crystal ligand or any pose)
and the crystal ligand and every pose, hydrogens added where they have none, are counted by both
counters. Every count of every molecule must agree. Reported: molecules compared, mismatches (each one
listed), per-pose milliseconds of both counters (``counts`` one pose at a time, and
``counts_for_coords`` for the poses as coordinate sets of one template), the per-pocket setup of both,
as medians over complexes, and the CPU.

    nice -n 5 python -m benchmarks.bench_contacts --complexes 0 --out benchmarks/bench_contacts.json

``--pocket-cut [--radius R]`` instead counts each pose (ContactCounter) in the converter's pocket and in a
pocket cut R A around that pose alone, and reports the poses whose counts differ.

    nice -n 5 python -m benchmarks.bench_contacts --pocket-cut --complexes 60 \
        --out benchmarks/bench_contacts_pocket_cut_8A.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parse_args(argv=None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docked", default=str(ROOT / "studies/corpus/docked"))
    parser.add_argument(
        "--complexes",
        type=int,
        default=60,
        help="N complexes with poses, evenly spaced over the manifest (ordered small ligands first); 0: all",
    )
    parser.add_argument(
        "--pocket-cut",
        action="store_true",
        help="instead: how the counts of each pose change when the pocket is cut around that pose alone",
    )
    parser.add_argument("--radius", type=float, default=8.0, help="--pocket-cut: the radius of that pocket")
    parser.add_argument("--out", default="")
    return parser.parse_args(argv)


def cpu_model() -> str:
    """lscpu's model name (the platform's processor string where lscpu is missing)."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor()
    names = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Model name")]
    return names[0] if names else platform.processor()


def complex_molecules(entry):
    """The pocket as the converter cuts it, and the crystal and pose molecules with hydrogens."""
    from pecan.convert import chemistry as chem
    from pecan.convert.complexes import with_hydrogens

    receptor = chem.read_receptor(entry.receptor)
    crystal = chem.read_ligands(entry.crystal_ligand)[0] if entry.crystal_ligand else None
    poses = [m for m in chem.read_ligands(entry.poses) if m is not None]
    ligands = [chem.heavy_positions(m) for m in [crystal, *poses] if m is not None]
    pocket = chem.pocket_submol(receptor, ligands, 8.0)
    crystal = with_hydrogens(crystal) if crystal is not None else None
    return pocket, crystal, [with_hydrogens(m) for m in poses]


class SameFailure(RuntimeError):
    """Both counters refused the complex the same way."""


def timed(step):
    """(result, seconds) of ``step()``."""
    start = time.perf_counter()
    result = step()
    return result, time.perf_counter() - start


def compare_complex(entry) -> dict:
    """Both counters on one complex: setup and per-molecule times, and every disagreement."""
    from pecan.convert.contacts import ContactCounter, topology_signature
    from pecan.convert.interactions import INTERACTION_MAP, InteractionCounter

    pocket, crystal, poses = complex_molecules(entry)
    try:
        reference, reference_setup = timed(lambda: InteractionCounter(pocket))
    except Exception as err:  # then ContactCounter must refuse the pocket as well
        try:
            ContactCounter(pocket)
        except type(err):
            raise SameFailure(f"both counters: {type(err).__name__}: {err}") from err
        raise
    counter, setup = timed(lambda: ContactCounter(pocket))
    molecules = ([("crystal", crystal)] if crystal is not None else []) + [
        (f"pose{k}", m) for k, m in enumerate(poses, start=1)
    ]
    row = {"complex_id": entry.complex_id, "poses": len(poses), "molecules": len(molecules), "mismatches": []}
    row["totals"] = dict.fromkeys(INTERACTION_MAP, 0.0)
    reference_seconds, seconds = [], []
    for name, mol in molecules:
        expected, spent = timed(lambda: reference.counts(mol))
        reference_seconds.append(spent)
        for attr, value in expected.items():
            row["totals"][attr] += value
        found, spent = timed(lambda: counter.counts(mol))
        seconds.append(spent)
        if found != expected:
            row["mismatches"].append({"molecule": name, "prolif": expected, "contacts": found})
    if poses and len({topology_signature(m) for m in poses}) == 1:
        fresh = ContactCounter(pocket)  # no topology cached yet: the batch pays its one matching
        coords = [m.GetConformer().GetPositions() for m in poses]
        batch, spent = timed(lambda: fresh.counts_for_coords(poses[0], coords))
        row["batch_ms_per_pose"] = spent / len(poses) * 1e3
        expected = [reference.counts(m) for m in poses]
        row["mismatches"] += [
            {"molecule": f"pose{k} (batch)", "prolif": e, "contacts": f}
            for k, (e, f) in enumerate(zip(expected, batch), start=1)
            if e != f
        ]
    row.update(
        prolif_setup_ms=reference_setup * 1e3,
        contacts_setup_ms=setup * 1e3,
        prolif_ms_per_pose=statistics.median(reference_seconds) * 1e3,
        contacts_ms_per_pose=statistics.median(seconds) * 1e3,
        pocket_atoms=pocket.GetNumAtoms(),
        ligand_atoms=poses[0].GetNumAtoms() if poses else 0,
    )
    return row


def pocket_cut_complex(entry, radius: float) -> dict:
    """Each pose counted in the converter's pocket (8 A around crystal and all poses) and in a pocket cut
    ``radius`` around that pose alone: how many poses' counts differ, per count."""
    from pecan.convert import chemistry as chem
    from pecan.convert.contacts import ContactCounter

    pocket, _, poses = complex_molecules(entry)
    receptor = chem.read_receptor(entry.receptor)
    shared = ContactCounter(pocket).counts_many(poses)
    alone = [ContactCounter(chem.pocket_submol(receptor, [chem.heavy_positions(m)], radius)).counts(m) for m in poses]
    changed = {attr: sum(a[attr] != b[attr] for a, b in zip(shared, alone)) for attr in shared[0]}
    return {
        "complex_id": entry.complex_id,
        "poses": len(poses),
        "poses_changed": changed,
        "any_changed": sum(a != b for a, b in zip(shared, alone)),
        "examples": [{"shared": a, "alone": b} for a, b in zip(shared, alone) if a != b][:2],
    }


def summarise(rows: list[dict], failed: list[dict]) -> dict:
    """Totals and medians over complexes."""

    def median(key):
        values = [r[key] for r in rows if key in r]
        return statistics.median(values) if values else None

    prolif_ms, contacts_ms = median("prolif_ms_per_pose"), median("contacts_ms_per_pose")
    return {
        "complexes": len(rows),
        "molecules_compared": sum(r["molecules"] for r in rows),
        "poses_compared": sum(r["poses"] for r in rows),
        "mismatches": sum(len(r["mismatches"]) for r in rows),
        "median_prolif_ms_per_pose": prolif_ms,
        "median_contacts_ms_per_pose": contacts_ms,
        "median_contacts_batch_ms_per_pose": median("batch_ms_per_pose"),
        "speedup_per_pose": prolif_ms / contacts_ms if prolif_ms and contacts_ms else None,
        "median_prolif_setup_ms": median("prolif_setup_ms"),
        "median_contacts_setup_ms": median("contacts_setup_ms"),
        "complexes_failed": failed,
        "counts_seen": {attr: sum(r["totals"][attr] for r in rows) for attr in rows[0]["totals"]} if rows else {},
    }


def pocket_cut(entries, radius: float, out: str) -> int:
    """The ``--pocket-cut`` report: poses whose counts depend on the poses the pocket was cut around."""
    rows, failed = [], []
    for entry in entries:
        try:
            rows.append(pocket_cut_complex(entry, radius))
        except Exception as err:  # a complex ProLIF refuses (fragmented residues) is listed, not fatal
            failed.append({"complex_id": entry.complex_id, "error": f"{type(err).__name__}: {str(err)[:200]}"})
    result = {
        "command": sys.argv,
        "radius": radius,
        "complexes": len(rows),
        "poses": sum(r["poses"] for r in rows),
        "poses_with_any_count_changed": sum(r["any_changed"] for r in rows),
        "poses_changed_per_count": {a: sum(r["poses_changed"][a] for r in rows) for a in rows[0]["poses_changed"]},
        "complexes_with_a_change": sum(r["any_changed"] > 0 for r in rows),
        "complexes_failed": failed,
        "per_complex": rows,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "per_complex"}, indent=1))
    if out:
        Path(out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


def main(argv=None) -> int:
    """Compare and time both counters over the corpus; print and optionally write JSON."""
    args = parse_args(argv)
    from pecan.convert.complexes import read_manifest

    warnings.simplefilter("ignore")
    entries = [e for e in read_manifest(Path(args.docked) / "manifest.csv") if e.poses.exists()]
    if args.complexes and args.complexes < len(entries):
        step = len(entries) / args.complexes
        entries = [entries[int(k * step)] for k in range(args.complexes)]
    rows, failed, started = [], [], time.perf_counter()
    if args.pocket_cut:
        return pocket_cut(entries, args.radius, args.out)
    for entry in entries:
        try:
            row = compare_complex(entry)
        except Exception as err:  # recorded: only a failure of both counters alike is not a mismatch
            same = isinstance(err, SameFailure)
            failed.append({"complex_id": entry.complex_id, "both_failed_alike": same, "error": str(err)[:300]})
            continue
        rows.append(row)
        print(
            f"{entry.complex_id}: {row['molecules']} molecules, {len(row['mismatches'])} mismatches, "
            f"{row['prolif_ms_per_pose']:.1f} vs {row['contacts_ms_per_pose']:.2f} ms",
            file=sys.stderr,
            flush=True,
        )
    result = {
        "command": sys.argv,
        "cpu": cpu_model(),
        "load_average_1min": os.getloadavg()[0],
        "seconds": time.perf_counter() - started,
        **summarise(rows, failed),
        "per_complex": rows,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "per_complex"}, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0 if result["mismatches"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
