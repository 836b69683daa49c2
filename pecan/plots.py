"""Plots of a run's epochs.jsonl (matplotlib) and optional TensorBoard scalars; imported only when enabled.

Install with ``pip install '.[plots]'``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from pecan.report import PHASES


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError("plots need matplotlib: pip install '.[plots]'") from err
    return plt


def _phase_label(phase: str) -> str:
    return phase[:-2].replace("_", " ")


def plot_wall_time(ax, records: Sequence[dict[str, Any]]) -> None:
    """Per-epoch wall time stacked by phase (rank 0), the rest shown as 'other'."""
    epochs = [r["epoch"] for r in records]
    bottom = [0.0] * len(records)
    for phase in PHASES:
        values = [r.get(phase) or 0.0 for r in records]
        ax.bar(epochs, values, bottom=bottom, label=_phase_label(phase))
        bottom = [b + v for b, v in zip(bottom, values)]
    other = [max(r["wall_s"] - b, 0.0) for r, b in zip(records, bottom)]
    ax.bar(epochs, other, bottom=bottom, label="other", color="lightgrey")
    ax.set(xlabel="epoch", ylabel="seconds", title="wall time by phase (rank 0)")
    ax.legend(fontsize="x-small", ncol=2)


def plot_throughput(ax, records: Sequence[dict[str, Any]]) -> None:
    """Samples per second per epoch."""
    ax.plot([r["epoch"] for r in records], [r.get("samples_per_s") or 0.0 for r in records], marker="o")
    ax.set(xlabel="epoch", ylabel="samples/s", title="throughput")


def plot_learning(ax, records: Sequence[dict[str, Any]]) -> None:
    """Training and validation loss, validation AUC on a second axis."""
    epochs = [r["epoch"] for r in records]
    ax.plot(epochs, [r.get("train_loss") for r in records], marker="o", label="train loss")
    ax.plot(epochs, [r.get("val_loss") for r in records], marker="o", label="val loss")
    ax.set(xlabel="epoch", ylabel="loss", title="learning curves")
    twin = ax.twinx()
    twin.plot(epochs, [r.get("val_auc") for r in records], marker="s", color="tab:green", label="val AUC")
    twin.set_ylabel("val AUC")
    lines = ax.get_legend_handles_labels()
    more = twin.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize="x-small")


def plot_ranks(ax, record: dict[str, Any]) -> None:
    """Each rank's seconds per phase in one epoch (grouped bars): stragglers stand out."""
    ranks = record.get("ranks") or {}
    count = len(ranks.get(PHASES[0], [])) or 1
    width = 0.8 / count
    for rank in range(count):
        values = [(ranks.get(p) or [0.0] * count)[rank] for p in PHASES]
        ax.bar([k + rank * width for k in range(len(PHASES))], values, width=width, label=f"rank {rank}")
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(PHASES))], [_phase_label(p) for p in PHASES],
                  rotation=45, ha="right", fontsize="small")
    ax.set(ylabel="seconds", title=f"per-rank phases, epoch {record['epoch']} "
                                   f"(straggler ratio {record.get('straggler_ratio') or 1.0:.2f})")
    ax.legend(fontsize="x-small")


def write_plots(run_dir: str | Path, records: Sequence[dict[str, Any]], out_dir: str | Path | None = None) -> list[Path]:
    """Write run.png (all four panels) into ``out_dir`` (default RUN_DIR/plots); returns the paths."""
    plt = _pyplot()
    out = Path(out_dir) if out_dir else Path(run_dir) / "plots"
    out.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(2, 2, figsize=(11, 8))
    plot_wall_time(axes[0][0], records)
    plot_throughput(axes[0][1], records)
    plot_learning(axes[1][0], records)
    plot_ranks(axes[1][1], records[-1])
    from matplotlib.ticker import MaxNLocator

    for ax in (axes[0][0], axes[0][1], axes[1][0]):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    figure.suptitle(f"PECAN run {Path(run_dir).resolve().name}")
    figure.tight_layout()
    path = out / "run.png"
    figure.savefig(path, dpi=72)
    plt.close(figure)
    return [path]


SCALARS = ("train_loss", "val_loss", "val_auc", "val_acc", "val_top1", "lr", "samples_per_s", "wall_s",
           "data_wait_share", "straggler_ratio", "cpu_share_min", *PHASES)
# The final metrics the hparams view shows beside the run's settings.
HPARAM_METRICS = ("val_auc", "val_loss", "val_acc", "val_top1", "train_loss", "samples_per_s")


def _writer(log_dir: str | Path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as err:
        raise ImportError("train.tensorboard needs tensorboard: pip install '.[plots]'") from err
    return SummaryWriter(log_dir=str(log_dir))


class TensorBoard:
    """One run's TensorBoard events: epoch scalars (step = epoch), per-step loss and learning rate
    (step = global step) and, at the end, the hparams with the final metrics."""

    def __init__(self, log_dir: str | Path) -> None:
        self.log_dir = Path(log_dir)
        self.writer = _writer(self.log_dir)

    def epoch(self, record: dict[str, Any]) -> None:
        """One epoch's figures."""
        for name in SCALARS:
            value = record.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                group = "phase" if name in PHASES else "epoch"
                self.writer.add_scalar(f"{group}/{name}", value, record["epoch"])
        self.writer.flush()

    def step(self, step: int, loss: float, lr: float) -> None:
        """The training loss (mean over the steps since the last point) and the learning rate at ``step``."""
        self.writer.add_scalar("step/train_loss", loss, step)
        self.writer.add_scalar("step/lr", lr, step)

    def hparams(self, config, record: dict[str, Any]) -> None:
        """The run's settings (every scalar config key) with its final metrics."""
        flat = {f"{section}.{key}": value for section, values in config.to_dict().items()
                for key, value in values.items() if isinstance(value, (int, float, str, bool))}
        metrics = {f"final/{name}": float(record[name]) for name in HPARAM_METRICS
                   if isinstance(record.get(name), (int, float))}
        self.writer.add_hparams(flat, metrics, run_name=".")

    def close(self) -> None:
        """Flush and close the event file."""
        self.writer.close()


def tensorboard_scalars(log_dir: str | Path, record: dict[str, Any]) -> None:
    """Append one epoch's figures as TensorBoard scalars (step = epoch)."""
    board = TensorBoard(log_dir)
    board.epoch(record)
    board.close()
