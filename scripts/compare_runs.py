"""`pecan runs compare` (pecan/runs/compare.py, with the full description): deprecated, a warning
on every run, removed in the next release.

    python scripts/compare_runs.py baseline=runs/reopen-1,runs/reopen-2 packed=runs/packed-1,runs/packed-2
    python scripts/compare_runs.py --strict --allow model.hidden small=runs/h48 large=runs/h96
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from pecan.runs.compare import *  # noqa: E402,F403  (the script's names, for callers that import it)
from pecan.runs.compare import main  # noqa: E402

if __name__ == "__main__":
    print(
        "warning: scripts/compare_runs.py is deprecated (removed in the next release): use "
        "`pecan runs compare` "
        "(the same options)",
        file=sys.stderr,
    )
    sys.exit(main(prog="python scripts/compare_runs.py"))
