"""What a run writes about itself in out_dir: epochs.jsonl (one record per epoch, restored from the
checkpoint when a kill lost one), runs.jsonl (one record per start: code, config, threads, tracing) and the
end-of-run summary table and plots. Every write error names the path and the errno."""

from __future__ import annotations

import logging
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch

from pecan import report, tracing
from pecan.fileio import named_write_errors

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]


class RunFiles:
    """The run directory's records; rank 0 writes them."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = Path(out_dir)
        self.epochs = self.out_dir / "epochs.jsonl"
        self.runs = self.out_dir / "runs.jsonl"

    def append_epoch(self, record: dict[str, Any]) -> None:
        """One line in epochs.jsonl."""
        with named_write_errors(self.epochs):
            report.append_record(self.epochs, record)

    def restore_missing(self, records: list[dict[str, Any]]) -> None:
        """Append the checkpoint's copy of any epoch record epochs.jsonl lacks (a run killed between the
        checkpoint and the record write)."""
        present = {r.get("epoch") for r in report.read_records(self.epochs)} if self.epochs.exists() else set()
        for record in records:
            if record["epoch"] not in present:
                log.warning("epochs.jsonl lacked epoch %d; restored it from the checkpoint", record["epoch"])
                self.append_epoch({**record, "restored_from_checkpoint": True})

    def append_run(self, info: dict[str, Any]) -> None:
        """One line in runs.jsonl."""
        with named_write_errors(self.runs):
            report.append_record(self.runs, info)

    def write_summary(self, plots: bool) -> None:
        """End of run: the summary table over all epochs of the run directory, and its plots."""
        records = report.read_records(self.epochs)
        print(report.run_summary(records), flush=True)
        if not plots:
            return
        try:
            from pecan import plots as plotting
        except ImportError as err:
            log.warning("train.plots is on but matplotlib is missing (pip install '.[plots]'): %s", err)
            return
        for path in plotting.write_plots(self.out_dir, records):
            log.info("plot: %s", path)


def run_info(config, env, device: torch.device, threads, resumed_from, start_epoch: int) -> dict[str, Any]:
    """What this start ran: config digest, git commit, package versions, world size, threads, tracing."""
    return {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "config_digest": config.digest(),
        "git": report.git_state(REPO_ROOT),
        "packages": report.package_versions(),
        "tracing": tracing.status(),
        "intra_op_threads": torch.get_num_threads(),
        "num_workers": threads.num_workers,
        "cores_per_rank": threads.cores_per_rank,
        "threads_from": threads.source,
        "python": sys.version.split()[0],
        "host": platform.node(),
        "argv": sys.argv,
        "world_size": env.world_size,
        "launcher": env.launcher,
        "device": str(device),
        "resumed_from": resumed_from,
        "start_epoch": start_epoch,
    }
