"""Plot one run (RUN_DIR/plots/run.png) or several runs on the same axes (one overlay PNG).

    python scripts/plot_run.py RUN_DIR [RUN_DIR ...] [--out DIR]

The same as `pecan runs plot`; the logic lives in pecan/runs/plot.py. Needs matplotlib: pip install '.[plots]'.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pecan.runs.plot import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
