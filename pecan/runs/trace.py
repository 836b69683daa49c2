"""Read a run's dftracer files: seconds per phase x rank x epoch, a straggler table, and Perfetto JSON.

    pecan runs trace RUN_DIR [--perfetto out.json] [--json totals.json] [--check]
    (also: python scripts/trace_report.py RUN_DIR ...)

The trace files (``*.pfw.gz``, one per process: ranks and their loader workers) are gzip'd JSON lines; they
are read here directly, which needs nothing beyond the standard library. ``--check`` compares the phase
totals with the per-rank figures in RUN_DIR/epochs.jsonl. ``--perfetto`` writes Chrome trace JSON
(``{"traceEvents": [...]}`` with ``ph: "X"`` complete events, one process per rank/worker) that
https://ui.perfetto.dev and chrome://tracing open.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

from pecan import report
from pecan.report import PHASE_EVENTS  # epochs.jsonl phase -> (category, name) of the main process's events
from pecan.runtime.errors import DataError
from pecan.runtime.fileio import json_text

_FILE_RANK = re.compile(r"pecan-rank(\d+)")


def phase_of(event: dict[str, Any]) -> str | None:
    """The epochs.jsonl phase an event counts towards, if any."""
    key = (event.get("cat"), event.get("name"))
    args = event.get("args") or {}
    for phase, wanted in PHASE_EVENTS.items():
        if key != wanted:
            continue
        if phase == "transfer_s" and args.get("phase") == "eval":
            return None  # evaluation transfers are inside eval_s
        if phase == "grad_comm_s" and args.get("what") != "gradients":
            return None
        return phase
    return None


def trace_files(run_dir: Path) -> list[Path]:
    """The trace files of a run (trace.dir from its config.yaml, default RUN_DIR/traces)."""
    directory = run_dir / "traces"
    config = run_dir / "config.yaml"
    if config.exists():
        import yaml

        configured = Path((yaml.safe_load(config.read_text()).get("trace") or {}).get("dir", "traces"))
        directory = configured if configured.is_absolute() else run_dir / configured
    files = sorted(directory.glob("*.pfw.gz")) + sorted(directory.glob("*.pfw"))
    if not files:
        raise DataError(f"no trace files (*.pfw.gz) in {directory}; was trace.enabled true?")
    return files


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """The complete events of one trace file, each with its rank (from its args or the file name)."""
    opener = gzip.open if path.suffix == ".gz" else open
    match = _FILE_RANK.search(path.name)
    file_rank = int(match.group(1)) if match else None
    with opener(path, "rt") as handle:
        for number, line in enumerate(handle, 1):
            line = line.strip().rstrip(",")
            if not line.startswith("{"):
                continue  # the "[" / "]" framing lines
            try:
                event = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}:{number} is not a JSON event ({err})") from None
            if "dur" not in event:
                continue  # metadata events
            args = event.setdefault("args", {})
            event["rank"] = args.get("rank", file_rank)
            yield event


def load(run_dir: Path) -> list[dict[str, Any]]:
    """Every complete event of the run, each with the number of the trace file (one per process) it came from."""
    events = []
    for number, path in enumerate(trace_files(run_dir)):
        for event in read_events(path):
            event["process"] = number
            events.append(event)
    return events


def last_parts(events: list[dict[str, Any]], epochs: set[int]) -> list[dict[str, Any]]:
    """``events`` with, for each of ``epochs`` (those a stop split across processes), only the events of the
    process that finished the epoch on each rank: the one whose events of that epoch end last. Its
    epochs.jsonl record covers that part alone (the phases before the stop were timed by a process that wrote
    no record of the epoch)."""
    ends: dict[tuple[int, Any], tuple[float, Any]] = {}
    for event in events:
        epoch = event["args"].get("epoch")
        if epoch is None or int(epoch) not in epochs:
            continue
        key, end = (int(epoch), event["rank"]), event.get("ts", 0) + event["dur"]
        if key not in ends or end > ends[key][0]:
            ends[key] = (end, event.get("process"))
    return [
        event
        for event in events
        if event["args"].get("epoch") is None
        or (int(event["args"]["epoch"]), event["rank"]) not in ends
        or ends[(int(event["args"]["epoch"]), event["rank"])][1] == event.get("process")
    ]


def phase_totals(events: list[dict[str, Any]], scale: float = 1e-6) -> dict[tuple[int, int], dict[str, float]]:
    """Seconds per phase for each (epoch, rank); ``scale`` converts the trace's time unit (us) to seconds."""
    totals: dict[tuple[int, int], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for event in events:
        phase = phase_of(event)
        epoch = event["args"].get("epoch")
        if phase is None or epoch is None or event["rank"] is None:
            continue
        totals[(int(epoch), int(event["rank"]))][phase] += event["dur"] * scale
    return {key: dict(value) for key, value in sorted(totals.items())}


def event_totals(events: list[dict[str, Any]], scale: float = 1e-6) -> dict[tuple[str, str, Any], list[float]]:
    """(category/name, rank, epoch) -> [count, seconds] over all processes, workers included."""
    out: dict[tuple[str, str, Any], list[float]] = defaultdict(lambda: [0, 0.0])
    for event in events:
        key = (f"{event.get('cat')}/{event.get('name')}", event["rank"], event["args"].get("epoch"))
        out[key][0] += 1
        out[key][1] += event["dur"] * scale
    return dict(out)


def straggler_rows(totals: dict[tuple[int, int], dict[str, float]]) -> list[str]:
    """Per epoch: each rank's step time (forward + backward + optimizer) and max/mean."""
    rows = ["| epoch | step s per rank | max/mean | slowest rank |", "|---|---|---|---|"]
    for epoch in sorted({e for e, _ in totals}):
        steps = {
            rank: sum(totals[(epoch, rank)].get(p, 0.0) for p in ("forward_s", "backward_s", "optimizer_s"))
            for e, rank in totals
            if e == epoch
        }
        mean = statistics.fmean(steps.values())
        slowest = max(steps, key=steps.get)
        rows.append(
            f"| {epoch} | {', '.join(f'{steps[r]:.2f}' for r in sorted(steps))} | "
            f"{(steps[slowest] / mean if mean else 1.0):.2f} | {slowest} |"
        )
    return rows


def phase_rows(totals: dict[tuple[int, int], dict[str, float]]) -> list[str]:
    """The phase x rank x epoch table."""
    header = "| epoch | rank | " + " | ".join(p[:-2] for p in PHASE_EVENTS) + " |"
    rows = [header, "|" + "---|" * (len(PHASE_EVENTS) + 2)]
    for (epoch, rank), phases in totals.items():
        rows.append(f"| {epoch} | {rank} | " + " | ".join(f"{phases.get(p, 0.0):.3f}" for p in PHASE_EVENTS) + " |")
    return rows


def check_against_records(
    totals: dict[tuple[int, int], dict[str, float]], run_dir: Path, tolerance: float = 0.02, slack_s: float = 0.02
) -> list[str]:
    """Disagreements between trace totals and epochs.jsonl's per-rank phases (empty when they agree within
    ``tolerance`` relative, plus ``slack_s`` for phases too short for a relative test: the event's clock and
    the phase clock are read a few microseconds apart, and one preemption between them is a scheduler
    quantum)."""
    problems = []
    for record in report.read_records(run_dir / "epochs.jsonl"):  # stop markers are no epochs
        ranks = record.get("ranks") or {}
        for rank in range(record.get("world_size", 1)):
            traced = totals.get((record["epoch"], rank))
            if traced is None:
                problems.append(f"epoch {record['epoch']} rank {rank}: no traced phases")
                continue
            for phase in PHASE_EVENTS:
                reported = (ranks.get(phase) or [record.get(phase, 0.0)] * (rank + 1))[rank]
                got = traced.get(phase, 0.0)
                if abs(got - reported) > tolerance * reported + slack_s:
                    problems.append(
                        f"epoch {record['epoch']} rank {rank} {phase}: trace {got:.4f}s, epochs.jsonl {reported:.4f}s"
                    )
    return problems


def stopped_epochs(run_dir: Path) -> set[int]:
    """The epochs a stop marker of epochs.jsonl says were split across processes (a stop inside the epoch:
    ``resumes: mid_epoch``; a marker written before that field says so in its message)."""
    markers = [r for r in report.read_records(run_dir / "epochs.jsonl", events=True) if r.get("event") == "stopped"]
    return {int(r["epoch"]) for r in markers if split_by_stop(r)}


def split_by_stop(marker: dict[str, Any]) -> bool:
    """Whether a stop marker's epoch goes on in a later process (a stop after the epoch's end does not)."""
    if "resumes" in marker:
        return marker["resumes"] == "mid_epoch"
    return "resumes at epoch" not in str(marker.get("message", ""))


def to_perfetto(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Chrome trace JSON: complete ("X") events with string phases, processes named by rank and pid."""
    out, named = [], set()
    for event in events:
        pid = event.get("pid", 0)
        if pid not in named:
            named.add(pid)
            out.append(
                {
                    "name": "process_name",
                    "ph": "M",
                    "pid": pid,
                    "tid": event.get("tid", pid),
                    "args": {"name": f"rank {event['rank']} pid {pid}"},
                }
            )
        out.append(
            {
                "name": str(event.get("name")),
                "cat": str(event.get("cat")),
                "ph": "X",
                "ts": event["ts"],
                "dur": event["dur"],
                "pid": pid,
                "tid": event.get("tid", pid),
                "args": event.get("args", {}),
            }
        )
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def check_outputs(args: argparse.Namespace) -> None:
    """--perfetto and --json may be neither the run's records, its trace files nor each other (ConfigError)."""
    from pecan.runtime import outputs

    written = [(f"--{k}", getattr(args, k)) for k in ("perfetto", "json") if getattr(args, k)]
    inputs = [("the run directory", args.run_dir), ("its epochs.jsonl", args.run_dir / "epochs.jsonl")]
    try:
        inputs += [("a trace file of the run", p) for p in trace_files(args.run_dir)]
    except DataError:  # no trace files: reported when they are read
        pass
    outputs.check_outputs("pecan runs trace", written, inputs)


def main(argv=None, prog: str | None = None) -> int:
    """Print the tables; optionally write Perfetto JSON and the totals, and check against epochs.jsonl."""
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--perfetto", type=Path, metavar="OUT.json", help="write Chrome/Perfetto trace JSON")
    parser.add_argument("--json", type=Path, metavar="OUT.json", help="write the phase totals as JSON")
    parser.add_argument("--check", action="store_true", help="compare with epochs.jsonl (exit 1 on disagreement)")
    parser.add_argument("--events", action="store_true", help="also list every event kind per rank and epoch")
    args = parser.parse_args(argv)
    from pecan.engine.harness import invoke

    return invoke(lambda: show_traces(args))


def show_traces(args: argparse.Namespace) -> int:
    """The tables of ``args.run_dir``, the files asked for, and the check (1 on disagreement)."""
    check_outputs(args)
    events = load(args.run_dir)
    totals = phase_totals(events)
    print("\n".join(phase_rows(totals)))
    print()
    print("\n".join(straggler_rows(totals)))
    if args.events:
        print("\n| event | rank | epoch | count | seconds |\n|---|---|---|---|---|")
        for (name, rank, epoch), (count, seconds) in sorted(event_totals(events).items(), key=str):
            print(f"| {name} | {rank} | {epoch} | {count} | {seconds:.4f} |")
    if args.json:
        args.json.write_text(json_text([{"epoch": e, "rank": r, **p} for (e, r), p in totals.items()], indent=1))
    if args.perfetto:
        args.perfetto.write_text(json_text(to_perfetto(events)))
        print(f"\nwrote {args.perfetto} (open in https://ui.perfetto.dev)")
    if args.check:
        problems = check_against_records(phase_totals(last_parts(events, stopped_epochs(args.run_dir))), args.run_dir)
        for problem in problems:
            print(f"disagrees: {problem}")
        print("trace totals agree with epochs.jsonl" if not problems else f"{len(problems)} disagreement(s)")
        return 1 if problems else 0
    return 0
