"""PECAN entry point: python main_app.py CONFIG.yaml [--set section.key=value ...]

The same as `pecan train`; kept as the documented interface of the training application. Scoring is
`pecan predict CHECKPOINT --config CONFIG.yaml` (or `--data-dir`), never this file.
"""

from __future__ import annotations

import sys

from pecan.commands.train import main, parse_args  # noqa: F401  (main_app.main is public)

if __name__ == "__main__":
    sys.exit(main(prog="main_app.py"))
