"""Vina's search in a child process with a time limit: a search that runs past ``DockOptions.timeout`` is
killed and the complex recorded as failed, so one pathological ligand cannot hold a long run.

A subprocess (not a multiprocessing child) because the redocking pool's workers are daemonic and may not
start processes of their own.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from pecan.errors import RedockError


def vina_in_child(receptor_pdbqt: Path, ligand: str, box, options, seed: int):
    """Poses text and scores from ``python -m pecan.redock.child``; RedockError on timeout or failure."""
    with tempfile.TemporaryDirectory(dir=receptor_pdbqt.parent) as tmp:
        request = Path(tmp) / "request.json"
        request.write_text(
            json.dumps(
                {
                    "receptor": str(receptor_pdbqt),
                    "ligand": ligand,
                    "center": list(box.center),
                    "size": list(box.size),
                    "options": dataclasses.asdict(options),
                    "seed": seed,
                    "out": str(Path(tmp) / "result.json"),
                }
            )
        )
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pecan.redock.child", str(request)],
                capture_output=True,
                text=True,
                timeout=options.timeout,
            )
        except subprocess.TimeoutExpired:
            raise RedockError(f"timed out: Vina's search ran past --timeout {options.timeout:g} s") from None
        if done.returncode != 0:
            raise RedockError(f"Vina's search failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
        result = json.loads((Path(tmp) / "result.json").read_text())
    return result["poses"], np.asarray(result["scores"], dtype=float)


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
