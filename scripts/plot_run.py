"""`pecan runs plot` (pecan/runs/plot.py), deprecated (a warning on every run; removed in the next release). Needs
matplotlib: pip install '.[plots]'.

    python scripts/plot_run.py RUN_DIR [RUN_DIR ...] [--out DIR]
"""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from pecan.runs.plot import main  # noqa: E402

if __name__ == "__main__":
    print(
        "warning: scripts/plot_run.py is deprecated (removed in the next release): use "
        "`pecan runs plot` "
        "(the same options)",
        file=sys.stderr,
    )
    sys.exit(main(prog="python scripts/plot_run.py"))
