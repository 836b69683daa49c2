"""Markdown tables of studies/realdock results: one per recipe (folds + pooled) and a pooled summary.

python -m studies.realdock.table results/prc40_seeds.json [results/baseline40.json ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from studies.realdock.run import TABLE_HEADER, row


def main(argv=None) -> int:
    """Print each results file's table."""
    for path in map(Path, argv if argv is not None else sys.argv[1:]):
        result = json.loads(path.read_text())
        print(f"\n**{result['tag']}** ({' '.join(result['overrides']) or 'configs/redock.yaml as is'})\n")
        print(TABLE_HEADER)
        for family, values in result["folds"].items():
            print(row(family, values))
        print(row("**pooled**", result["pooled"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
