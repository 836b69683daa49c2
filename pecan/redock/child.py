"""The child process of Vina's search with a time limit (``python -m pecan.redock.child REQUEST``; started by
``pecan.redock.dock.vina_in_child``): a search that runs past ``DockOptions.timeout`` is
killed and the complex recorded as failed, so one pathological ligand cannot hold a long run.

A subprocess (not a multiprocessing child) because the redocking pool's workers are daemonic and may not
start processes of their own.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv=None) -> int:
    """Run one request file's search and write its result file."""
    from pecan.redock.dock import DockOptions, vina_search
    from pecan.redock.prepare import Box

    request = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    options = DockOptions(**{**request["options"], "timeout": 0.0})
    box = Box(tuple(request["center"]), tuple(request["size"]))
    text, scores = vina_search(Path(request["receptor"]), request["ligand"], box, options, request["seed"])
    Path(request["out"]).write_text(json.dumps({"poses": text, "scores": [float(v) for v in scores]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
