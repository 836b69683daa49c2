"""The per-complex files of ``gnina_score.py`` and their join: what a rank writes, reads back and merges.

Nothing here imports molgrid or torch, so the logic runs (and is tested) in the main environment as well as the
GNINA one. ``<out>.parts/`` holds, per complex and score-set tag, the scored rows (``<id>.<tag>.csv``), their
timing (``<id>.<tag>.json``) or the reason scoring failed (``<id>.<tag>.failed.json``), each written atomically,
so a rank killed mid-write leaves no half file that a later run would take for a finished complex. Several ranks
(torchrun, srun, flux) each score the complexes at positions ``k % world_size == rank`` of the plan, record that
their share is done under ``<out>.parts/.ranks/`` (``pecan.runtime.shares``: the same rule as ``pecan redock``
and ``pecan convert``), and the last rank to finish joins every complex's part into ``<out>`` in plan order, so
the output is the same for any number of ranks.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path

from pecan.runtime.fileio import json_text, write_text

NOT_SCORED = "not scored"


def parts_dir(out: Path) -> Path:
    """Where the per-complex files of ``out`` live."""
    return out.with_name(out.name + ".parts")


def set_tag(sets: list[str], limit: int | None) -> str:
    """The score sets (and pose limit) a part was made with: parts of other settings are never mixed in."""
    return "-".join(sets) + (f".limit{limit}" if limit is not None else "")


def part_paths(parts: Path, complex_id: str, tag: str) -> tuple[Path, Path, Path]:
    """(rows CSV, timing JSON, failure JSON) of one complex."""
    stem = f"{complex_id}.{tag}"
    return parts / f"{stem}.csv", parts / f"{stem}.json", parts / f"{stem}.failed.json"


def plan_key(complex_ids: list[str], tag: str) -> str:
    """Identifies one plan (its complexes in order and the tag): ranks of different plans never join."""
    return hashlib.sha256(json.dumps([tag, list(complex_ids)]).encode()).hexdigest()[:16]


def write_part(parts: Path, complex_id: str, tag: str, columns: list[str], rows: list[dict], timing: dict) -> None:
    """One complex's scored rows and timing, each atomically; a failure recorded earlier is removed."""
    rows_path, timing_path, failed_path = part_paths(parts, complex_id, tag)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text(rows_path, buffer.getvalue())
    write_text(timing_path, json_text(timing, indent=1))
    failed_path.unlink(missing_ok=True)


def write_failure(parts: Path, complex_id: str, tag: str, reason: str) -> None:
    """Why a complex could not be scored (a later run tries it again)."""
    write_text(part_paths(parts, complex_id, tag)[2], json_text({"complex_id": complex_id, "reason": reason}))


def read_part(parts: Path, complex_id: str, tag: str, digest: str) -> tuple[list[dict] | None, dict | None, str]:
    """(rows, timing, note) of a finished complex whose rows scored the poses file of ``digest``; (None, None,
    note) when there is none, or when its rows scored another version of the poses (note says which)."""
    rows_path, timing_path, _ = part_paths(parts, complex_id, tag)
    if not (rows_path.exists() and timing_path.exists()):
        return None, None, NOT_SCORED
    with open(rows_path, newline="") as handle:
        # a part written before the column was named pose_id calls it pose
        rows = [{"pose_id" if k == "pose" else k: v for k, v in r.items()} for r in csv.DictReader(handle)]
    if not rows or any(r.get("poses_sha256") != digest for r in rows):
        return None, None, f"{rows_path} scored another version of the poses"
    return rows, json.loads(timing_path.read_text()), ""


def failure_reason(parts: Path, complex_id: str, tag: str) -> str:
    """The recorded reason a complex failed, or '' when none was recorded."""
    path = part_paths(parts, complex_id, tag)[2]
    try:
        return str(json.loads(path.read_text())["reason"])
    except (OSError, ValueError, KeyError):
        return ""


def join(plan: list[tuple[str, str]], parts: Path, tag: str) -> tuple[list[dict], dict[str, dict], dict[str, str]]:
    """Every complex of ``plan`` ((complex_id, poses digest), in plan order): all scored rows, the timing of each
    scored complex, and for the others why not (its recorded failure, or that no rank scored these poses)."""
    rows: list[dict] = []
    timings: dict[str, dict] = {}
    failures: dict[str, str] = {}
    for complex_id, digest in plan:
        done, timing, note = read_part(parts, complex_id, tag, digest)
        if done is None:
            failures[complex_id] = failure_reason(parts, complex_id, tag) or note
            continue
        rows += done
        timings[complex_id] = timing
    return rows, timings, failures


def write_scores(out: Path, columns: list[str], rows: list[dict]) -> None:
    """The joined scores CSV, atomically."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_text(out, buffer.getvalue())
