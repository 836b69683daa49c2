#!/usr/bin/env python
"""Score docked poses with GNINA 1.0's CNN models (through gninatorch), as a peer baseline for PECAN.

Run with the interpreter of the peer environment made by ``studies/peers/setup.sh``::

    studies/peers/.venv-gnina/bin/python studies/peers/gnina_score.py \
        --manifest studies/realdock/docked/manifest.csv --out studies/peers/out/scores.csv

The manifest is the ``manifest.csv`` written by ``pecan redock``: columns complex_id, receptor (PDB),
poses (multi-record SDF); relative paths are resolved against the manifest's folder.

Gridding follows ``gninatorch.gnina.main`` (the gninatorch counterpart of ``gnina --score_only``):
a ``molgrid.ExampleProvider`` with its default GNINA atom typers (14 receptor + 14 ligand channels,
hydrogens added by OpenBabel), no shuffling and no balancing, and a ``molgrid.GridMaker`` of
resolution 0.5 A and dimension 23.5 A centred on the ligand, with no random rotation or translation.
molgrid reads only the first molecule of a file, so every SDF record is written to its own file first.

Two score sets are available (``--models``):

* ``default``: GNINA 1.0's default ensemble (dense, general_default2018_3, dense_3,
  crossdock_default2018, redock_default2018_2). As in ``gninatorch.models.GNINAModelEnsemble`` the
  pose score is the mean of the members' probabilities and the affinity the mean of their affinities.
* ``default2018``: the single Default2018 model trained on CrossDocked2020
  (``crossdock_default2018``), GNINA's default before 1.0 and one member of the ensemble above.

Each member is evaluated once per pose and reused by both sets. Output: one row per SDF record, in file
order: complex_id, record (0-based), pose_id (the record's title), poses_sha256 (of the poses file scored),
cnn_score_<set>, cnn_affinity_<set> (and cnn_variance_default, the ensemble's affinity variance). Timings go to
``<out stem>.timing.json``. Finished complexes are kept in ``<out>.parts/`` and skipped when the command is run
again, unless their poses file has changed since (its digest differs): those are scored again.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

# molgrid first: importing another Boost.Python extension (e.g. RDKit) before it breaks its converters.
import molgrid  # noqa: I001
import torch
from gninatorch import gnina
from gninatorch.dataloaders import GriddedExamplesLoader

DEFAULT_ENSEMBLE = (
    "dense",
    "general_default2018_3",
    "dense_3",
    "crossdock_default2018",
    "redock_default2018_2",
)
DEFAULT2018 = "crossdock_default2018"
SETS = {"default": DEFAULT_ENSEMBLE, "default2018": (DEFAULT2018,)}
RESOLUTION = 0.5
DIMENSION = 23.5


def split_sdf(path: Path) -> list[tuple[str, str]]:
    """(title, text) of every record of a multi-record SDF, in file order; the title is the first line."""
    records: list[tuple[str, str]] = []
    lines: list[str] = []
    with open(path) as handle:
        for line in handle:
            lines.append(line)
            if line.strip() == "$$$$":
                records.append((lines[0].rstrip("\r\n").strip(), "".join(lines)))
                lines = []
    if any(line.strip() for line in lines):  # last record without a terminator
        records.append((lines[0].rstrip("\r\n").strip(), "".join(lines) + "\n$$$$\n"))
    return records


def read_manifest(path: Path) -> list[dict]:
    """Manifest rows with receptor and poses resolved against the manifest's folder."""
    base = path.resolve().parent
    rows = []
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            row = dict(row)
            row["receptor"] = str((base / row["receptor"]).resolve())
            row["poses"] = str((base / row["poses"]).resolve())
            rows.append(row)
    return rows


def poses_digest(path: Path) -> str:
    """The first 16 hex digits of the SHA-256 of a poses file: which version of the poses a row scored."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def columns_for(sets: list[str]) -> list[str]:
    columns = ["complex_id", "record", "pose_id", "poses_sha256"]
    for name in sets:
        columns += [f"cnn_score_{name}", f"cnn_affinity_{name}"]
        if name == "default":
            columns.append("cnn_variance_default")
    return columns


def load_members(names: list[str]) -> dict[str, torch.nn.Module]:
    """Each GNINA model once, in evaluation mode (essential for the dense models' batch norm)."""
    members = {}
    for name in names:
        model = gnina.load_gnina_model(name, dimension=DIMENSION, resolution=RESOLUTION)
        model.eval()
        members[name] = model
    return members


def score_complex(
    receptor: str, records: list[tuple[str, str]], members: dict[str, torch.nn.Module], batch_size: int
) -> tuple[dict[str, tuple[torch.Tensor, torch.Tensor]], dict[str, float]]:
    """Per member: (pose probability, affinity) for every record; and the seconds spent per stage."""
    seconds = {"grid": 0.0, **{name: 0.0 for name in members}}
    with tempfile.TemporaryDirectory(prefix="gnina_score_") as tmp:
        types = Path(tmp) / "poses.types"
        with open(types, "w") as handle:
            for index, (_, text) in enumerate(records):
                ligand = Path(tmp) / f"record_{index}.sdf"
                ligand.write_text(text)
                handle.write(f"{receptor} {ligand}\n")
        started = time.perf_counter()
        # The inference settings of gninatorch.setup.setup_example_provider(training=False).
        provider = molgrid.ExampleProvider(
            data_root="",
            balanced=False,
            shuffle=False,
            default_batch_size=batch_size,
            iteration_scheme=molgrid.IterationScheme.SmallEpoch,
            cache_structs=True,
        )
        provider.populate(str(types))
        if provider.size() != len(records):
            raise RuntimeError(f"molgrid read {provider.size()} examples for {len(records)} records")
        loader = GriddedExamplesLoader(
            example_provider=provider,
            grid_maker=molgrid.GridMaker(resolution=RESOLUTION, dimension=DIMENSION),
            random_translation=0.0,
            random_rotation=False,
            device=torch.device("cpu"),
            grids_only=True,
        )
        outputs: dict[str, list] = {name: [] for name in members}
        iterator = iter(loader)
        seconds["grid"] += time.perf_counter() - started
        while True:
            started = time.perf_counter()
            try:
                grids = next(iterator)
            except StopIteration:
                break
            finally:
                seconds["grid"] += time.perf_counter() - started
            with torch.no_grad():
                for name, model in members.items():
                    started = time.perf_counter()
                    log_pose, affinity = model(grids)
                    outputs[name].append((torch.exp(log_pose[:, -1]), affinity))
                    seconds[name] += time.perf_counter() - started
    results = {
        name: (torch.cat([p for p, _ in parts]), torch.cat([a for _, a in parts])) for name, parts in outputs.items()
    }
    return results, seconds


def rows_for(complex_id: str, records, results, sets: list[str], digest: str) -> list[dict]:
    """Output rows; ensembles average as gninatorch.models.GNINAModelEnsemble (and GNINA) do."""
    values = {}
    for name in sets:
        scores = torch.stack([results[member][0] for member in SETS[name]])
        affinities = torch.stack([results[member][1] for member in SETS[name]])
        values[f"cnn_score_{name}"] = scores.mean(0)
        values[f"cnn_affinity_{name}"] = affinities.mean(0)
        if name == "default":
            values["cnn_variance_default"] = affinities.var(0, unbiased=False)
    rows = []
    for index, (title, _) in enumerate(records):
        row = {"complex_id": complex_id, "record": index, "pose_id": title, "poses_sha256": digest}
        row.update({key: f"{float(tensor[index]):.6f}" for key, tensor in values.items()})
        rows.append(row)
    return rows


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", required=True, type=Path, help="manifest.csv (complex_id, receptor, poses)")
    parser.add_argument("--out", required=True, type=Path, help="scores CSV to write")
    parser.add_argument(
        "--models",
        nargs="+",
        choices=sorted(SETS),
        default=["default", "default2018"],
        help="score sets to compute (default: both)",
    )
    parser.add_argument("--limit", type=int, default=None, help="score only the first N poses of each complex")
    parser.add_argument("--complexes", nargs="+", default=None, help="score only these complex ids")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--no-resume", action="store_true", help="rescore complexes already kept in <out>.parts/")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    sets = [name for name in SETS if name in args.models]
    members_needed = list(dict.fromkeys(member for name in sets for member in SETS[name]))
    columns = columns_for(sets)
    rows = read_manifest(args.manifest)
    if args.complexes:
        wanted = set(args.complexes)
        rows = [row for row in rows if row["complex_id"] in wanted]
        missing = wanted - {row["complex_id"] for row in rows}
        if missing:
            print(f"not in the manifest: {', '.join(sorted(missing))}", file=sys.stderr)
            return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    parts = args.out.with_name(args.out.name + ".parts")
    parts.mkdir(exist_ok=True)
    tag = "-".join(sets) + (f".limit{args.limit}" if args.limit is not None else "")

    wall = time.perf_counter()
    members: dict[str, torch.nn.Module] | None = None
    load_seconds = 0.0
    timing_per_complex: dict[str, dict] = {}
    all_rows: list[dict] = []
    failures: dict[str, str] = {}
    for position, row in enumerate(rows, 1):
        complex_id = row["complex_id"]
        part_csv = parts / f"{complex_id}.{tag}.csv"
        part_json = parts / f"{complex_id}.{tag}.json"
        digest = poses_digest(Path(row["poses"]))
        if part_csv.exists() and part_json.exists() and not args.no_resume:
            with open(part_csv, newline="") as handle:
                # a part written before the column was named pose_id calls it pose
                done = [{"pose_id" if k == "pose" else k: v for k, v in r.items()} for r in csv.DictReader(handle)]
            if not done or any(r.get("poses_sha256") != digest for r in done):
                # the poses file changed since (or the part predates the digest): its scores are of other poses
                print(f"[{position}/{len(rows)}] {complex_id}: {row['poses']} changed since {part_csv}; rescoring")
                done = None
        else:
            done = None
        if done is not None:
            all_rows += done
            timing_per_complex[complex_id] = json.loads(part_json.read_text())
            print(f"[{position}/{len(rows)}] {complex_id}: {len(done)} poses kept from {part_csv}", flush=True)
            continue
        if members is None:
            started = time.perf_counter()
            members = load_members(members_needed)
            load_seconds = time.perf_counter() - started
            print(f"loaded {', '.join(members_needed)} in {load_seconds:.1f} s", flush=True)
        records = split_sdf(Path(row["poses"]))
        if args.limit is not None:
            records = records[: args.limit]
        if not records:
            failures[complex_id] = "no records"
            print(f"[{position}/{len(rows)}] {complex_id}: no records, skipped", flush=True)
            continue
        started = time.perf_counter()
        try:
            results, seconds = score_complex(row["receptor"], records, members, args.batch_size)
        except Exception as error:  # noqa: BLE001 - one unreadable complex must not stop the benchmark
            failures[complex_id] = f"{type(error).__name__}: {error}"
            print(f"[{position}/{len(rows)}] {complex_id}: failed: {failures[complex_id]}", flush=True)
            continue
        total = time.perf_counter() - started
        done = rows_for(complex_id, records, results, sets, digest)
        timing = {"poses": len(records), "seconds": round(total, 4)}
        timing.update({f"seconds_{key}": round(value, 4) for key, value in seconds.items()})
        with open(part_csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(done)
        part_json.write_text(json.dumps(timing, indent=1) + "\n")
        all_rows += done
        timing_per_complex[complex_id] = timing
        best = max(done, key=lambda r: float(r[f"cnn_score_{sets[0]}"]))
        print(
            f"[{position}/{len(rows)}] {complex_id}: {len(records)} poses in {total:.1f} s "
            f"({total / len(records):.2f} s/pose); best {sets[0]} {best[f'cnn_score_{sets[0]}']} ({best['pose_id']})",
            flush=True,
        )

    with open(args.out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(all_rows)

    poses = sum(t["poses"] for t in timing_per_complex.values())
    scoring = sum(t["seconds"] for t in timing_per_complex.values())
    grid = sum(t.get("seconds_grid", 0.0) for t in timing_per_complex.values())
    per_member = {m: sum(t.get(f"seconds_{m}", 0.0) for t in timing_per_complex.values()) for m in members_needed}
    per_set = {
        name: {
            "seconds": round(grid + sum(per_member[m] for m in SETS[name]), 3),
            "seconds_per_pose": round((grid + sum(per_member[m] for m in SETS[name])) / poses, 4) if poses else None,
        }
        for name in sets
    }
    summary = {
        "complexes": len(timing_per_complex),
        "poses": poses,
        "failures": failures,
        "seconds_total": round(scoring + load_seconds, 3),
        "seconds_per_pose": round(scoring / poses, 4) if poses else None,
        "seconds_model_load": round(load_seconds, 3),
        "seconds_grid": round(grid, 3),
        "seconds_per_model": {m: round(s, 3) for m, s in per_member.items()},
        "per_set": per_set,
        "wall_seconds_this_run": round(time.perf_counter() - wall, 3),
        "note": "seconds_* sum per-complex scoring time, including complexes kept from earlier runs",
        "torch_threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "versions": {"torch": torch.__version__, "molgrid": getattr(molgrid, "__version__", "0.5.5")},
        "models": {name: list(SETS[name]) for name in sets},
        "limit": args.limit,
        "per_complex": timing_per_complex,
    }
    try:
        import importlib.metadata as metadata

        summary["versions"].update({p: metadata.version(p) for p in ("molgrid", "gninatorch", "numpy")})
    except Exception:  # noqa: BLE001 - versions are informative only
        pass
    timing_path = args.out.with_suffix(".timing.json")
    timing_path.write_text(json.dumps(summary, indent=1) + "\n")
    print(
        f"wrote {len(all_rows)} rows to {args.out}; {poses} poses, {summary['seconds_per_pose']} s/pose; "
        f"timings in {timing_path}",
        flush=True,
    )
    if failures:
        print(f"{len(failures)} complexes failed: {', '.join(sorted(failures))}", file=sys.stderr)
    return 1 if failures and not all_rows else 0


if __name__ == "__main__":
    sys.exit(main())
