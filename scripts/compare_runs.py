"""Compare runs (and their replicates): figures, and every setting on which they differ.

    python scripts/compare_runs.py baseline=runs/reopen-1,runs/reopen-2 packed=runs/packed-1,runs/packed-2
    python scripts/compare_runs.py --strict --allow model.hidden small=runs/h48 large=runs/h96

The same as `pecan runs compare`; the logic (and its full description) lives in pecan/runs/compare.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pecan.runs.compare import (  # noqa: E402,F401  (the script's names, for callers that import it)
    FIGURES,
    SETTINGS,
    compare,
    differing_keys,
    main,
    parse_groups,
    resolved_settings,
    run_settings,
    run_summary,
    settings_differences,
    spread,
)

if __name__ == "__main__":
    sys.exit(main())
