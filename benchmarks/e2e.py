"""The whole data path, end to end, as a user runs it from a clean clone: each step timed and its output checked.

    python -m benchmarks.e2e --out benchmarks/e2e.json           # about 2 minutes on 2 cores
    python -m benchmarks.e2e --work /tmp/e2e --keep               # keep the work folder to look at

corpus: the quickest corpus complexes (by the seconds studies/corpus/docked/redock.csv recorded) are laid out as a
PDBbind folder (``<id>/<id>_protein.pdb``, ``<id>_ligand.sdf``, an INDEX file) with folders for reserved entries
and one without its ligand; ``pecan sources pdbbind`` -> ``pecan redock`` on 2 ranks (torchrun) and on 1 -> ``pecan
convert`` on 2 ranks and on 1 (each 1-rank output compared with the 2-rank one) -> training (configs/redock.yaml, a
few epochs) -> ``pecan score`` of one complex's docked poses. The structures come from studies/corpus/inputs when
unpacked, else from its archive (digests checked). Redock's outputs are compared but for the seconds each complex
took and the receptor PDBQTs' hydrogen coordinates (Open Babel places the hydrogens of some charged nitrogens of a
receptor PDB with hydrogens and formal charges at random in every run).

crossdocked: the real CrossDocked2020 types lines of tests/sources/data laid out over a miniature of their pocket
folders (the real pose and pocket there; each record placed at the RMSD its line gives), the CITN_KLEPN pocket as
fold 0's train file and CP2B6 as its test file; ``pecan sources crossdocked --check-rmsd`` -> ``pecan convert`` on 2
ranks -> training on the train fold -> ``pecan predict`` of the test fold.

A path stops at its first failing step (the rest are recorded as skipped); the exit status is 1 if any step failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import e2e_checks as checks

ROOT = Path(__file__).resolve().parents[1]


def parse_args(argv=None) -> argparse.Namespace:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default="", help="work folder (default: a temp folder, removed afterwards)")
    parser.add_argument("--keep", action="store_true", help="keep the temp work folder")
    parser.add_argument("--complexes", type=int, default=6, help="corpus complexes")
    parser.add_argument("--exhaustiveness", type=int, default=2, help="pecan redock's")
    parser.add_argument("--n-poses", type=int, default=20, help="pecan redock's")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--paths", nargs="+", default=["corpus", "crossdocked"], choices=["corpus", "crossdocked"])
    parser.add_argument("--out", default="", help="the JSON summary")
    return parser.parse_args(argv)


def checked(function, *args) -> tuple[dict, list[str]]:
    """``function(*args)``'s (counts, problems); an exception (an output file missing) is a problem, not a crash."""
    try:
        return function(*args)
    except (OSError, ValueError, KeyError) as err:
        return {}, [f"{type(err).__name__}: {err}"]


class Steps:
    """One path's steps: each timed, logged to WORK/logs/<step>.log and checked; after a failure the rest skip."""

    def __init__(self, path: str, work: Path):
        self.path, self.work, self.records = path, work, []
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
        (work / "logs").mkdir(parents=True, exist_ok=True)

    @property
    def failed(self) -> bool:
        """Whether a step of this path failed (or was skipped)."""
        return any(not r["ok"] for r in self.records)

    def _record(self, name: str, command: str, seconds: float, counts: dict, problems: list[str]) -> bool:
        ok = not problems
        self.records.append(
            {"path": self.path, "step": name, "command": command, "seconds": round(seconds, 2), "counts": counts}
            | {"ok": ok, "problems": problems}
        )
        print(f"[e2e] {self.path}/{name}: {'ok' if ok else 'FAILED'} in {seconds:.1f} s {counts} {problems}")
        return ok

    def call(self, name: str, function, *args) -> bool:
        """An in-process step: ``function(*args)`` returns (counts, problems)."""
        if self.failed:
            return self._record(name, "", 0.0, {}, ["skipped: an earlier step failed"])
        start = time.perf_counter()
        counts, problems = checked(function, *args)
        return self._record(name, function.__name__, time.perf_counter() - start, counts, problems)

    def command(self, name: str, argv: list[str], check, ranks: int = 1) -> bool:
        """``python -m pecan ...`` (under torchrun with ``ranks`` > 1); then ``check()`` -> (counts, problems)."""
        launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}"] if ranks > 1 else []
        full = [sys.executable, *launcher, "-m", "pecan", *argv]
        shown = " ".join(["torchrun" if ranks > 1 else "python", *full[2 if ranks > 1 else 1 :]])
        shown = shown.replace(str(self.work), "WORK").replace(str(ROOT) + "/", "")
        if self.failed:
            return self._record(name, shown, 0.0, {}, ["skipped: an earlier step failed"])
        log = self.work / "logs" / f"{self.path}_{name}.log"
        start = time.perf_counter()
        with open(log, "w") as handle:
            code = subprocess.run(full, cwd=ROOT, env=self.env, stdout=handle, stderr=subprocess.STDOUT).returncode
        seconds = time.perf_counter() - start
        if code:
            return self._record(name, shown, seconds, {}, [f"exit {code}: {log.read_text()[-1500:]}"])
        return self._record(name, shown, seconds, *checked(check))


def corpus_path(args, work: Path) -> list[dict]:
    """PDBbind folder -> manifest -> redock and convert (2 ranks, then 1 rank) -> train -> score."""
    steps, folder, out = Steps("corpus", work), work / "pdbbind", work / "corpus"
    chosen = checks.quickest_corpus(args.complexes)
    steps.call("pdbbind_folder", checks.build_pdbbind_folder, folder, chosen, work)
    manifest, docked = out / "manifest.csv", out / "docked"
    steps.command("sources", ["sources", "pdbbind", str(folder), "--out", str(manifest)], checks.sources(out, chosen))
    redock = ["redock", str(manifest), "--exhaustiveness", str(args.exhaustiveness), "--n-poses", str(args.n_poses)]
    redock += ["--workers", "1", "--cpu", "1", "--no-progress", "--out"]
    steps.command("redock_2ranks", [*redock, str(docked)], checks.redocked(docked, chosen), ranks=2)
    check = checks.redocked(out / "docked_1rank", chosen, docked)
    steps.command("redock_1rank", [*redock, str(out / "docked_1rank")], check)
    shards = {ranks: out / f"shards_{ranks}ranks" for ranks in (2, 1)}
    for ranks, target in shards.items():
        convert = ["convert", str(docked / "manifest.csv"), "--out", str(target), "--complexes-per-shard", "2"]
        check = checks.converted(target, docked, shards[2] if ranks == 1 else None)
        steps.command(f"convert_{ranks}rank{'s' if ranks > 1 else ''}", [*convert, "--no-progress"], check, ranks)
    run = out / "run"
    train = ["train", str(ROOT / "configs" / "redock.yaml"), "--set", f"data.data_dir={shards[2]}"]
    train += ["--set", f"train.out_dir={run}", "--set", f"train.epochs={args.epochs}"]
    steps.command("train", train, checks.trained(run, args.epochs))
    first = chosen[0].split("_")[0]
    scored = out / "scored" / f"{first}.sdf"
    score = [] if steps.failed else checks.score_argv(docked, first, run, scored)
    steps.command("score", score, checks.scored(scored, docked, first))
    return steps.records


def crossdocked_path(args, work: Path) -> list[dict]:
    """Types files over a miniature of their pockets -> sources --check-rmsd -> convert (2 ranks) -> train ->
    predict."""
    steps, root, out = Steps("crossdocked", work), work / "CrossDocked2020", work / "cd"
    steps.call("layout", checks.lay_out_crossdocked, root, work / "types")
    types = sorted(str(p) for p in (work / "types").glob("*.types"))
    sources = ["sources", "crossdocked", *types, "--root", str(root), "--out", str(out), "--check-rmsd"]
    steps.command("sources", sources, checks.crossdocked_sources(out))
    shards = out / "shards"
    convert = ["convert", str(out / "manifest.csv"), "--out", str(shards), "--complexes-per-shard", "2"]
    steps.command("convert_2ranks", [*convert, "--no-progress"], checks.crossdocked_converted(out, shards), 2)
    steps.call("fold_csvs", checks.fold_index_csvs, out, shards)
    run = out / "run"
    train = ["train", str(ROOT / "configs" / "redock.yaml"), "--set", f"data.data_dir={shards}"]
    train += ["--set", "data.train_csvs=[fold0_train_index.csv]", "--set", "data.val_fraction=0.5"]
    train += ["--set", f"train.out_dir={run}", "--set", f"train.epochs={args.epochs}"]
    steps.command("train", train, checks.trained(run, args.epochs))
    predict = ["predict", str(run / "checkpoints" / "best.pt"), "--data-dir", str(shards)]
    predict += ["--csv", "fold0_test_index.csv", "--out", str(out / "scores.csv")]
    steps.command("predict", predict, checks.predicted(out / "scores.csv", shards / "fold0_test_index.csv"))
    return steps.records


def table(result: dict) -> str:
    """The steps as a Markdown table."""
    lines = ["| path | step | seconds | counts | ok |", "|---|---|---|---|---|"]
    for r in result["steps"]:
        counts = ", ".join(f"{k} {v}" for k, v in r["counts"].items())
        lines.append(f"| {r['path']} | {r['step']} | {r['seconds']:.1f} | {counts} | {'yes' if r['ok'] else 'NO'} |")
    return "\n".join(lines)


def commit() -> str:
    """The checkout's commit (with ``+changes`` when its tracked files differ from it), or "unknown"."""
    git = ["git", "-C", str(ROOT)]
    try:
        head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run([*git, "diff", "--quiet", "HEAD"], check=False).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def main(argv=None) -> int:
    """Run the paths, print the table, write the JSON atomically; 1 when a step failed."""
    from benchmarks.bench_ranks import cpu_model
    from pecan.runtime import fileio

    args = parse_args(argv)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="pecan_e2e_"))
    work.mkdir(parents=True, exist_ok=True)
    start, records, load = time.perf_counter(), [], os.getloadavg()[0]
    try:
        for name in args.paths:
            records += (corpus_path if name == "corpus" else crossdocked_path)(args, work / name)
    finally:
        if not args.work and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    result = {
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "args": {k: v for k, v in vars(args).items() if k not in ("work", "keep", "out")},
        "commit": commit(),
        "load_before": load,
        "corpus_complexes": checks.quickest_corpus(args.complexes) if "corpus" in args.paths else [],
        "total_seconds": round(time.perf_counter() - start, 1),
        "ok": all(r["ok"] for r in records),
        "steps": records,
    }
    print("\n" + table(result) + f"\n\ntotal {result['total_seconds']} s; all steps passed: {result['ok']}")
    if args.out:
        fileio.write_text(args.out, fileio.json_text(result, indent=1) + "\n")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
