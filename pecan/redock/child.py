"""The child process of Vina's search (``python -m pecan.redock.child REQUEST``; started by
``pecan.redock.dock.vina_in_child``): a search that runs past ``DockOptions.timeout`` is killed and the
complex recorded as failed, so one pathological ligand cannot hold a long run, and a stop signal is acted on
at once instead of after the search.

A subprocess (not a multiprocessing child) because the redocking pool's workers are daemonic and may not
start processes of their own. It ignores SIGINT (a Ctrl-C reaches the whole process group; the process that
started it decides and kills it), and on Linux it dies with that process even when that one is killed.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path


def main(argv=None) -> int:
    """Run one request file's search and write its result file."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from pecan.runtime.pool import die_with_parent

    request = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    die_with_parent(request.get("parent"))
    from pecan.redock.dock import DockOptions, vina_search
    from pecan.redock.prepare import Box

    options = DockOptions(**{**request["options"], "timeout": 0.0})
    box = Box(tuple(request["center"]), tuple(request["size"]))
    text, scores = vina_search(Path(request["receptor"]), request["ligand"], box, options, request["seed"])
    Path(request["out"]).write_text(json.dumps({"poses": text, "scores": [float(v) for v in scores]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
