"""Read a run's dftracer files: seconds per phase x rank x epoch, a straggler table, and Perfetto JSON.

    python scripts/trace_report.py RUN_DIR [--perfetto out.json] [--json totals.json] [--check]

The same as `pecan runs trace`; the logic lives in pecan/runs/trace.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pecan.runs.trace import (  # noqa: E402,F401  (the script's names, for callers that import it)
    PHASE_EVENTS,
    check_against_records,
    event_totals,
    load,
    main,
    phase_of,
    phase_rows,
    phase_totals,
    read_events,
    straggler_rows,
    to_perfetto,
    trace_files,
)

if __name__ == "__main__":
    sys.exit(main())
