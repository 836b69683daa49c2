"""The conversion run: manifest -> shards (process pool, atomic writes, resumable) -> index and failures."""

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
from pecan.data.index import derive_index
from pecan.runtime.fileio import json_text, write_csv, write_text
from pecan.runtime.pool import results_of
from pecan.runtime.progress import Progress

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
    layout.write_shard(path, items, pose_group=pose_group, crystal_group=crystal_group, compression="lzf", attrs=attrs)


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


def run_job(job: ShardJob) -> dict:
    """Convert one shard's complexes and write it (skipped when already complete); returns its record."""
    record = finished_record(job)
    if record is not None:
        return {**record, "reused": True}
    converted = [convert_complex(entry, job.options) for entry in job.entries]
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
            record.unlink()
            removed.append(shard)
            log.warning("removed %s: left from an earlier conversion with another shard plan", shard)
    return removed


def _run_all(jobs: list[ShardJob], workers: int, progress) -> list[dict]:
    records = []
    # heartbeat: one shard job of many complexes can take minutes, and a batch log must still show life.
    with Progress(sum(len(j.entries) for j in jobs), "converting", "complex", progress, heartbeat=True) as bar:
        with results_of(run_job, jobs, workers) as results:
            for record in results:
                records.append(record)
                bar.update(record["entries"])
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
) -> dict:
    """Convert every manifest row; writes shards, <prefix>_all.csv and failures.csv; returns the summary.
    Poses of a complex without a crystal ligand have no rmsd and no label: with ``labels_optional`` (plain
    docking output to score) their index rows keep the label empty, else they are a DataError."""
    entries = read_manifest(Path(manifest))
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = plan(entries, out_dir, prefix, max(per_shard, 1), options)
    remove_stale_shards(out_dir, prefix, jobs)
    records = _run_all(jobs, workers, progress)
    failures = pd.DataFrame(
        [{OLD_FAILURE_NAMES.get(k, k): v for k, v in f.items()} for r in records for f in r["failures"]],
        columns=list(FAILURE_COLUMNS),
    )
    write_csv(failures, out_dir / "failures.csv")
    shards = [out_dir / r["shard"] for r in records if r["complexes"]]
    index_path = out_dir / f"{prefix}_all.csv"
    if shards:
        index = derive_index(
            shards,
            layout.DEFAULT_POSE_GROUP,
            layout.DEFAULT_CRYSTAL_GROUP,
            True,
            options.rmsd_threshold,
            on_bad_sample="error",
            labels_optional=labels_optional,
        )
        index["shard"] = [Path(s).name for s in index["shard"]]
        layout.write_index_csv(index, index_path)
    summary = {
        "complexes": sum(r["complexes"] for r in records),
        "poses": sum(r["poses"] for r in records),
        "positives": sum(r["positives"] for r in records),
        "skipped_complexes": sum(r["entries"] - r["complexes"] for r in records),
        "skipped_poses": int((failures["pose_id"] != "").sum()) if len(failures) else 0,
        "shards": len(shards),
        "reused_shards": sum(r["reused"] for r in records),
        "index": str(index_path) if shards else None,
        "failures": str(out_dir / "failures.csv"),
    }
    return summary


def summary_line(summary: dict) -> str:
    """One line for the end of a run."""
    return (
        f"converted {summary['complexes']} complexes, {summary['poses']} poses ({summary['positives']} "
        f"near-native), skipped {summary['skipped_complexes']} complexes and {summary['skipped_poses']} poses "
        f"(see {summary['failures']}); {summary['shards']} shards ({summary['reused_shards']} reused)"
    )
