"""`pecan score [CHECKPOINT] --receptor R.pdb --poses poses.sdf [--crystal X.sdf] --out scored.sdf`: docking
output in, scored poses out, no YAML and no shards to manage. Without CHECKPOINT the shipped pretrained model
scores (``pecan/pretrained``: trained on the public redocked corpus; MODEL_CARD.md beside it).

The poses are converted with the converter's featurisation (``pecan.convert``, the `convert` extra) and
scored in memory like `pecan predict` scores shards (the checkpoint's model and sample settings; see
``pecan.scoring.poses``), and written back as SDF, each complex's poses sorted by score with the SD properties
``pecan_score`` and ``pecan_rank`` (and ``rmsd``/``label`` when a crystal ligand is given). scores.csv and
the metrics JSON go beside the SDF, all renamed into place together. ``--manifest M.csv`` scores many complexes
(the converter's manifest). mol2, PDB and PDBQT poses are written back as SDF; a mol2 or PDB pose's docking
score comes from ``--scores-csv``, a PDBQT pose's from its ``REMARK VINA RESULT`` line. The command line is
checked before the model loads (``pecan.scoring.invocation``): a mistake exits 2 at once.
"""

from __future__ import annotations

import argparse
import logging

from pecan.commands import add_allow_option, add_progress_option, progress_mode


def parse_args(argv=None, prog: str | None = None) -> argparse.Namespace:
    """Command line: a checkpoint, one complex's files or a manifest, where the scored poses go."""
    parser = argparse.ArgumentParser(
        prog=prog, description="Score docked poses (SDF, mol2, PDB, Vina PDBQT) with a checkpoint."
    )
    parser.add_argument(
        "checkpoint",
        nargs="*",
        default=[],
        help="a checkpoint of a training run (e.g. RUN/checkpoints/best.pt); two or more score as an ensemble "
        "(each pose's score the mean of their probabilities); default: the shipped pretrained model",
    )
    parser.add_argument("--receptor", help="receptor PDB file")
    parser.add_argument(
        "--poses",
        help="docked poses: a multi-record SDF or mol2, a ligand PDB, Vina's output PDBQT, or a directory of them",
    )
    parser.add_argument("--crystal", help="crystal ligand (SDF, mol2 or PDB): adds rmsd, label and metrics")
    parser.add_argument("--complex-id", help="name of the complex (default: the poses file's stem)")
    parser.add_argument(
        "--score-property",
        help="SD property holding each pose's docking score (default: the one the checkpoint was trained with; "
        "docking_score for an older checkpoint whose model takes docking scores)",
    )
    parser.add_argument(
        "--scores-csv",
        help="a CSV of each pose's docking score (for mol2/PDB poses, or other scores): a 'record' (number in its "
        "file, from 1) or 'title' column, a 'file' column when several poses files are scored, and --score-column",
    )
    parser.add_argument("--score-column", help="the --scores-csv column holding the score (default docking_score)")
    parser.add_argument("--manifest", help="converter manifest CSV: many complexes (instead of --receptor/--poses)")
    parser.add_argument(
        "--out",
        required=True,
        help="the scored SDF; X.csv (scores), X.failures.csv and X.metrics.json go beside it",
    )
    parser.add_argument(
        "--pocket-radius",
        type=float,
        default=8.0,
        help="receptor atoms kept around each pose at conversion (Angstrom, default 8)",
    )
    parser.add_argument(
        "--group-by",
        choices=("molecule", "file", "name"),
        default="molecule",
        help="what one ligand (ranked on its own) is: 'molecule' (default), each run of consecutive records of one "
        "molecule (title and heavy-atom formula); 'file', every record of a poses file; 'name', each run of "
        "consecutive records with the same title",
    )
    parser.add_argument(
        "--receptor-hydrogens",
        choices=("add", "keep"),
        default="add",
        help="a receptor without hydrogens: 'add' them with Open Babel where installed, as the shipped model's "
        "training receptors were prepared (default); 'keep' it as given (a warning either way when not added)",
    )
    parser.add_argument(
        "--docking-weight",
        type=float,
        default=None,
        metavar="W",
        help="rank each ligand's poses by z(model logit) + W * z(-docking score), z standardised over the "
        "ligand's poses (pecan_consensus beside pecan_score; docs/scoring.md); 0: the model alone; default: the "
        "shipped model's weight without CHECKPOINT, else 0",
    )
    parser.add_argument(
        "--batch-size", type=int, default=None, help="graphs per forward pass (default 16; scores do not depend on it)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="torch threads of this process (default: OMP_NUM_THREADS when set, else 1: a pose's graph is too "
        "small to share; use one process per core, under a launcher, to use more cores)",
    )
    add_progress_option(parser)
    add_allow_option(parser, "score with a pinned setting that differs from the trained one")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default auto)")
    return parser.parse_args(argv)


def quiet_third_party() -> None:
    """Silence what the conversion's libraries say on import that concerns no scoring: MDAnalysis' note that
    netCDF4 is missing (AMBER trajectories are never written) and its deprecation of a module ProLIF imports."""
    import warnings

    logging.getLogger("MDAnalysis").setLevel(logging.ERROR)
    try:  # its import puts its own warning filters first: ours go in after it
        import MDAnalysis  # noqa: F401
    except ImportError:  # no convert extra: scoring says so itself
        return
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"MDAnalysis(\.|$)")


def request(args: argparse.Namespace):
    """The checked request of ``args`` (pecan.scoring.poses.ScoreRequest); without a checkpoint, the shipped one."""
    from pecan.scoring.invocation import check_request

    check_request(args)  # before the model loads and before torch is imported
    from pecan.runtime.keywords import same_named
    from pecan.scoring.poses import ScoreRequest

    args.batch_size = args.batch_size or 0
    if not args.checkpoint:
        from pecan.pretrained import default_checkpoints, default_docking_weight

        args.checkpoint = [str(path) for path in default_checkpoints()]
        if args.docking_weight is None:
            args.docking_weight = default_docking_weight()
        logging.getLogger("pecan.score").info(
            "scoring with the shipped model %s (its card: MODEL_CARD.md beside it)", ", ".join(args.checkpoint)
        )
    args.docking_weight = 0.0 if args.docking_weight is None else args.docking_weight
    args.checkpoint = tuple(args.checkpoint)
    args.progress = progress_mode(args)
    return ScoreRequest(**same_named(args, ScoreRequest, allow=tuple(args.allow)))


def main(argv=None, prog: str | None = None) -> int:
    """Convert, score, write the scored SDF under the run harness; exit 0, 2 for a wrong invocation, 1 for bad
    inputs."""
    args = parse_args(argv, prog)
    quiet_third_party()
    from pecan.engine.harness import LABEL_FORMAT, run

    return run(lambda: job(args), console_format=LABEL_FORMAT, quiet_ranks=False)


def job(args: argparse.Namespace):
    """The scoring job of ``args`` (``pecan.scoring.poses.score_job``), after its checks."""
    scored = request(args)
    from pecan.scoring.memory import StageClock
    from pecan.scoring.poses import score_job

    return score_job(scored, StageClock())
