"""What `pecan score` checks of its invocation before the model is loaded (and before torch is imported):
its numbers, that each file it names exists and is what its option says, and that its outputs can be written.
A mistake is a ConfigError (exit 2) naming the option and the file, found in well under a second.

- ``--receptor``: an existing file, not a ligand format (SDF, mol2), nor a PDBQT: AutoDock's receptor PDBQT
  keeps only polar hydrogens and writes AutoDock atom types where a PDB has elements, so it is refused at once
  with the Open Babel command that writes it as a PDB with every hydrogen, as the model was trained.
- ``--poses``: an existing file of a poses format (``POSE_SUFFIXES``) or a directory; not the receptor; a PDB
  or PDBQT that holds a protein (``RECEPTOR_RESIDUES`` amino-acid residues or more) is a receptor given as
  poses, and so is a PDBQT without a ligand's records (``ROOT``/``TORSDOF``, ``REMARK VINA RESULT``). A PDBQT
  needs Meeko's ``REMARK SMILES`` lines (``pecan.scoring.pdbqt``).
- ``--crystal``, ``--manifest``, a checkpoint given on the command line: existing files.
- ``--scores-csv``: read and checked (``pecan.scoring.score_table``).
- ``--out`` and the files beside it: writable (``pecan.runtime.outputs.check_writable``).
"""

from __future__ import annotations

from pathlib import Path

from pecan.runtime.errors import ConfigError

POSE_SUFFIXES = (".sdf", ".sd", ".mol2", ".pdb", ".pdbqt")
"""Formats of a poses file."""
DIRECTORY_SUFFIXES = (".sdf", ".sd", ".mol2", ".pdbqt")
"""The files a ``--poses`` directory scores (not .pdb: a receptor's file is often beside the poses)."""
LIGAND_ONLY_SUFFIXES = (".sdf", ".sd", ".mol2")
RECEPTOR_RESIDUES = 20
"""Amino-acid residues from which a PDB or PDBQT given as poses is taken for a receptor (a peptide ligand
has fewer)."""
AMINO_ACIDS = frozenset(
    "ALA ARG ASN ASP CYS GLN GLU GLY HIS ILE LEU LYS MET PHE PRO SER THR TRP TYR VAL HID HIE HIP CYX MSE".split()
)
COMMAND = "pecan score"


def checkpoint_paths(checkpoint) -> list[Path]:
    """The checkpoint (a path), or every member of an ensemble (a sequence of them), as paths; none for None."""
    if checkpoint is None:
        return []
    return [Path(checkpoint)] if isinstance(checkpoint, (str, Path)) else [Path(c) for c in checkpoint]


def checkpoint_fields(checkpoint) -> dict[str, str | list[str]]:
    """How the metrics JSON names what scored: ``checkpoint`` (one) or ``checkpoints`` (an ensemble)."""
    paths = [str(path) for path in checkpoint_paths(checkpoint)]
    return {"checkpoint": paths[0]} if len(paths) == 1 else {"checkpoints": paths}


def check_request(args) -> None:
    """Every check above, in the order a user would fix them; ConfigError at the first mistake."""
    if args.batch_size is not None and args.batch_size < 1:
        raise ConfigError(f"{COMMAND}: --batch-size must be at least 1, got {args.batch_size}")
    if args.threads < 0:
        raise ConfigError(f"{COMMAND}: --threads must be positive, got {args.threads}")
    for checkpoint in checkpoint_paths(args.checkpoint):
        existing_file("the checkpoint", str(checkpoint))
    if args.manifest:
        existing_file("--manifest", args.manifest)
    if args.receptor:
        check_receptor(Path(existing_file("--receptor", args.receptor)))
    if args.poses:
        check_poses(Path(args.poses), Path(args.receptor) if args.receptor else None)
    if args.crystal:
        existing_file("--crystal", args.crystal)
    if args.scores_csv:
        from pecan.scoring.score_table import ScoreTable

        ScoreTable.read(Path(existing_file("--scores-csv", args.scores_csv)), args.score_column)
    check_out(Path(args.out))


def existing_file(option: str, path: str) -> str:
    """``path`` when it is an existing file; else ConfigError naming the option and what is there."""
    target = Path(path)
    if not target.exists():
        raise ConfigError(f"{COMMAND}: {option} {path}: file not found")
    if not target.is_file():
        raise ConfigError(f"{COMMAND}: {option} {path} is a directory, not a file")
    return path


def check_receptor(path: Path, where: str = "--receptor") -> None:
    """A receptor in a ligand format is a mix-up of --receptor and --poses; a PDBQT receptor is refused with
    the command that converts it (``where``: how the message names it, a manifest's row for one)."""
    if path.suffix.lower() == ".pdbqt":
        raise ConfigError(
            f"{COMMAND}: {where} {path} is a PDBQT (AutoDock's receptor format: polar hydrogens only, AutoDock "
            f"atom types instead of elements): give the receptor as a PDB with every hydrogen, as the model was "
            f"trained on, e.g. obabel -ipdbqt {path} -opdb -h -O {path.with_suffix('.pdb').name} "
            f"(or the PDB the PDBQT was prepared from)"
        )
    if path.suffix.lower() in LIGAND_ONLY_SUFFIXES:
        raise ConfigError(
            f"{COMMAND}: --receptor {path} is a {path.suffix} file, a ligand format: the receptor is a PDB "
            f"(were --receptor and --poses swapped?)"
        )


def check_poses(path: Path, receptor: Path | None) -> None:
    """--poses: an existing poses file or directory, not the receptor nor a receptor's file."""
    if not path.exists():
        raise ConfigError(f"{COMMAND}: --poses {path}: file or directory not found")
    if path.is_dir():
        if not any(p.is_file() and p.suffix.lower() in DIRECTORY_SUFFIXES for p in path.iterdir()):
            raise ConfigError(f"{COMMAND}: --poses {path} is a directory without {', '.join(DIRECTORY_SUFFIXES)} files")
        return
    suffix = path.suffix.lower()
    if suffix not in POSE_SUFFIXES:
        raise ConfigError(
            f"{COMMAND}: --poses {path}: unsupported format {suffix or '(no suffix)'!r}; "
            f"poses are {', '.join(POSE_SUFFIXES)}"
        )
    if receptor is not None and path.resolve() == receptor.resolve():
        raise ConfigError(f"{COMMAND}: --poses {path} is the receptor (--receptor {receptor})")
    if suffix in (".pdb", ".pdbqt"):
        check_not_receptor(path)
    if suffix == ".pdbqt":
        from pecan.scoring.pdbqt import check_readable

        check_readable(path)


def check_not_receptor(path: Path) -> None:
    """ConfigError when a PDB or PDBQT given as poses holds a protein, or a PDBQT no ligand."""
    residues, ligand_records = set(), False
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.startswith(("ATOM", "HETATM")) and line[17:20].strip() in AMINO_ACIDS:
                residues.add(line[21:27])
            elif line.startswith(("ROOT", "TORSDOF", "REMARK VINA RESULT")):
                ligand_records = True
    if len(residues) >= RECEPTOR_RESIDUES:
        raise ConfigError(
            f"{COMMAND}: --poses {path} holds a protein ({len(residues)} amino-acid residues): it looks like a "
            f"receptor; give it as --receptor and the docked ligand poses as --poses"
        )
    if path.suffix.lower() == ".pdbqt" and not ligand_records:
        raise ConfigError(
            f"{COMMAND}: --poses {path} is a PDBQT without a ligand's records (no ROOT, TORSDOF or REMARK VINA "
            f"RESULT): a receptor PDBQT? The poses are Vina's output PDBQT"
        )


def check_out(out: Path) -> None:
    """--out and the files written beside it can be written (before any work)."""
    from pecan.runtime.outputs import check_writable
    from pecan.scoring.output import output_paths

    check_writable(COMMAND, [("--out", out)])  # first: a directory ('.') has no name to put a suffix on
    check_writable(COMMAND, output_paths(out).items())
