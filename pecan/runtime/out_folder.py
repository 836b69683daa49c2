"""Who owns a data-preparation output folder (`pecan convert`, `pecan redock`, `pecan sources` ``--out``).

Rank 0 of a run holds the folder's lock (pecan.runtime.dir_lock, the code and rules of training's
``.pecan.lock``: a live lock refuses a second run, a stale one is taken over). The folder's plan,
``.pecan.plan.json``, records the digest of what determines its outputs: the options that change them and
the manifest's bytes. Every rank compares its own plan with it:

- the same digest: a rerun or another rank of the run; it resumes as before;
- another digest written by the same launch (torchrun's run id, Slurm's job and step, flux's job id):
  the ranks were given different options; ConfigError (exit 2) naming the option and both values;
- another digest from an earlier run: refused the same way, unless ``replace`` (``--replace``), which removes
  the outputs that earlier plan listed and records the new one; a plan whose outputs are kept per manifest row
  and keyed by their own inputs (``grows``: `pecan redock`) may come back with another manifest and the same
  options: finished rows are reused, new ones done, and the plan records the new manifest.

Ranks do not wait for each other (they meet only through files), so a rank that comes first writes the plan
(an exclusive link: one writer wins) and the others compare with it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from pecan.runtime.dir_lock import Folder, RunLock, check_out_dir, owner_record
from pecan.runtime.errors import ConfigError
from pecan.runtime.fileio import json_text, write_text

log = logging.getLogger(__name__)

PLAN_NAME = ".pecan.plan.json"
MANIFEST = "the manifest"  # the name a differing manifest gets in messages
STALE_MINUTES = 10.0
REPLACE_WAIT_S = 600.0  # how long a rank > 0 of a --replace run waits for rank 0 to record the new plan
# Launch ids: every rank of one launch has the same value.
LAUNCH_VARS = (("TORCHELASTIC_RUN_ID",), ("SLURM_JOB_ID", "SLURM_STEP_ID"), ("FLUX_JOB_ID",))


def launch_id(environ: Optional[Mapping[str, str]] = None) -> str:
    """The launcher's id of this launch ('' where there is none)."""
    environ = os.environ if environ is None else environ
    for names in LAUNCH_VARS:
        if environ.get(names[0]):
            return ":".join(environ.get(name, "") for name in names)
    return ""


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class Plan:
    """What a run will write into its folder: ``options`` (flag -> value, the ones that change the outputs),
    the manifest (its path and the sha256 of its bytes), and ``outputs`` (the globs of what it writes, removed
    when a later run replaces this plan)."""

    command: str
    options: dict[str, str]
    manifest: str
    manifest_sha256: str
    outputs: tuple[str, ...] = ()
    launch: str = field(default_factory=launch_id)
    grows: bool = False  # a later run may bring another manifest with the same options (outputs kept per row)

    @classmethod
    def of(
        cls,
        command: str,
        options: Mapping[str, object],
        manifest: Path,
        outputs: tuple[str, ...],
        grows: bool = False,
    ) -> "Plan":
        """The plan of a run reading ``manifest`` with ``options``."""
        text = {name: str(value) for name, value in options.items()}
        manifest_path, digest = str(Path(manifest).resolve()), file_digest(Path(manifest))
        return cls(command, text, manifest_path, digest, tuple(outputs), grows=grows)

    @property
    def digest(self) -> str:
        """Hash of the command, the options and the manifest's bytes (not its path, not the launch)."""
        text = json.dumps([self.command, sorted(self.options.items()), self.manifest_sha256])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def record(self, rank: str) -> dict:
        """What ``.pecan.plan.json`` holds."""
        owner = owner_record()
        return {
            "digest": self.digest,
            "command": self.command,
            "options": self.options,
            "manifest": self.manifest,
            "manifest_sha256": self.manifest_sha256,
            "outputs": list(self.outputs),
            "launch": self.launch,
            "written_by": f"{rank}, host {owner['host']}, pid {owner['pid']}",
        }


def read_plan(out_dir: Path) -> Optional[dict]:
    """The folder's plan record; None when there is none; a damaged one is a ConfigError naming it."""
    path = out_dir / PLAN_NAME
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise ConfigError(f"{path} cannot be read ({err}); remove it, or rerun with --replace") from None
    if not isinstance(record, dict) or not isinstance(record.get("digest"), str):
        raise ConfigError(f"{path} is not a plan record; remove it, or rerun with --replace")
    return record


def differences(record: dict, plan: Plan) -> list[tuple[str, str, str]]:
    """(what, value there, value here) for every option, and the manifest, that differ."""
    there, here = record.get("options", {}), plan.options
    found = [(name, str(there.get(name, "(not set)")), here.get(name, "(not set)")) for name in sorted({*there, *here})]
    found = [item for item in found if item[1] != item[2]]
    if record.get("manifest_sha256") != plan.manifest_sha256:
        found.append(
            (
                MANIFEST,
                f"{record.get('manifest', '?')} (sha256 {str(record.get('manifest_sha256', '?'))[:12]})",
                f"{plan.manifest} (sha256 {plan.manifest_sha256[:12]})",
            )
        )
    if record.get("command") != plan.command:
        found.insert(0, ("the command", str(record.get("command")), plan.command))
    return found


def _describe(found: list[tuple[str, str, str]]) -> str:
    return "; ".join(f"{what} {there} there, {here} here" for what, there, here in found)


def disagreement(out_dir: Path, record: dict, plan: Plan) -> ConfigError:
    """The error for a rank whose plan is not the one its launch recorded."""
    return ConfigError(
        f"{plan.command}: the ranks of this run disagree on the plan of --out {out_dir}: "
        f"{_describe(differences(record, plan))} (recorded by {record.get('written_by', '?')}); "
        "give every rank the same options and manifest"
    )


def another_plan(out_dir: Path, record: dict, plan: Plan) -> ConfigError:
    """The error for a run into a folder that holds another plan's outputs."""
    return ConfigError(
        f"{plan.command}: --out {out_dir} holds the outputs of another plan: {_describe(differences(record, plan))}; "
        "rerun with --replace to remove them and write this plan's, rerun with the earlier options to resume "
        "it, or choose another --out"
    )


def _create(path: Path, record: dict) -> bool:
    """Write ``record`` at ``path`` only if no plan is there (link of a complete temp file); False if one is."""
    temp = path.with_name(f"{path.name}.{os.getpid()}.{time.monotonic_ns()}.new")
    temp.write_text(json_text(record))
    try:
        os.link(temp, path)
    except FileExistsError:
        return False
    finally:
        temp.unlink(missing_ok=True)
    return True


def remove_outputs(out_dir: Path, record: dict) -> list[Path]:
    """Delete what an earlier plan listed in its ``outputs`` (files and folders), and the rank records."""
    removed = []
    for pattern in [*record.get("outputs", []), ".ranks"]:
        for path in sorted(out_dir.glob(pattern)):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def settle_plan(out_dir: Path, plan: Plan, rank: int, rank_name: str, replace: bool) -> str:
    """Compare this rank's plan with the folder's (see the module docstring); returns what happened:
    'new', 'same', 'grown' or 'replaced'. Rank 0 calls it with the lock held."""
    path = out_dir / PLAN_NAME
    mine = plan.record(rank_name)
    deadline = time.monotonic() + REPLACE_WAIT_S
    while True:
        record = read_plan(out_dir)
        if record is None:
            if _create(path, mine):
                return "new"
            continue
        if record["digest"] == plan.digest:
            return "same"
        if plan.launch and record.get("launch") == plan.launch:
            raise disagreement(out_dir, record, plan)
        if plan.grows and [what for what, _, _ in differences(record, plan)] == [MANIFEST]:
            if rank == 0:
                write_text(path, json_text(mine))
                log.info("%s: another manifest with the same options: finished complexes are reused", out_dir)
            return "grown"
        if not replace:
            raise another_plan(out_dir, record, plan)
        if rank == 0:
            removed = remove_outputs(out_dir, record)
            write_text(path, json_text(mine))
            log.warning(
                "--replace: removed %d output(s) of the earlier plan in %s (%s)",
                len(removed),
                out_dir,
                _describe(differences(record, plan)),
            )
            return "replaced"
        if time.monotonic() > deadline:  # rank 0 never recorded this plan
            raise ConfigError(
                f"{plan.command}: rank 0 did not record this run's plan in {path} within {REPLACE_WAIT_S:g} s; "
                "start rank 0 with the same options and --replace"
            )
        time.sleep(0.5)


@dataclass
class Ownership:
    """A rank's hold on its output folder: the lock (rank 0 only) and what settling the plan did."""

    lock: Optional[RunLock]
    outcome: str

    def release(self) -> None:
        """Give the lock back (rank 0)."""
        if self.lock is not None:
            self.lock.release()


def own_folder(
    out_dir: Path, plan: Plan, rank: int = 0, rank_name: str = "rank 0 of 1", replace: bool = False
) -> Ownership:
    """Lock the folder (rank 0; OutDirInUse naming the live holder) and settle the plan; ConfigError when the
    plan differs. Call ``release`` on the result when done."""
    out_dir = Path(out_dir)
    check_out_dir(out_dir, "--out")
    lock = None
    if rank == 0:
        folder = Folder(option="--out", stale_option=f"the {STALE_MINUTES:g} min limit of a lock", force_flag="")
        lock = RunLock(out_dir, STALE_MINUTES * 60.0, folder=folder).acquire()
    try:
        outcome = settle_plan(out_dir, plan, rank, rank_name, replace)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    return Ownership(lock, outcome)
