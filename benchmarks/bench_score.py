"""`pecan score` end to end (SDF in, scored SDF out) and per stage, beside GNINA 1.0's CNN scoring.

The poses are ProLIF's 9 bundled Vina poses (``pecan.convert.examples``) repeated to ``--poses`` records,
scored against ProLIF's Vina receptor without a crystal ligand, as plain docking output is. ``--layout``
``screen`` (the default) titles them as a virtual screen's SDF, ligand after ligand of 9 poses each
(``lig_<k>``), scored with ``--group-by name``; ``complex`` titles them ``pose_<k>``, one complex of all
poses. Each case runs in a fresh child process (``--child``), so its figures include start-up (imports) and
its peak RSS (``ru_maxrss``) is its own. Stages:

- ``startup``: from the child's process start to its imports of the scoring path (torch, RDKit,
  pecan.scoring) done;
- ``parse``: the poses SDF read, record by record (RDKit);
- ``load``: the checkpoint read, its config checked and the model built;
- ``receptor``: the receptor read, each ligand's pocket residues found, each distinct pocket cut and
  featurised and its interaction counter set up;
- ``interactions``: the interaction counts of each pose;
- ``features``: the rest of the conversion (ligand features, the pocket rows per pose, RMSD when a crystal);
- ``graph``: the index rows and sample fields of each chunk, pocket crop, radius edges (the data path's graph
  building);
- ``model``: batching and the model's forward passes;
- ``write``: scores CSV, failures, metrics JSON and the scored SDF.

With ``--gnina-python`` (the interpreter of ``studies/peers/.venv-gnina``, which runs
``python -m studies.peers.gnina_score`` from the repository root) GNINA's ``default2018`` single model and its
``default`` ensemble score the same poses in the same run, interleaved with PECAN round by round; the ensemble
scores the first ``--gnina-ensemble-poses`` of them (it costs ~10x the single model).

    python -m benchmarks.bench_score --checkpoint best.pt --poses 1000 10000 --rounds 2 \
        --gnina-python studies/peers/.venv-gnina/bin/python --threads 2 --out benchmarks/bench_score.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GNINA_SCORE = "studies.peers.gnina_score"  # a module run from ROOT: pecan is not installed in the GNINA environment
STAGES = ("startup", "parse", "load", "receptor", "interactions", "features", "graph", "model", "write")


def parse_args(argv=None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--checkpoint",
        required=True,
        nargs="+",
        help="a PECAN checkpoint (e.g. RUN/checkpoints/best.pt); several: `pecan score` scores with their ensemble",
    )
    parser.add_argument("--poses", type=int, nargs="+", default=[1000], help="pose counts to score")
    parser.add_argument(
        "--layout",
        choices=("screen", "complex"),
        default="screen",
        help="screen: ligands of 9 poses (--group-by name); complex: one complex of all poses",
    )
    parser.add_argument("--batch-size", type=int, default=0, help="pecan score --batch-size (0: its default)")
    parser.add_argument(
        "--docking-weight", type=float, default=0.0, help="pecan score --docking-weight (the shipped model's: 1)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds of every case")
    parser.add_argument("--work", default="/tmp/pecan-bench-score", help="inputs and outputs go here")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads of each PECAN process (pecan score --threads)"
    )
    parser.add_argument(
        "--ranks", type=int, default=0, help="also run pecan score as this many ranks (torchrun), wall only"
    )
    parser.add_argument("--gnina-threads", type=int, default=2, help="torch threads of GNINA (its fastest: all cores)")
    parser.add_argument("--gnina-python", default="", help="interpreter of the GNINA environment")
    parser.add_argument("--gnina-ensemble-poses", type=int, default=100, help="poses the ensemble scores")
    parser.add_argument("--gnina-max-poses", type=int, default=1000, help="largest case GNINA scores")
    parser.add_argument("--out", default="", help="results JSON")
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def write_poses(work: Path, count: int, layout: str = "screen") -> tuple[Path, Path]:
    """ProLIF's Vina poses repeated to ``count`` records (titles lig_<k> for the ligands of 9 poses of a
    screen, or pose_1..pose_N for one complex), and a one-row manifest."""
    from rdkit import Chem

    from pecan.convert.examples import prolif_data, vina_poses_with_scores

    work.mkdir(parents=True, exist_ok=True)
    mols = list(Chem.SDMolSupplier(str(vina_poses_with_scores(work / "vina9.sdf")), removeHs=False))
    poses = work / f"poses_{count}.sdf"
    writer = Chem.SDWriter(str(poses))
    for k in range(count):
        mol = Chem.Mol(mols[k % len(mols)])
        mol.SetProp("_Name", f"lig_{k // len(mols) + 1}" if layout == "screen" else f"pose_{k + 1}")
        writer.write(mol)
    writer.close()
    manifest = work / f"manifest_{count}.csv"
    receptor = prolif_data() / "vina" / "rec.pdb"
    manifest.write_text(f"complex_id,receptor,poses\nvina,{receptor},{poses}\n")
    return poses, manifest


def timed_method(clock, owner, name: str, stage: str) -> None:
    """Wrap ``owner.name`` so its wall time is added to ``stage``."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        with clock.timed(stage):
            return original(*args, **kwargs)

    setattr(owner, name, wrapper)


def child(args: argparse.Namespace) -> int:
    """One case in this process: score the poses, print the figures as one JSON line."""
    import psutil

    from pecan.scoring.featurise import GroupConverter, PocketCache, PreparedReceptor
    from pecan.scoring.memory import StageClock
    from pecan.scoring.poses import ScoreRequest, score_poses

    startup = time.time() - psutil.Process().create_time()  # interpreter start and imports
    clock = StageClock()
    timed_method(clock, PreparedReceptor, "pocket_residues", "receptor")
    timed_method(clock, PocketCache, "get", "receptor")
    timed_method(clock, GroupConverter, "receptor", "receptor")
    counts = GroupConverter.interaction_counts

    def timed_counts(*args):
        with clock.timed("interactions"):
            return counts(*args)

    GroupConverter.interaction_counts = staticmethod(timed_counts)
    work = Path(args.work)
    poses = work / f"poses_{args.child}.sdf"
    out = work / f"scored_{args.child}.sdf"
    receptor = work / "receptor.pdb"
    request = ScoreRequest(
        tuple(args.checkpoint),
        str(out),
        receptor=str(receptor),
        poses=str(poses),
        complex_id="vina",
        score_property="vina_score",
        device="cpu",
        group_by="name" if args.layout == "screen" else "file",
        batch_size=args.batch_size,
        progress="off",
        docking_weight=args.docking_weight,
    )
    started = time.perf_counter()
    code = score_poses(request, clock)
    seconds = dict(clock.seconds)
    seconds["features"] = seconds.pop("convert", 0.0) - seconds.get("receptor", 0.0) - seconds.get("interactions", 0.0)
    figures = {
        "poses": args.child,
        "exit": code,
        "seconds_in_process": time.perf_counter() - started,
        "stages": {"startup": startup, **{k: seconds.get(k, 0.0) for k in STAGES[1:]}},
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    print("BENCH " + json.dumps(figures), flush=True)
    return code


def run_pecan(args: argparse.Namespace, count: int) -> dict:
    """One child scoring ``count`` poses; its figures plus the wall time the parent saw."""
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "benchmarks.bench_score", "--checkpoint", *args.checkpoint, "--work", args.work]
    argv += [
        "--layout",
        args.layout,
        "--batch-size",
        str(args.batch_size),
        "--docking-weight",
        str(args.docking_weight),
    ]
    started = time.perf_counter()
    done = subprocess.run([*argv, "--child", str(count)], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    lines = [line for line in done.stdout.splitlines() if line.startswith("BENCH ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"pecan score of {count} poses failed ({done.returncode}): {done.stderr[-2000:]}")
    figures = json.loads(lines[-1][len("BENCH ") :])
    figures["wall_seconds"] = wall
    figures["poses_per_second"] = count / wall
    return figures


def run_pecan_ranks(args: argparse.Namespace, count: int) -> dict:
    """`pecan score` of ``count`` poses as ``--ranks`` processes under torchrun (one thread each): wall time."""
    work = Path(args.work)
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(args.ranks), "-m", "pecan", "score"]
    argv += [*args.checkpoint, "--receptor", str(work / "receptor.pdb"), "--poses", str(work / f"poses_{count}.sdf")]
    argv += ["--out", str(work / f"scored_ranks_{count}.sdf"), "--score-property", "vina_score", "--device", "cpu"]
    argv += ["--group-by", "name" if args.layout == "screen" else "file", "--progress", "off", "--threads", "1"]
    argv += ["--complex-id", "vina", "--docking-weight", str(args.docking_weight)]
    argv += ["--batch-size", str(args.batch_size)] if args.batch_size else []
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"pecan score on {args.ranks} ranks failed ({done.returncode}): {done.stderr[-2000:]}")
    return {"poses": count, "ranks": args.ranks, "wall_seconds": wall, "poses_per_second": count / wall}


def run_gnina(args: argparse.Namespace, manifest: Path, models: str, limit: int | None, tag: str) -> dict:
    """GNINA's score set ``models`` on the manifest's poses (the first ``limit``); its timing JSON and wall."""
    out = Path(args.work) / f"gnina_{tag}.csv"
    argv = [args.gnina_python, "-m", GNINA_SCORE, "--manifest", str(manifest), "--out", str(out)]
    argv += ["--models", models, "--threads", str(args.gnina_threads), "--no-resume"]
    argv += ["--limit", str(limit)] if limit else []
    env = {**os.environ, "OMP_NUM_THREADS": str(args.gnina_threads)}
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"GNINA {models} failed ({done.returncode}): {done.stderr[-2000:]}")
    timing = json.loads(out.with_suffix(".timing.json").read_text())
    poses = timing["poses"]
    return {
        "models": models,
        "poses": poses,
        "wall_seconds": wall,
        "poses_per_second": poses / wall,
        "scoring_seconds_per_pose": timing["per_set"][models]["seconds_per_pose"],
        "seconds_grid": timing["seconds_grid"],
        "seconds_per_model": timing["seconds_per_model"],
    }


def median_case(runs: list[dict]) -> dict:
    """The run of median wall time (the lower one of an even count), with every round's wall time beside it."""
    ordered = sorted(runs, key=lambda r: r["wall_seconds"])
    return {**ordered[(len(ordered) - 1) // 2], "rounds_wall_seconds": [r["wall_seconds"] for r in runs]}


def limiting(stages: dict[str, float]) -> dict:
    """The stage taking the most time and its share of the staged total."""
    total = sum(stages.values())
    name = max(stages, key=stages.get)
    return {"stage": name, "share": stages[name] / total if total else 0.0}


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child:
        code = child(args)
        # As `pecan score`'s own process ends (pecan.cli.run): outputs committed, streams flushed, no teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    from pecan.convert.examples import prolif_data

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    receptor = work / "receptor.pdb"
    receptor.write_bytes((prolif_data() / "vina" / "rec.pdb").read_bytes())
    manifests = {count: write_poses(work, count, args.layout)[1] for count in args.poses}
    gnina = bool(args.gnina_python and Path(args.gnina_python).exists())
    runs: dict[str, list[dict]] = {}
    for round_ in range(args.rounds):
        for count in args.poses:
            print(f"round {round_ + 1}: pecan score, {count} poses", flush=True)
            runs.setdefault(f"pecan_{count}", []).append(run_pecan(args, count))
            if args.ranks > 1:
                print(f"round {round_ + 1}: pecan score on {args.ranks} ranks, {count} poses", flush=True)
                runs.setdefault(f"pecan_{args.ranks}ranks_{count}", []).append(run_pecan_ranks(args, count))
            if gnina and count <= args.gnina_max_poses:
                print(f"round {round_ + 1}: GNINA default2018, {count} poses", flush=True)
                runs.setdefault(f"gnina_default2018_{count}", []).append(
                    run_gnina(args, manifests[count], "default2018", None, f"default2018_{count}")
                )
                ensemble = min(count, args.gnina_ensemble_poses)
                print(f"round {round_ + 1}: GNINA default ensemble, {ensemble} poses", flush=True)
                runs.setdefault(f"gnina_default_{count}", []).append(
                    run_gnina(args, manifests[count], "default", ensemble, f"default_{count}")
                )
    cases = {name: median_case(case_runs) for name, case_runs in runs.items()}
    for count in args.poses:
        case = cases[f"pecan_{count}"]
        case["limiting_stage"] = limiting(case["stages"])
        case["stage_share"] = {k: v / sum(case["stages"].values()) for k, v in case["stages"].items()}
        for models in ("default2018", "default"):
            peer = cases.get(f"gnina_{models}_{count}")
            if peer:
                case[f"speed_ratio_vs_gnina_{models}"] = case["poses_per_second"] / peer["poses_per_second"]
                ranked = cases.get(f"pecan_{args.ranks}ranks_{count}")
                if ranked:
                    ranked[f"speed_ratio_vs_gnina_{models}"] = ranked["poses_per_second"] / peer["poses_per_second"]
    result = {
        "command": "python -m benchmarks.bench_score " + " ".join(argv if argv is not None else sys.argv[1:]),
        "checkpoint": args.checkpoint[0] if len(args.checkpoint) == 1 else args.checkpoint,
        "docking_weight": args.docking_weight,
        "cases": cases,
        "gnina": "scored in the same run, interleaved" if gnina else "not available (no --gnina-python)",
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        "threads": args.threads,
        "gnina_threads": args.gnina_threads,
        "layout": args.layout,
        "python": platform.python_version(),
    }
    text = json.dumps(result, indent=1, default=float)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


def _cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return platform.processor()
    return next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), "")


if __name__ == "__main__":
    sys.exit(main())
