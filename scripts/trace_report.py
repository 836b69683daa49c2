"""`pecan runs trace` (pecan/runs/trace.py), kept so that existing command lines keep working.

Usage: python scripts/trace_report.py RUN_DIR [--perfetto out.json] [--json totals.json] [--check]
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from pecan.runs.trace import *  # noqa: E402,F403  (the script's names, for callers that import it)
from pecan.runs.trace import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(prog="python scripts/trace_report.py"))
