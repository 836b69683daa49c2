"""The conversion run: manifest -> shards (process pool, atomic writes, resumable) -> index and failures.

The plan (shard k holds manifest rows k*per_shard ... (k+1)*per_shard - 1) does not depend on the number of
ranks; under a launcher each rank converts its share of the shards (pecan.runtime.shares) and the rank that
finds every shard finished writes the index and failures.csv."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

import pandas as pd

from pecan.convert.complexes import ComplexEntry, ConvertedComplex, Options, convert_complex, read_manifest
from pecan.data import layout
from pecan.data.index import IndexBuilder, IndexSettings
from pecan.runtime.fileio import json_text, write_csv, write_text
from pecan.runtime.out_folder import Plan as FolderPlan
from pecan.runtime.out_folder import own_folder
from pecan.runtime.pool import results_of
from pecan.runtime.progress import Progress
from pecan.runtime.shares import Place, progress_label, remove_leftover_temps, share, share_lines

log = logging.getLogger(__name__)

FAILURE_COLUMNS = ("complex_id", "pose_id", "reason")
# A finished shard's sidecar written before failure rows named their columns complex_id and pose_id.
OLD_FAILURE_NAMES = {"complex": "complex_id", "pose": "pose_id"}


@dataclass(frozen=True)
class ShardJob:
    """One shard's complexes; ``key`` changes whenever its inputs or options change."""

    path: Path
    entries: tuple[ComplexEntry, ...]
    options: Options

    @property
    def key(self) -> str:
        """Hash of the entries and options (a finished shard with the same key is reused)."""
        text = json.dumps(
            [[str(v) for v in dataclasses.astuple(e)] for e in self.entries] + [dataclasses.asdict(self.options)],
            sort_keys=True,
        )
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def record_path(self) -> Path:
        """Sidecar recording a finished shard (its key, failures and counts); written after the shard."""
        return self.path.with_name(f".{self.path.stem}.done.json")


def _shard_sample(sample, name: Optional[str] = None) -> layout.ShardSample:
    return layout.ShardSample(name or sample.pose_id, sample.data, sample.attrs, sample.vdw)


def write_shard(
    path: Path,
    complexes: Iterable[ConvertedComplex],
    crystal_group: str = layout.DEFAULT_CRYSTAL_GROUP,
    pose_group: str = layout.DEFAULT_POSE_GROUP,
    score_properties: Iterable[str] = (),
) -> None:
    """Converted complexes as one shard (pecan.data.layout.write_shard, lzf-compressed). Its root records
    ``source: converted`` and the SD properties its docking scores were read from (``score_properties``, a
    JSON list), which training stores in its checkpoints for `pecan score`."""
    items = (
        layout.ShardComplex(
            item.complex_id,
            [_shard_sample(s) for s in item.poses],
            _shard_sample(item.crystal) if item.crystal is not None else None,
            item.affinity,
        )
        for item in complexes
    )
    attrs = {"source": "converted", "score_properties": json.dumps(sorted(set(score_properties)))}
    layout.write_shard(
        path, items, pose_group=pose_group, crystal_group=crystal_group, compression="lzf", attrs=attrs, in_memory=True
    )


def _write_json(path: Path, payload: dict) -> None:
    write_text(path, json_text(payload))


def finished_record(job: ShardJob) -> Optional[dict]:
    """The sidecar of a complete shard converted from the same inputs, else None."""
    try:
        record = json.loads(job.record_path.read_text())
    except (OSError, ValueError):
        return None
    if record.get("key") != job.key or (record["complexes"] and not job.path.exists()):
        return None
    return record


@dataclass(frozen=True)
class ComplexJob:
    """One complex of a shard, the unit the worker pool hands out (so that one large shard uses every
    worker)."""

    shard: int  # position of its shard in the run's list
    position: int  # position in its shard
    entry: ComplexEntry
    options: Options


def convert_one(job: ComplexJob) -> tuple[int, int, ConvertedComplex]:
    """A worker's job: one complex converted, with where it goes."""
    return job.shard, job.position, convert_complex(job.entry, job.options)


def write_converted(job: ShardJob, converted: list[ConvertedComplex]) -> dict:
    """Write a shard's converted complexes (none: no file) and then its sidecar; returns its record."""
    done = [c for c in converted if c.poses]
    if done:
        scored = {e.complex_id: e.score_property for e in job.entries if e.score_property}
        write_shard(job.path, done, score_properties=[scored[c.complex_id] for c in done if c.complex_id in scored])
    else:
        job.path.unlink(missing_ok=True)
    record = {
        "key": job.key,
        "shard": job.path.name,
        "complexes": len(done),
        "poses": sum(len(c.poses) for c in done),
        "positives": sum(int(s.attrs.get("label", 0)) for c in done for s in c.poses),
        "entries": len(job.entries),
        "failures": [f for c in converted for f in c.failures],
    }
    _write_json(job.record_path, record)
    return {**record, "reused": False}


def run_job(job: ShardJob) -> dict:
    """Convert one shard's complexes in this process and write it (skipped when already complete)."""
    record = finished_record(job)
    if record is not None:
        return {**record, "reused": True}
    return write_converted(job, [convert_complex(entry, job.options) for entry in job.entries])


def plan(entries: list[ComplexEntry], out_dir: Path, prefix: str, per_shard: int, options: Options) -> list[ShardJob]:
    """Complexes in manifest order, ``per_shard`` to a shard named <prefix>_<k>.hdf5."""
    return [
        ShardJob(out_dir / f"{prefix}_{k // per_shard:04d}.hdf5", tuple(entries[k : k + per_shard]), options)
        for k in range(0, len(entries), per_shard)
    ]


def remove_stale_shards(out_dir: Path, prefix: str, jobs: list[ShardJob]) -> list[Path]:
    """Delete shards this converter wrote earlier under names the current plan no longer uses (a rerun with
    fewer shards), so that training on OUT_DIR never sees a complex twice. Only shards with a sidecar go."""
    planned = {job.record_path for job in jobs}
    removed = []
    for record in out_dir.glob(f".{prefix}_*.done.json"):
        if record not in planned:
            shard = record.with_name(record.name[1 : -len(".done.json")] + ".hdf5")
            shard.unlink(missing_ok=True)
            record.unlink(missing_ok=True)  # another rank of the same run may have removed it first
            removed.append(shard)
            log.warning("removed %s: left from an earlier conversion with another shard plan", shard)
    return removed


def _run_all(
    jobs: list[ShardJob], workers: int, progress, results_of=results_of, desc: str = "converting"
) -> list[dict]:
    """Every shard of ``jobs``: finished ones reused, the others' complexes converted by the pool, each shard
    written as soon as its last complex is back."""
    found = [(job, finished_record(job)) for job in jobs]
    records = [{**record, "reused": True} for _, record in found if record is not None]
    todo = [job for job, record in found if record is None]
    complexes = [ComplexJob(k, p, e, job.options) for k, job in enumerate(todo) for p, e in enumerate(job.entries)]
    slots: dict[int, list] = {k: [None] * len(job.entries) for k, job in enumerate(todo)}
    left = {k: len(job.entries) for k, job in enumerate(todo)}
    # heartbeat: a complex with many poses can take minutes, and a batch log must still show life.
    reused = sum(r["entries"] for r in records)
    total = sum(len(j.entries) for j in jobs)
    with Progress(total, desc, "complex", progress, heartbeat=True, already_done=reused) as bar:
        with results_of(convert_one, complexes, workers) as results:
            for shard, position, converted in results:
                slots[shard][position] = converted
                left[shard] -= 1
                if not left[shard]:
                    records.append(write_converted(todo[shard], slots.pop(shard)))
                bar.update(1)
    return sorted(records, key=lambda r: r["shard"])


def convert(
    manifest: Path,
    out_dir: Path,
    options: Options,
    prefix: str = "converted",
    per_shard: int = 50,
    workers: int = 1,
    progress="auto",
    labels_optional: bool = True,
    place: Place = Place(),
    replace: bool = False,
    engine=None,
) -> dict:
    """Convert this rank's share of the manifest's shards (every shard for one rank); the rank that finds every
    shard of the plan finished writes <prefix>_all.csv and failures.csv. Returns the summary.
    Poses of a complex without a crystal ligand have no rmsd and no label: with ``labels_optional`` (plain
    docking output to score) their index rows keep the label empty, else they are a DataError.
    ``out_dir`` is owned as pecan.runtime.out_folder says: a live run there, ranks given other options or a
    folder holding another plan's shards (unless ``replace``) stop it before anything is written.
    ``engine`` (one process: pecan.convert.engine) converts the complexes instead of the local pool."""
    entries = read_manifest(Path(manifest))
    ownership = own_folder(
        out_dir, folder_plan(manifest, options, prefix, per_shard), place.rank, place.describe(), replace
    )
    try:
        args = (entries, out_dir, options, prefix, per_shard, workers, progress, labels_optional, place)
        return _convert(*args, engine)
    finally:
        ownership.release()


def folder_plan(manifest: Path, options: Options, prefix: str, per_shard: int) -> FolderPlan:
    """The output folder's plan: the options that change what is written, and the manifest."""
    flags = {
        "--pocket-radius": options.pocket_radius,
        "--rmsd-threshold": options.rmsd_threshold,
        "--drop-hetero": options.drop_hetero,
        "--complexes-per-shard": max(per_shard, 1),
        "--prefix": prefix,
    }
    written = (f"{prefix}_[0-9]*.hdf5", f".{prefix}_[0-9]*.done.json", f"{prefix}_all.csv", "failures.csv")
    return FolderPlan.of("pecan convert", flags, Path(manifest), written)


def _convert(entries, out_dir, options, prefix, per_shard, workers, progress, labels_optional, place, engine=None):
    jobs = plan(entries, out_dir, prefix, max(per_shard, 1), options)
    remove_stale_shards(out_dir, prefix, jobs)
    my_jobs = share(jobs, place.rank, place.world_size)
    remove_leftover_temps([path for job in my_jobs for path in (job.path, job.record_path)])
    if engine is not None:  # one client, every shard; a lost worker's job is converted again elsewhere
        mine = _run_all(my_jobs, workers, progress, engine.results_of)
        place = Place(launcher=engine.describe())
    else:
        mine = _run_all(my_jobs, workers, progress, desc=progress_label("converting", place))
    records = _every_record(jobs, mine)
    if records is None:  # failures.csv as far as known, to look at before the last rank ends
        write_failures(_every_record(jobs, mine, partial=True), out_dir)
        records = _every_record(jobs, mine)  # the last rank may have merged meanwhile: never leave the partial file
    if records is None:  # another rank is still converting; the last to finish merges
        return {"rank": place.describe(), "merged": False, "shards": len(mine), "complexes": _sum(mine, "complexes")}
    summary = merge(records, out_dir, prefix, options.rmsd_threshold, labels_optional)
    return {**summary, "rank": place.describe(), "merged": True, "reused_shards": sum(r["reused"] for r in mine)}


def _sum(records: list[dict], key: str) -> int:
    return sum(r[key] for r in records)


def _every_record(jobs: list[ShardJob], mine: list[dict], partial: bool = False) -> Optional[list[dict]]:
    """The record of every shard in the plan (this rank's from its run, the others' from their sidecars), in
    shard order; None while some shard is not finished (``partial``: the finished ones)."""
    ran = {r["shard"]: r for r in mine}
    records = []
    for job in jobs:
        record = ran.get(job.path.name) or finished_record(job)
        if record is None and partial:
            continue
        if record is None:
            return None
        records.append({"reused": False, **record})
    return records


def write_failures(records: list[dict], out_dir: Path) -> pd.DataFrame:
    """failures.csv from the shards' records, in shard order (written atomically); returns its rows."""
    failures = pd.DataFrame(
        [{OLD_FAILURE_NAMES.get(k, k): v for k, v in f.items()} for r in records for f in r["failures"]],
        columns=list(FAILURE_COLUMNS),
    )
    write_csv(failures, out_dir / "failures.csv")
    return failures


def merge(records: list[dict], out_dir: Path, prefix: str, rmsd_threshold: float, labels_optional: bool) -> dict:
    """failures.csv and <prefix>_all.csv from every shard's record and file (written atomically); the summary."""
    failures = write_failures(records, out_dir)
    shards = [out_dir / r["shard"] for r in records if r["complexes"]]
    index_path = out_dir / f"{prefix}_all.csv"
    if shards:
        groups = (layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP)
        settings = IndexSettings(*groups, True, rmsd_threshold, labels_optional=labels_optional)
        index = IndexBuilder(settings).derive(shards)
        index["shard"] = [Path(s).name for s in index["shard"]]
        layout.write_index_csv(index, index_path)
    return {
        "complexes": _sum(records, "complexes"),
        "poses": _sum(records, "poses"),
        "positives": _sum(records, "positives"),
        "skipped_complexes": sum(r["entries"] - r["complexes"] for r in records),
        "skipped_poses": int((failures["pose_id"] != "").sum()) if len(failures) else 0,
        "shards": len(shards),
        "index": str(index_path) if shards else None,
        "failures": str(out_dir / "failures.csv"),
    }


def dry_run_lines(manifest: Path, out_dir: Path, options: Options, prefix: str, per_shard: int, world_size: int):
    """Each rank's share of the plan's shards, one line per rank; nothing is converted or written."""
    jobs = plan(read_manifest(Path(manifest)), out_dir, prefix, max(per_shard, 1), options)
    names = [f"{job.path.name}({len(job.entries)})" for job in jobs]
    header = f"{len(jobs)} shards of up to {per_shard} complexes ({sum(len(j.entries) for j in jobs)} complexes)"
    return [header, *share_lines(names, world_size, "shards")]


def summary_line(summary: dict) -> str:
    """One line for the end of a run (a rank that did not merge says so)."""
    if not summary["merged"]:
        return (
            f"{summary['rank']}: converted its {summary['shards']} shards ({summary['complexes']} complexes); "
            "the last rank to finish writes the index and failures.csv"
        )
    return (
        f"converted {summary['complexes']} complexes, {summary['poses']} poses ({summary['positives']} "
        f"near-native), skipped {summary['skipped_complexes']} complexes and {summary['skipped_poses']} poses "
        f"(see {summary['failures']}); {summary['shards']} shards ({summary['reused_shards']} reused)"
    )
