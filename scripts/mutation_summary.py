"""Per-module mutation score from `mutmut results --all true` (run in the repository root after a run).

Usage: python scripts/mutation_summary.py [--survivors]
Prints killed / survived / other per module of scripts/mutation.sh, and with --survivors each surviving
mutant's diff (what docs/mutation-report.md explains one line each).
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_patterns() -> dict[str, list[str]]:
    """The function patterns per module, read from scripts/mutation.sh (one source of truth)."""
    text = (ROOT / "scripts" / "mutation.sh").read_text()
    return {name: body.split() for name, body in re.findall(r'\[(\w+)\]="([^"]*)"', text)}


def results(mutmut: str) -> list[tuple[str, str]]:
    """(mutant name, status) for every generated mutant."""
    out = subprocess.run(
        [mutmut, "results", "--all", "true"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [tuple(line.strip().rsplit(": ", 1)) for line in out.splitlines() if ": " in line]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--survivors", action="store_true", help="print each survivor's diff")
    parser.add_argument("--mutmut", default=str(Path(sys.executable).parent / "mutmut"))
    args = parser.parse_args()
    patterns = module_patterns()
    counts: dict[str, Counter] = defaultdict(Counter)
    survivors = defaultdict(list)
    for name, status in results(args.mutmut):
        for module, globs in patterns.items():
            if any(fnmatch.fnmatch(name, g) for g in globs):
                counts[module][status] += 1
                if status == "survived":
                    survivors[module].append(name)
    print(f"{'module':12} {'killed':>7} {'survived':>8} {'timeout':>7} {'unchecked':>9} {'other':>6} {'score':>6}")
    for module in patterns:
        c = counts[module]
        killed, survived, timeout = c["killed"], c["survived"], c["timeout"]
        unchecked = c["not checked"]
        other = sum(c.values()) - killed - survived - timeout - unchecked
        done = killed + survived + timeout
        score = f"{100 * (killed + timeout) / done:.0f}%" if done else "-"
        print(f"{module:12} {killed:7} {survived:8} {timeout:7} {unchecked:9} {other:6} {score:>6}")
    if args.survivors:
        for module, names in survivors.items():
            for name in names:
                diff = subprocess.run([args.mutmut, "show", name], cwd=ROOT, capture_output=True, text=True).stdout
                changed = [
                    line
                    for line in diff.splitlines()
                    if line.startswith(("-", "+")) and not line.startswith(("---", "+++"))
                ]
                print(f"\n[{module}] {name}\n  " + "\n  ".join(changed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
