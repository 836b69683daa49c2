"""One complex redocked with AutoDock Vina: poses SDF (score as an SD property) and a record of what was done."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pecan.redock import prepare
from pecan.runtime.errors import RedockError

SCORE_PROPERTY = "docking_score"
OLD_RECORD_KEYS = {"best_score": "best_docking_score"}
"""Keys of a record written before their rename (old -> today's), read under today's names."""


@dataclass(frozen=True)
class DockOptions:
    """Settings shared by every complex of a run."""

    exhaustiveness: int = 8
    n_poses: int = 20
    # Vina's default (3 kcal/mol) often returns far fewer than n_poses; a rescorer needs the wrong poses too.
    energy_range: float = 10.0
    box_padding: float = 4.0
    box_size: float = 0.0
    seed: int = 1
    cpu: int = 1
    scoring: str = "vina"
    # Seconds one complex's Vina search may take (0: no limit); not part of a finished complex's key.
    timeout: float = 0.0

    def identity(self) -> dict:
        """The settings that change the poses (what a finished complex's key covers)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "timeout"}


@dataclass(frozen=True)
class DockJob:
    """One manifest row and where its outputs go."""

    complex_id: str
    receptor: Path
    crystal_ligand: Path
    out_dir: Path
    options: DockOptions
    seed: int | None = None

    @property
    def poses_path(self) -> Path:
        """The docked poses."""
        return self.out_dir / "poses" / f"{self.complex_id}.sdf"

    @property
    def record_path(self) -> Path:
        """Written after the poses: a complex with a record of the same key is finished."""
        return self.out_dir / "records" / f"{self.complex_id}.json"

    @property
    def scratch(self) -> Path:
        """The prefix of the search's temporary folder (a stop that kills the search leaves it; it is removed
        when the complex is recorded as interrupted)."""
        return self.out_dir / "receptors" / f".search-{self.complex_id}-"

    @property
    def complex_seed(self) -> int:
        """The manifest's seed, else one derived from the run seed and the complex id (stable under reordering;
        never 0, which Vina takes as 'pick a random seed')."""
        if self.seed is not None:
            return int(self.seed)
        return 1 + (self.options.seed + zlib.crc32(self.complex_id.encode())) % (2**31 - 2)

    @property
    def key(self) -> str:
        """Hash of the input files' contents, the options and the seed."""
        digest = hashlib.sha256()
        for path in (self.receptor, self.crystal_ligand):
            digest.update(path.read_bytes() if path.exists() else b"missing")
        digest.update(json.dumps([self.options.identity(), self.complex_seed], sort_keys=True).encode())
        return digest.hexdigest()[:16]


def finished(job: DockJob) -> dict | None:
    """The record of a finished complex with the same inputs, else None."""
    try:
        record = json.loads(job.record_path.read_text())
    except (OSError, ValueError):
        return None
    if record.get("key") != job.key or record.get("status") != "ok" or not job.poses_path.exists():
        return None
    for old, new in OLD_RECORD_KEYS.items():
        if old in record and new not in record:
            record[new] = record.pop(old)
    return record


def vina_in_child(receptor_pdbqt: Path, ligand: str, box, options, seed: int, scratch: Path | None = None):
    """Vina's poses (PDBQT text) and their scores from ``python -m pecan.redock.child``, killed after
    ``options.timeout`` s (0: no limit); RedockError on timeout or failure.

    Always a child process: Vina's search holds this process in C++ for minutes, where a stop signal could not
    be acted on; here the signal's handler runs at once and ``subprocess.run`` kills the search on the way out.
    """
    scratch = scratch or receptor_pdbqt.with_name(f".search-{receptor_pdbqt.stem}-")
    with tempfile.TemporaryDirectory(dir=scratch.parent, prefix=scratch.name) as tmp:
        request = Path(tmp) / "request.json"
        request.write_text(
            json.dumps(
                {
                    "receptor": str(receptor_pdbqt),
                    "ligand": ligand,
                    "center": list(box.center),
                    "size": list(box.size),
                    "options": dataclasses.asdict(options),
                    "seed": seed,
                    "out": str(Path(tmp) / "result.json"),
                    "parent": os.getpid(),
                }
            )
        )
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pecan.redock.child", str(request)],
                capture_output=True,
                text=True,
                timeout=options.timeout or None,
            )
        except subprocess.TimeoutExpired:
            raise RedockError(f"timed out: Vina's search ran past --timeout {options.timeout:g} s") from None
        if done.returncode < 0:
            raise RedockError(f"Vina's search was ended by {_signal_name(-done.returncode)}")
        if done.returncode != 0:
            raise RedockError(f"Vina's search failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
        result = json.loads((Path(tmp) / "result.json").read_text())
    return result["poses"], np.asarray(result["scores"], dtype=float)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def vina_search(receptor_pdbqt: Path, ligand: str, box: prepare.Box, options: DockOptions, seed: int):
    """Vina's search in this process."""
    try:
        from vina import Vina
    except ImportError as err:
        raise ImportError("redocking needs the dock extra (vina): pip install -e '.[dock]'") from err
    engine = Vina(sf_name=options.scoring, cpu=options.cpu, seed=seed, verbosity=0)
    engine.set_receptor(str(receptor_pdbqt))
    engine.set_ligand_from_string(ligand)
    engine.compute_vina_maps(center=list(box.center), box_size=list(box.size))
    engine.dock(exhaustiveness=options.exhaustiveness, n_poses=options.n_poses)
    text = engine.poses(n_poses=options.n_poses, energy_range=options.energy_range)
    energies = engine.energies(n_poses=options.n_poses, energy_range=options.energy_range)
    return text, np.asarray(energies)[:, 0]


def pose_molecules(pdbqt_text: str, scores: np.ndarray, complex_id: str) -> list:
    """One RDKit molecule per docked pose, named <complex>_pose<k>, with the score as SD property."""
    from meeko import PDBQTMolecule, RDKitMolCreate
    from rdkit import Chem

    docked = RDKitMolCreate.from_pdbqt_mol(PDBQTMolecule(pdbqt_text, skip_typing=True))
    if not docked or docked[0] is None:
        raise RedockError("meeko cannot rebuild RDKit molecules from Vina's poses")
    conformers = list(docked[0].GetConformers())
    if len(conformers) != len(scores):
        raise RedockError(f"{len(conformers)} poses but {len(scores)} scores from Vina")
    poses = []
    for k, (conformer, score) in enumerate(zip(conformers, scores), start=1):
        mol = Chem.Mol(docked[0])
        mol.RemoveAllConformers()
        mol.AddConformer(Chem.Conformer(conformer), assignId=True)
        mol.SetProp("_Name", f"{complex_id}_pose{k}")
        mol.SetProp(SCORE_PROPERTY, f"{float(score):.3f}")
        mol.SetProp("pose_rank", str(k))
        poses.append(mol)
    return poses


def write_poses(path: Path, poses: list) -> None:
    """Multi-record SDF written atomically."""
    from rdkit import Chem

    from pecan.runtime.fileio import atomic_path

    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        writer = Chem.SDWriter(str(tmp))
        for mol in poses:
            writer.write(mol)
        writer.close()


def _dock(job: DockJob) -> dict:
    for path, what in ((job.receptor, "receptor"), (job.crystal_ligand, "crystal ligand")):
        if not path.exists():
            raise RedockError(f"{what} {path}: file not found")
    crystal = prepare.read_crystal(job.crystal_ligand)
    box = prepare.box_around(
        prepare.checked_xyz(crystal, job.crystal_ligand), job.options.box_padding, job.options.box_size
    )
    start = prepare.start_conformer(crystal, job.complex_seed)
    receptors = job.out_dir / "receptors"
    receptors.mkdir(parents=True, exist_ok=True)
    receptor = prepare.receptor_pdbqt(job.receptor, receptors / f"{job.complex_id}.pdbqt")
    ligand = prepare.ligand_pdbqt(start)
    text, scores = vina_in_child(receptor, ligand, box, job.options, job.complex_seed, job.scratch)
    poses = pose_molecules(text, scores, job.complex_id)
    write_poses(job.poses_path, poses)
    return {
        "poses": len(poses),
        "best_docking_score": float(scores.min()),
        "box_center": list(box.center),
        "box_size": list(box.size),
        "start_rmsd_to_crystal": prepare.start_rmsd(start, crystal),
    }


def interrupted(job: DockJob, signal_name: str) -> dict:
    """The record of a complex a stop signal cut short (written, so that its state is on disk; a rerun redocks
    it), or its finished record where the search had finished before the stop."""
    record = finished(job)
    if record is not None:
        return {**record, "reused": False}
    remove_leftovers(job)
    record = {
        "complex_id": job.complex_id,
        "key": job.key,
        "seed": job.complex_seed,
        "options": job.options.identity(),
        "status": "interrupted",
        "reason": f"interrupted by {signal_name} before it finished; a rerun redocks it",
    }
    _write_record(job, record)
    return {**record, "reused": False}


def remove_leftovers(job: DockJob) -> None:
    """What a search or receptor preparation killed mid-way leaves: its temporary folder and half-written
    poses or record (also called for each complex of a rank's share at its start: a killed rank's own)."""
    folders = [
        *job.scratch.parent.glob(job.scratch.name + "*"),
        *job.scratch.parent.glob(f".prepare-{job.complex_id}-*"),
    ]
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    for path in (job.poses_path, job.record_path):
        for partial in path.parent.glob(f".{path.name}.*.tmp"):
            partial.unlink(missing_ok=True)


def _write_record(job: DockJob, record: dict) -> None:
    from pecan.runtime.fileio import write_text

    job.record_path.parent.mkdir(parents=True, exist_ok=True)
    write_text(job.record_path, json.dumps(record, indent=1))


def run_job(job: DockJob) -> dict:
    """Redock one complex unless finished; every problem becomes a failed record, never an exception."""
    record = finished(job)
    if record is not None:
        return {**record, "reused": True}
    began = time.perf_counter()
    record = {
        "complex_id": job.complex_id,
        "key": job.key,
        "seed": job.complex_seed,
        "options": job.options.identity(),
    }
    try:
        record.update(_dock(job), status="ok", reason="")
    except RedockError as err:
        record.update(status="failed", reason=str(err))
    except ImportError:
        raise  # a missing extra is the run's problem, not this complex's
    except Exception as err:  # noqa: BLE001 - a toolkit error on odd input must not stop the other complexes
        record.update(status="failed", reason=f"unexpected {type(err).__name__}: {err}")
    record["seconds"] = round(time.perf_counter() - began, 2)
    _write_record(job, record)
    return {**record, "reused": False}
