"""`pecan runs trace` (pecan/runs/trace.py), deprecated (a warning on every run; removed in the next release).

Usage: python scripts/trace_report.py RUN_DIR [--perfetto out.json] [--json totals.json] [--check]
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from pecan.runs.trace import *  # noqa: E402,F403  (the script's names, for callers that import it)
from pecan.runs.trace import main  # noqa: E402

if __name__ == "__main__":
    print(
        "warning: scripts/trace_report.py is deprecated (removed in the next release): use "
        "`pecan runs trace` "
        "(the same options)",
        file=sys.stderr,
    )
    sys.exit(main(prog="python scripts/trace_report.py"))
