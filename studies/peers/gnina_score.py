#!/usr/bin/env python
"""Score docked poses with GNINA 1.0's CNN models (through gninatorch), as a peer baseline for PECAN.

Run with the interpreter of the peer environment made by ``studies/peers/setup.sh``::

    studies/peers/.venv-gnina/bin/python -m studies.peers.gnina_score \
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

Across a cluster's ranks: started under torchrun, ``srun`` or ``flux run``, every rank reads the same manifest and
scores the complexes at positions ``k % world_size == rank``; the last rank to finish writes ``<out>`` from every
complex's part, the same file one process writes (``gnina_parts.py``)::

    srun -n 64 studies/peers/.venv-gnina/bin/python -m studies.peers.gnina_score --threads 1 \
        --manifest docked/manifest.csv --out teacher.csv
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

# pecan is not installed in the GNINA environment: run from the repository root (``python -m``), whose folder is
# then on sys.path; these modules need only the standard library and python-hostlist.
from pecan.engine.launchers import discover
from pecan.runtime import shares
from pecan.runtime.fileio import write_text
from studies.peers import gnina_parts

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


def summary_of(args, sets, members_needed, timings, failures, load_seconds, wall) -> dict:
    """The timing JSON: per-complex scoring seconds of every joined complex (whichever rank or run scored it)."""
    poses = sum(t["poses"] for t in timings.values())
    scoring = sum(t["seconds"] for t in timings.values())
    grid = sum(t.get("seconds_grid", 0.0) for t in timings.values())
    per_member = {m: sum(t.get(f"seconds_{m}", 0.0) for t in timings.values()) for m in members_needed}
    per_set = {
        name: {
            "seconds": round(grid + sum(per_member[m] for m in SETS[name]), 3),
            "seconds_per_pose": round((grid + sum(per_member[m] for m in SETS[name])) / poses, 4) if poses else None,
        }
        for name in sets
    }
    summary = {
        "complexes": len(timings),
        "poses": poses,
        "failures": failures,
        "seconds_total": round(scoring + load_seconds, 3),
        "seconds_per_pose": round(scoring / poses, 4) if poses else None,
        "seconds_model_load": round(load_seconds, 3),
        "seconds_grid": round(grid, 3),
        "seconds_per_model": {m: round(s, 3) for m, s in per_member.items()},
        "per_set": per_set,
        "wall_seconds_this_run": round(time.perf_counter() - wall, 3),
        "note": "seconds_* sum per-complex scoring time, including complexes kept from earlier runs or scored by "
        "other ranks; seconds_model_load and wall_seconds_this_run are the joining process's own",
        "torch_threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "versions": {"torch": torch.__version__, "molgrid": getattr(molgrid, "__version__", "0.5.5")},
        "models": {name: list(SETS[name]) for name in sets},
        "limit": args.limit,
        "per_complex": timings,
    }
    try:
        import importlib.metadata as metadata

        summary["versions"].update({p: metadata.version(p) for p in ("molgrid", "gninatorch", "numpy")})
    except Exception:  # noqa: BLE001 - versions are informative only
        pass
    return summary


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        env = discover()
    except ValueError as error:  # a malformed launcher environment, named
        print(f"error: {error}", file=sys.stderr)
        return 2
    place = shares.Place(env.rank, env.world_size, env.launcher)
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
    parts = gnina_parts.parts_dir(args.out)
    parts.mkdir(exist_ok=True)
    tag = gnina_parts.set_tag(sets, args.limit)
    key = gnina_parts.plan_key([row["complex_id"] for row in rows], tag)
    mine = shares.share(rows, place.rank, place.world_size)
    if place.is_distributed:
        shares.clear_rank_file(parts, place)
        print(f"{place.describe()}: {len(mine)} of {len(rows)} complexes", flush=True)

    wall = time.perf_counter()
    members: dict[str, torch.nn.Module] | None = None
    load_seconds = 0.0
    digests: dict[str, str] = {}
    kept: list[str] = []
    for position, row in enumerate(mine, 1):
        complex_id = row["complex_id"]
        digests[complex_id] = digest = poses_digest(Path(row["poses"]))
        done, _, note = (None, None, "") if args.no_resume else gnina_parts.read_part(parts, complex_id, tag, digest)
        if done is not None:
            kept.append(complex_id)
            print(f"[{position}/{len(mine)}] {complex_id}: {len(done)} poses kept from {parts}", flush=True)
            continue
        if note and note != gnina_parts.NOT_SCORED:  # the poses changed since they were scored
            print(f"[{position}/{len(mine)}] {complex_id}: {row['poses']} changed since: {note}; rescoring")
        if members is None:
            started = time.perf_counter()
            members = load_members(members_needed)
            load_seconds = time.perf_counter() - started
            print(f"loaded {', '.join(members_needed)} in {load_seconds:.1f} s", flush=True)
        records = split_sdf(Path(row["poses"]))
        if args.limit is not None:
            records = records[: args.limit]
        if not records:
            gnina_parts.write_failure(parts, complex_id, tag, "no records")
            print(f"[{position}/{len(mine)}] {complex_id}: no records, skipped", flush=True)
            continue
        started = time.perf_counter()
        try:
            results, seconds = score_complex(row["receptor"], records, members, args.batch_size)
        except Exception as error:  # noqa: BLE001 - one unreadable complex must not stop the benchmark
            reason = f"{type(error).__name__}: {error}"
            gnina_parts.write_failure(parts, complex_id, tag, reason)
            print(f"[{position}/{len(mine)}] {complex_id}: failed: {reason}", flush=True)
            continue
        total = time.perf_counter() - started
        done = rows_for(complex_id, records, results, sets, digest)
        timing = {"poses": len(records), "seconds": round(total, 4)}
        timing.update({f"seconds_{key_}": round(value, 4) for key_, value in seconds.items()})
        gnina_parts.write_part(parts, complex_id, tag, columns, done, timing)
        best = max(done, key=lambda r: float(r[f"cnn_score_{sets[0]}"]))
        print(
            f"[{position}/{len(mine)}] {complex_id}: {len(records)} poses in {total:.1f} s "
            f"({total / len(records):.2f} s/pose); best {sets[0]} {best[f'cnn_score_{sets[0]}']} ({best['pose_id']})",
            flush=True,
        )

    if place.is_distributed:
        shares.write_rank_file(parts, place, key, kept)
        finished = shares.finished_ranks(parts, place.world_size, key)
        if len(finished) < place.world_size:
            print(
                f"{place.describe()}: share done ({len(mine)} complexes); {args.out} is written by the last rank "
                f"to finish ({len(finished)} of {place.world_size} done)",
                flush=True,
            )
            return 0
    # One process, or the last rank to finish: every complex of the plan from its part, in manifest order.
    plan = [(row["complex_id"], digests.get(row["complex_id"]) or poses_digest(Path(row["poses"]))) for row in rows]
    all_rows, timings, failures = gnina_parts.join(plan, parts, tag)
    gnina_parts.write_scores(args.out, columns, all_rows)
    summary = summary_of(args, sets, members_needed, timings, failures, load_seconds, wall)
    timing_path = args.out.with_suffix(".timing.json")
    write_text(timing_path, json.dumps(summary, indent=1) + "\n")
    print(
        f"wrote {len(all_rows)} rows to {args.out}; {summary['poses']} poses, {summary['seconds_per_pose']} s/pose; "
        f"timings in {timing_path}",
        flush=True,
    )
    if failures:
        print(f"{len(failures)} complexes failed: {', '.join(sorted(failures))}", file=sys.stderr)
    return 1 if failures and not all_rows else 0


if __name__ == "__main__":
    sys.exit(main())
