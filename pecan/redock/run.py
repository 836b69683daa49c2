"""The redocking run: manifest -> per-complex Vina jobs (process pool, resumable) -> poses, the converter's
manifest, a per-complex table and failures.csv.

Input manifest columns: complex_id, receptor (PDB or PDBQT), crystal_ligand (SDF, mol2 or PDB); optional seed.
Relative paths are resolved against the manifest's directory; every other column (affinity, family, ...) is
passed through to the converter's manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pandas as pd

from pecan.redock.dock import SCORE_PROPERTY, DockJob, DockOptions, finished, interrupted, remove_leftovers, run_job
from pecan.runtime import shares
from pecan.runtime.fileio import write_csv
from pecan.runtime.manifest import check_unique_ids, read_manifest_frame
from pecan.runtime.out_folder import Plan as FolderPlan
from pecan.runtime.out_folder import own_folder
from pecan.runtime.pool import Stopped, results_of
from pecan.runtime.progress import Progress
from pecan.runtime.shares import Place

REQUIRED_COLUMNS = ("complex_id", "receptor", "crystal_ligand")
CONVERTER_COLUMNS = ("complex_id", "receptor", "poses", "crystal_ligand", "score_property")
TABLE_COLUMNS = (
    "complex_id",
    "status",
    "seed",
    "poses",
    "best_docking_score",
    "start_rmsd_to_crystal",
    "seconds",
    "reused",
    "reason",
)


def read_manifest(path: Path) -> pd.DataFrame:
    """The manifest with absolute paths; a missing column or duplicate id is a ValueError naming the file."""
    frame = read_manifest_frame(path, REQUIRED_COLUMNS, ("seed",))
    frame["complex_id"] = frame["complex_id"].str.strip()
    if (frame["complex_id"] == "").any():
        raise ValueError(f"manifest {path}: empty complex_id in row {int((frame['complex_id'] == '').idxmax()) + 2}")
    check_unique_ids(frame, path)
    bad = frame["complex_id"].str.contains(r"[/\\]|^\.", regex=True)
    if bad.any():
        raise ValueError(f"manifest {path}: complex_id {frame['complex_id'][bad].iloc[0]!r} cannot be a file name")
    for column in ("receptor", "crystal_ligand"):
        frame[column] = [str(p if Path(p).is_absolute() else (path.parent / p).resolve()) for p in frame[column]]
    return frame


def plan(frame: pd.DataFrame, out_dir: Path, options: DockOptions) -> list[DockJob]:
    """One job per manifest row (a seed column, where present and not blank, overrides the derived seed)."""
    seeds = frame["seed"] if "seed" in frame.columns else [""] * len(frame)
    return [
        DockJob(
            row["complex_id"],
            Path(row["receptor"]),
            Path(row["crystal_ligand"]),
            out_dir,
            options,
            int(seed) if str(seed).strip() else None,
        )
        for row, seed in zip(frame.to_dict("records"), seeds)
    ]


def _run_all(
    jobs: list[DockJob], workers: int, progress, on_record, run_jobs=None, desc: str = "redocking"
) -> list[dict]:
    run_jobs = run_jobs or results_of  # the local pool unless an engine's; looked up at call time
    # Finished complexes first, in this process (a record and a hash of the inputs each): the tables list
    # them from the first write on, so a rerun never shows a shorter manifest.csv while it catches up.
    order = {job.complex_id: k for k, job in enumerate(jobs)}
    records, todo = [], []
    for job in jobs:
        record = finished(job)
        if record is None:
            todo.append(job)
        else:
            records.append({**record, "reused": True})

    def add(record: dict) -> None:
        records.append(record)
        records.sort(key=lambda r: order[r["complex_id"]])
        on_record(records)

    try:
        with Progress(len(jobs), desc, "complex", progress, heartbeat=True, already_done=len(records)) as bar:
            if records:
                on_record(records)
            with run_jobs(run_job, todo, workers) as results:
                for record in results:
                    add(record)
                    bar.update(1)
    except Stopped as stop:
        for job in stop.in_flight:
            add(interrupted(job, stop.name))
        stop.records = records
        raise
    return records


def _relative(path: Path, start: Path) -> str:
    """Relative to ``start`` when near it (a directory moved together stays valid), else absolute."""
    try:
        relative = os.path.relpath(path, start)
    except ValueError:  # another drive on Windows
        return str(path)
    return relative if relative.count("..") <= 2 else str(path)


def converter_manifest(frame: pd.DataFrame, records: list[dict], jobs: list[DockJob], out_dir: Path) -> pd.DataFrame:
    """The rows `pecan convert` reads, for the complexes that docked; extra columns pass through."""
    ok = {r["complex_id"] for r in records if r["status"] == "ok"}
    by_id = {job.complex_id: job for job in jobs}
    rows = []
    for row in frame.to_dict("records"):
        if row["complex_id"] not in ok:
            continue
        job = by_id[row["complex_id"]]
        extra = {k: v for k, v in row.items() if k not in CONVERTER_COLUMNS and k != "seed"}
        rows.append(
            {
                "complex_id": job.complex_id,
                "receptor": _relative(job.receptor, out_dir),
                "poses": _relative(job.poses_path, out_dir),
                "crystal_ligand": _relative(job.crystal_ligand, out_dir),
                "score_property": SCORE_PROPERTY,
                "seed": job.complex_seed,
                **extra,
            }
        )
    columns = [*CONVERTER_COLUMNS, "seed"]
    return pd.DataFrame(rows, columns=columns + [c for c in (rows[0] if rows else {}) if c not in columns])


def redock(
    manifest: Path,
    out_dir: Path,
    options: DockOptions,
    workers: int = 1,
    progress="auto",
    place: Place = Place(),
    replace: bool = False,
    engine=None,
) -> dict:
    """Redock this rank's share of the manifest (every row for one rank); writes poses/, records/, and (one
    rank: after every complex; several: the last rank to finish) manifest.csv, redock.csv, failures.csv.
    Returns the summary. ``out_dir`` is owned as pecan.runtime.out_folder says: a live run there, ranks given
    other options or a folder holding another plan's outputs (unless ``replace``) stop it before anything is
    written. ``engine`` (one process: pecan.runtime.engine_dask) runs the jobs instead of the local pool."""
    manifest = Path(manifest)
    frame = read_manifest(manifest)
    out_dir = Path(out_dir).resolve()
    ownership = own_folder(out_dir, folder_plan(manifest, options), place.rank, place.describe(), replace)
    try:
        return _redock(frame, out_dir, options, workers, progress, place, engine)
    finally:
        ownership.release()


def folder_plan(manifest: Path, options: DockOptions) -> FolderPlan:
    """The output folder's plan: every docking option that changes a complex's poses, and the manifest. A later
    run may bring another manifest with the same options (complexes are kept per id and redocked when their
    inputs change), so the plan grows with it."""
    flags = {"--" + name.replace("_", "-"): value for name, value in options.identity().items()}
    written = ("poses", "records", "receptors", "manifest.csv", "redock.csv", "failures.csv")
    return FolderPlan.of("pecan redock", flags, manifest, written, grows=True)


def _redock(
    frame: pd.DataFrame, out_dir: Path, options: DockOptions, workers: int, progress, place: Place, engine=None
):
    jobs = plan(frame, out_dir, options)
    my_jobs = shares.share(jobs, place.rank, place.world_size)
    for job in my_jobs:  # a killed run's temporary files (no other rank writes these complexes' files)
        remove_leftovers(job)

    def write_tables(records: list[dict]) -> None:
        # After every complex, so a long run's finished part can be inspected and converted already.
        table = pd.DataFrame([{c: r.get(c, "") for c in TABLE_COLUMNS} for r in records], columns=list(TABLE_COLUMNS))
        write_csv(table, out_dir / "redock.csv")
        write_csv(table[table["status"] != "ok"][["complex_id", "reason"]], out_dir / "failures.csv")
        write_csv(converter_manifest(frame, records, jobs, out_dir), out_dir / "manifest.csv")

    if engine is not None:  # a lost worker's half-written files stay behind: removed once every job is back
        records = _run_all(jobs, workers, progress, write_tables, engine.results_of)
        for job in jobs:
            remove_leftovers(job)
        write_tables(records)
        return {**_summary(records, out_dir), "merged": True, "rank": engine.describe()}
    if not place.is_distributed:
        records = _run_all(jobs, max(workers, 1), progress, write_tables)
        write_tables(records)
        return {**_summary(records, out_dir), "merged": True, "rank": place.describe()}
    shares.clear_rank_file(out_dir, place)
    label = shares.progress_label("redocking", place)
    mine = _run_all(my_jobs, max(workers, 1), progress, lambda records: None, desc=label)
    key = plan_key(jobs)
    shares.write_rank_file(out_dir, place, key, [r["complex_id"] for r in mine if r["reused"]])
    records = merged_records(jobs, out_dir, place.world_size, key)
    if records is None:  # failures.csv as far as known, to look at before the last rank ends
        write_failures(failed_so_far(jobs), out_dir)
        records = merged_records(jobs, out_dir, place.world_size, key)  # never leave it partial after the merge
    if records is None:  # another rank is still docking; the last to finish merges
        return {**_summary(mine, out_dir), "merged": False, "rank": place.describe()}
    write_tables(records)
    return {**_summary(records, out_dir), "merged": True, "rank": place.describe()}


def failed_so_far(jobs: list[DockJob]) -> list[dict]:
    """The records of this plan's complexes that failed so far (any rank's), in manifest order."""
    failed = []
    for job in jobs:
        try:
            record = json.loads(job.record_path.read_text())
        except (OSError, ValueError):
            continue
        if record.get("key") == job.key and record.get("status") != "ok":
            failed.append(record)
    return failed


def write_failures(records: list[dict], out_dir: Path) -> None:
    """failures.csv (complex_id, reason) of the failed ones among ``records``."""
    rows = [{"complex_id": r["complex_id"], "reason": r.get("reason", "")} for r in records if r["status"] != "ok"]
    write_csv(pd.DataFrame(rows, columns=["complex_id", "reason"]), out_dir / "failures.csv")


def plan_key(jobs: list[DockJob]) -> str:
    """Hash of every job's key: the ranks of one run agree on it, a changed manifest or option changes it."""
    return hashlib.sha256(json.dumps([job.key for job in jobs]).encode()).hexdigest()[:16]


def merged_records(jobs: list[DockJob], out_dir: Path, world_size: int, key: str) -> list[dict] | None:
    """Every job's record from records/, in manifest order, once every rank has finished this plan (else None);
    ``reused`` as the rank that ran the complex found it."""
    finished_ranks = shares.finished_ranks(out_dir, world_size, key)
    if len(finished_ranks) < world_size:
        return None
    reused = {cid for record in finished_ranks.values() for cid in record["reused"]}
    records = []
    for job in jobs:
        try:
            record = json.loads(job.record_path.read_text())
        except (OSError, ValueError):
            return None
        if record.get("key") != job.key or (record["status"] == "ok" and not job.poses_path.exists()):
            return None
        records.append({**(finished(job) or record), "reused": job.complex_id in reused})
    return records


def _summary(records: list[dict], out_dir: Path) -> dict:
    docked = [r for r in records if r["status"] == "ok"]
    return {
        "complexes": len(docked),
        "failed": len(records) - len(docked),
        "reused": sum(bool(r["reused"]) for r in docked),
        "poses": sum(int(r["poses"]) for r in docked),
        "manifest": str(out_dir / "manifest.csv"),
        "failures": str(out_dir / "failures.csv"),
    }


def dry_run_lines(manifest: Path, out_dir: Path, options: DockOptions, world_size: int) -> list[str]:
    """Each rank's share of the manifest's complexes, one line per rank; nothing is docked or written."""
    jobs = plan(read_manifest(Path(manifest)), Path(out_dir).resolve(), options)
    return [f"{len(jobs)} complexes", *shares.share_lines([job.complex_id for job in jobs], world_size, "complexes")]


def summary_line(summary: dict) -> str:
    """One line for the end of a run (a rank that did not merge says so)."""
    if not summary["merged"]:
        return (
            f"{summary['rank']}: redocked its share, {summary['complexes']} complexes ({summary['reused']} already "
            f"finished), {summary['failed']} failed; the last rank to finish writes manifest.csv, redock.csv and "
            "failures.csv"
        )
    return (
        f"redocked {summary['complexes']} complexes ({summary['reused']} already finished), "
        f"{summary['poses']} poses; {summary['failed']} failed (see {summary['failures']}); "
        f"convert with: pecan convert {summary['manifest']} --out SHARDS"
    )


def stopped_line(stop: Stopped, command: str) -> str:
    """The one line a stopped run ends with: what was kept, what was cut short, and how to resume."""
    records = getattr(stop, "records", [])
    kept = sum(r["status"] == "ok" for r in records)
    cut = sum(r["status"] == "interrupted" for r in records)
    return (
        f"stopped by {stop.name}: {kept} complexes docked and kept, {cut} interrupted (recorded in "
        f"failures.csv); resume with the same command: {command}"
    )
