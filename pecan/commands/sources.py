"""`pecan sources pdbbind|crossdocked ...`: the field's training sets, as distributed, -> PECAN's manifests.

``pecan sources pdbbind DIR [DIR ...] --out MANIFEST.csv`` writes a `pecan redock` manifest (a `pecan convert`
manifest with ``--poses``) with the INDEX files' columns, and its excluded rows beside it.
``pecan sources crossdocked TYPES [TYPES ...] --root DATA --out DIR`` writes DIR/manifest.csv (a `pecan convert`
manifest), DIR/poses/, DIR/poses.csv, DIR/splits/ and DIR/excluded.csv.
Both leave out the reserved test proteins and say how many they removed. See docs/own-data.md.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from pathlib import Path

from pecan.runtime.errors import ConfigError, OutDirInUse


def _pdbbind_parser(commands) -> None:
    parser = commands.add_parser("pdbbind", help="a PDBbind-style folder -> a redock (or convert) manifest")
    parser.add_argument("roots", type=Path, nargs="+", help="folders of <id>/<id>_protein.pdb, ..._ligand.sdf")
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the manifest CSV; its left-out rows go beside it (excluded.csv for manifest.csv, NAME.excluded.csv "
        "for NAME.csv)",
    )
    parser.add_argument(
        "--index",
        type=Path,
        action="append",
        default=[],
        help="an INDEX file (repeatable; default: INDEX_*PL*, INDEX_refined*, INDEX_core* in ROOT/index/ or ROOT/)",
    )
    parser.add_argument("--receptor", choices=("protein", "pocket"), default="protein", help="<id>_protein.pdb")
    parser.add_argument(
        "--poses",
        default="",
        help="poses file per complex, relative to its folder, {id} for the PDB code (e.g. '{id}_docked.sdf'): "
        "writes a convert manifest",
    )
    parser.add_argument("--score-property", default="", help="the poses' SD property holding the docking score")


def _crossdocked_parser(commands) -> None:
    parser = commands.add_parser("crossdocked", help="GNINA types files (CrossDocked2020) -> a convert manifest")
    parser.add_argument("types", type=Path, nargs="+", help="types files (fold files: ...train0.types, ...test0.types)")
    parser.add_argument(
        "--root", type=Path, help="the folder the types files' paths are relative to (default: the first types file's)"
    )
    parser.add_argument("--out", type=Path, required=True, help="output folder (manifest.csv, poses/, ...)")
    parser.add_argument(
        "--columns",
        default="label,affinity,rmsd",
        help="names of the numbers before the file names (default label,affinity,rmsd; DenseNet files: label,affinity)",
    )
    parser.add_argument(
        "--check-rmsd", action="store_true", help="recompute each pose's RMSD to the crystal ligand and compare"
    )
    parser.add_argument(
        "--index",
        type=Path,
        action="append",
        default=[],
        help="a PDBbind name index (INDEX_general_PL_name.*): the reserved filter also matches its UniProt IDs "
        "and protein names (repeatable)",
    )
    parser.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="local: read every complex in this process (default); dask: chunks of 100 complexes to the next free "
        "worker of the Dask cluster of --scheduler-file, the most lines first (the dist extra)",
    )
    parser.add_argument("--scheduler-file", type=Path, help="with --engine dask: the file `dask scheduler` wrote")


def parse_args(argv=None, prog: str | None = None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0].split(": ", 1)[1])
    commands = parser.add_subparsers(dest="source", required=True)
    _pdbbind_parser(commands)
    _crossdocked_parser(commands)
    return parser.parse_args(argv)


def run_pdbbind(args: argparse.Namespace) -> int:
    """Read the folders, write the manifest and excluded.csv, print the summary."""
    from pecan.sources.pdbbind import PdbbindOptions, default_indexes, merged_indexes, names_known, read_pdbbind
    from pecan.sources.selection import summary_line, write_selection

    missing = [str(root) for root in args.roots if not root.is_dir()]
    if missing:
        raise ConfigError(f"not a folder: {', '.join(missing)}")
    indexes = args.index or [p for root in args.roots for p in default_indexes(root)]
    options = PdbbindOptions(args.receptor, args.poses, args.score_property)
    merged = merged_indexes(indexes)
    selection = read_pdbbind(args.roots, merged, options, args.out.parent)
    columns = ("complex_id", "receptor", *(("poses", "score_property") if args.poses else ()), "crystal_ligand")
    check_pdbbind_outputs(args.out, indexes, selection)
    excluded = write_selection(selection, args.out, columns)
    print(summary_line("pdbbind", selection, args.out, excluded))
    if not indexes:
        print("note: no INDEX file: no affinities, and the reserved filter matched by PDB entry only")
    elif not names_known(merged):
        print(
            "note: no name index (INDEX_general_PL_name.*, --index): the reserved filter matched by PDB entry only, "
            "not by UniProt ID or protein name"
        )
    else:
        unnamed = [
            row["complex_id"] for row in selection.rows if "uniprot" not in merged.get(row["complex_id"].lower(), {})
        ]
        if unnamed:
            print(
                f"note: {len(unnamed)} complex(es) kept have no line in the name index (first: {unnamed[0]}): the "
                f"reserved filter matched them by PDB entry only"
            )
    return 0 if selection.rows else 1


def check_pdbbind_outputs(out: Path, indexes: list[Path], selection) -> None:
    """--out and its excluded rows' file beside it may be neither an INDEX file nor a file a kept complex reads
    (its receptor, crystal ligand, poses): ConfigError (exit 2) before anything is written."""
    from pecan.runtime import outputs
    from pecan.sources.selection import excluded_path

    base = out.parent
    inputs = [("an INDEX file", path) for path in indexes]
    for column in ("receptor", "crystal_ligand", "poses"):
        inputs += [(f"a {column} file", base / row[column]) for row in selection.rows if row.get(column)]
    written = [("--out", out), (f"its {excluded_path(out).name}", excluded_path(out))]
    outputs.check_outputs("pecan sources pdbbind", written, inputs)


@contextmanager
def folder_lock(out: Path):
    """Hold --out's lock while the reader writes there (pecan.runtime.dir_lock, the rules of training's
    out_dir): a second reader into a live run's folder is OutDirInUse (exit 2) naming it; a stale lock is taken over."""
    from pecan.runtime.dir_lock import Folder, RunLock

    lock = RunLock(out, 600.0, folder=Folder("--out", "the 10 min limit of a lock", "")).acquire()
    try:
        yield lock
    finally:
        lock.release()


def run_crossdocked(args: argparse.Namespace) -> int:
    """Read the types files, write the poses, manifest, splits and excluded.csv, print the summary."""
    from pecan.sources.crossdocked_run import CrossDockedOptions, read_crossdocked
    from pecan.sources.pdbbind import merged_indexes, names_known
    from pecan.sources.selection import summary_line

    missing = [str(path) for path in args.types if not path.is_file()]
    if missing:
        raise ConfigError(f"types file not found: {', '.join(missing)}")
    columns = tuple(c.strip() for c in args.columns.split(",") if c.strip())
    if not columns or columns[0] != "label":
        raise ConfigError(f"--columns must start with label, got {args.columns!r}")
    if (args.engine == "dask") != (args.scheduler_file is not None):
        raise ConfigError("--engine dask needs --scheduler-file, and --scheduler-file needs --engine dask")
    root = args.root or args.types[0].parent
    options = CrossDockedOptions(columns, args.check_rmsd, merged_indexes(args.index))
    engine = None
    if args.engine == "dask":
        from pecan.sources.crossdocked_jobs import dask_engine

        engine = dask_engine(args.scheduler_file)
    with folder_lock(args.out):
        selection, _, notes = read_crossdocked(args.types, root, args.out, options, engine)
    print(summary_line("crossdocked", selection, args.out / "manifest.csv", args.out / "excluded.csv"))
    print("\n".join(notes))
    if not names_known(options.names):
        print(
            "note: no PDBbind name index (--index INDEX_general_PL_name.*): the reserved filter matched by PDB "
            "entry and pocket folder (UniProt entry name) only, not by UniProt ID or protein name"
        )
    return 0 if selection.rows else 1


def main(argv=None, prog: str | None = None) -> int:
    """Run one reader; 2 for a bad invocation or unreadable index/types file, 1 when no complex is usable."""
    args = parse_args(argv, prog)
    try:
        return run_pdbbind(args) if args.source == "pdbbind" else run_crossdocked(args)
    except ImportError as err:
        print(f"error: {err} (pip install -e '.[convert]')", file=sys.stderr)
        return 2
    except (OSError, ValueError, OutDirInUse) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
