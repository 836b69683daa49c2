"""``pecan convert`` (and with ``--redock``, ``pecan redock`` at exhaustiveness 1) at 1 rank and at 2 ranks on this
node: wall and CPU seconds, poses per CPU-second, and a check that both wrote the same output.

    python -m benchmarks.bench_ranks --out benchmarks/bench_ranks.json
    python -m benchmarks.bench_ranks --redock --out benchmarks/bench_ranks_redock.json
    python -m benchmarks.bench_ranks --complexes 2 --copies 1 --out /tmp/ranks.json      # a smoke run

The input is built the same way every time: the realdock study's docked poses, receptors and crystal ligands are
extracted from its archives (``studies.archive.extract``, digests checked first) into a temp folder, and its
docked manifest is written with each complex under ``--copies`` ids (``<id>_c0``, ``<id>_c1``, ...), so the run
has enough complexes to split into shards (``--complexes-per-shard``). Each run is a fresh ``python -m pecan
convert`` (or ``redock``, of the crystal ligands) with ``--workers``; the 2-rank run starts 2 processes with the
env:// variables torchrun sets (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT). CPU
seconds are the children's rusage (user + system) over the run; the 1-minute load average before each run is
recorded, since other work on a shared node is part of the result. The two outputs are compared: the same file
list, index and failures byte for byte, shards by content (tests/same_outputs.py's rules); redock's ``seconds``
(its CSV column and its records' key) is left out, being a time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from pecan.runtime.out_folder import PLAN_NAME

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "studies" / "realdock"
RANK_FILES = ".ranks"


def parse_args(argv=None) -> argparse.Namespace:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", type=int, default=3, help="ids each docked complex is written under")
    parser.add_argument("--complexes", type=int, default=0, help="the first N docked complexes only (0: all)")
    parser.add_argument("--complexes-per-shard", type=int, default=30)
    parser.add_argument("--workers", type=int, default=1, help="conversion processes per rank")
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--redock", action="store_true", help="time pecan redock (exhaustiveness 1) too")
    parser.add_argument("--out", default="")
    return parser.parse_args(argv)


def build_input(dest: Path, complexes: int, copies: int) -> Path:
    """Extract the docked complexes into ``dest``; write the manifest with each under ``copies`` ids."""
    from studies import archive

    manifest = pd.read_csv(STUDY / "docked" / "manifest.csv", dtype=str, keep_default_na=False)
    if complexes:
        manifest = manifest.head(complexes)
    ids = set(manifest["complex_id"])

    def keep(member: str) -> bool:
        return any(f"/{c}/" in member or f"/{c}." in member for c in ids)

    archive.verify("realdock")
    for name, folders in archive.ARCHIVES["realdock"].items():
        archive.extract(archive.archive_path("realdock", name), dest, folders, keep=keep)
    docked = dest / "docked"
    for column in ("receptor", "poses", "crystal_ligand"):
        manifest[column] = [str((docked / p).resolve()) for p in manifest[column]]
    rows = [manifest.assign(complex_id=manifest["complex_id"] + f"_c{copy}") for copy in range(copies)]
    path = dest / "manifest.csv"
    pd.concat(rows, ignore_index=True).to_csv(path, index=False)
    return path


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rank_env(rank: int, world_size: int, port: int) -> dict[str, str]:
    """One rank's environment on this host, as torchrun sets it."""
    ranks = {"RANK": rank, "LOCAL_RANK": rank, "WORLD_SIZE": world_size, "LOCAL_WORLD_SIZE": world_size}
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        **{k: str(v) for k, v in ranks.items()},
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }


def cpu_seconds() -> float:
    """User + system seconds of every child waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def tool_options(args, tool: str) -> list[str]:
    """The options of one ``pecan`` command besides its manifest and output."""
    if tool == "redock":
        return ["--exhaustiveness", "1", "--workers", str(args.workers)]
    return ["--complexes-per-shard", str(args.complexes_per_shard), "--workers", str(args.workers)]


def pose_count(tool: str, out: Path) -> int:
    """The poses a run wrote: redock's per-complex counts, or the rows of convert's index."""
    if tool == "redock":
        return int(pd.read_csv(out / "redock.csv")["poses"].fillna(0).sum())
    return sum(len(pd.read_csv(p)) for p in out.glob("*_all.csv"))


def launch(args, tool: str, manifest: Path, out: Path, ranks: int, logs: Path) -> dict:
    """One ``pecan <tool>`` of ``manifest`` into ``out`` on ``ranks`` processes; its times and poses."""
    command = [sys.executable, "-m", "pecan", tool, str(manifest), "--out", str(out), "--no-progress"]
    command += tool_options(args, tool)
    load, port = os.getloadavg()[0], free_port()
    cpu0, start = cpu_seconds(), time.perf_counter()
    files = [open(logs / f"{tool}_{ranks}ranks_rank{r}.log", "w") for r in range(ranks)]
    procs = [
        subprocess.Popen(command, cwd=ROOT, env=rank_env(r, ranks, port), stdout=f, stderr=subprocess.STDOUT)
        for r, f in enumerate(files)
    ]
    codes = [p.wait() for p in procs]
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu0
    for f in files:
        f.close()
    if any(codes):
        tails = "\n".join((logs / f.name).read_text()[-2000:] for f in files)
        raise SystemExit(f"pecan {tool} on {ranks} rank(s) exited {codes}:\n{tails}")
    poses = pose_count(tool, out)
    return {
        "tool": tool,
        "ranks": ranks,
        "wall_s": wall,
        "cpu_s": cpu,
        "poses": poses,
        "poses_per_cpu_s": poses / cpu if cpu else None,
        "poses_per_wall_s": poses / wall,
        "load_before": load,
        "shards": len(list(out.glob("*.hdf5"))),
    }


def output_files(directory: Path) -> list[str]:
    """Every file under ``directory``, relative, sorted; the ranks' own records and the folder's plan record (it
    names the launch that wrote it) left out."""
    return sorted(
        str(p.relative_to(directory))
        for p in directory.rglob("*")
        if p.is_file() and RANK_FILES not in p.relative_to(directory).parts and p.name != PLAN_NAME
    )


def same_file(a: Path, b: Path, varying: tuple[str, ...]) -> bool:
    """Shards by content; CSV and JSON without the ``varying`` columns and keys; the rest byte for byte."""
    from tests.same_outputs import hdf5_content

    if a.suffix == ".hdf5":
        return hdf5_content(a) == hdf5_content(b)
    if varying and a.suffix == ".csv":
        left, right = (pd.read_csv(p, keep_default_na=False) for p in (a, b))
        return left.drop(columns=list(varying), errors="ignore").equals(
            right.drop(columns=list(varying), errors="ignore")
        )
    if varying and a.suffix == ".json":
        left, right = (json.loads(p.read_text()) for p in (a, b))
        return {k: v for k, v in left.items() if k not in varying} == {
            k: v for k, v in right.items() if k not in varying
        }
    return a.read_bytes() == b.read_bytes()


def differences(expected: Path, actual: Path, varying: tuple[str, ...] = ()) -> list[str]:
    """How two outputs differ: the file lists, then each file (``same_file``)."""
    names, others = output_files(expected), output_files(actual)
    if names != others:
        return [
            f"file lists differ: only in 1 rank {sorted(set(names) - set(others))}, "
            f"only in more {sorted(set(others) - set(names))}"
        ]
    return [f"{name} differs" for name in names if not same_file(expected / name, actual / name, varying)]


def _without_h_xyz(path: Path) -> list[str]:
    """A PDBQT's lines with the coordinates of its hydrogens (AutoDock types H and HD) blanked."""
    lines = path.read_text().splitlines()
    return [line[:30] + line[54:] if line.rstrip().endswith((" H", " HD")) else line for line in lines]


def redock_differences(expected: Path, actual: Path) -> tuple[list[str], int]:
    """How two redock outputs differ but for the seconds and the receptor PDBQTs' hydrogen coordinates (Open Babel
    places the hydrogens of some charged nitrogens at random in every run; Vina scores heavy atoms); and how many
    receptors differ in those alone."""
    different, receptors = differences(expected, actual, ("seconds",)), 0
    for name in [d.removesuffix(" differs") for d in different if d.startswith("receptors/")]:
        if _without_h_xyz(expected / name) == _without_h_xyz(actual / name):
            different.remove(f"{name} differs")
            receptors += 1
    return different, receptors


def cpu_model() -> str:
    """The CPU's model name, as lscpu prints it."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        text = Path("/proc/cpuinfo").read_text().replace("model name", "Model name")
    for line in text.splitlines():
        if line.strip().startswith("Model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def run(args, work: Path) -> dict:
    """Build the input, run each tool at each rank count, compare every output with the tool's first."""
    manifest = build_input(work / "input", args.complexes, args.copies)
    logs = work / "logs"
    logs.mkdir()
    runs, diffs, hydrogens = [], {}, {}
    for tool in ("convert", "redock") if args.redock else ("convert",):
        outs = [work / f"{tool}_{ranks}ranks" for ranks in args.ranks]
        for ranks, out in zip(args.ranks, outs):
            runs.append(launch(args, tool, manifest, out, ranks, logs))
            print(f"{tool}, {ranks} rank(s): {runs[-1]}", flush=True)
        for ranks, out in zip(args.ranks[1:], outs[1:]):
            name = f"{tool} {args.ranks[0]}_vs_{ranks}"
            if tool == "redock":
                diffs[name], hydrogens[name] = redock_differences(outs[0], out)
            else:
                diffs[name] = differences(outs[0], out)
    return {
        "complexes": int(len(pd.read_csv(manifest))),
        "runs": runs,
        "same_output": not any(diffs.values()),
        "differences": diffs,
        "receptors_differing_in_h_positions_only": hydrogens,
        "files": output_files(work / f"convert_{args.ranks[0]}ranks"),
    }


def table(result: dict) -> str:
    """The runs as a Markdown table."""
    lines = [
        f"{result['cpu']}, {result['cpus']} CPUs; {result['complexes']} complexes, "
        f"{result['args']['complexes_per_shard']} per shard, {result['args']['workers']} worker(s) per rank; "
        f"same output: {result['same_output']}",
        "| command | ranks | wall s | CPU s | poses | poses/CPU-s | poses/wall-s | shards | load before |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["runs"]:
        lines.append(
            f"| {r['tool']} | {r['ranks']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['poses']} | "
            f"{r['poses_per_cpu_s']:.2f} | {r['poses_per_wall_s']:.2f} | {r['shards']} | {r['load_before']:.2f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    """Measure, print a table, write JSON atomically; 1 when the outputs differ."""
    from pecan.runtime import fileio

    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench_ranks_"))
    try:
        result = {"cpu": cpu_model(), "cpus": os.cpu_count(), "args": vars(args), **run(args, work)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n" + table(result))
    if args.out:
        fileio.write_text(args.out, fileio.json_text(result, indent=1) + "\n")
    return 0 if result["same_output"] else 1


if __name__ == "__main__":
    sys.exit(main())
