"""Plots of runs' epochs.jsonl (matplotlib) and TensorBoard events; imported only when enabled.

``write_plots`` draws one run (run.png: wall time by phase, throughput, learning curves, learning rate,
CPU share, per-rank phases); ``write_overlay`` draws several runs on the same axes (one PNG). Epoch axes
have integer ticks and legends sit outside the data. Install with ``pip install '.[plots]'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from pecan.report import PHASES

# Above this many ranks the per-rank panel is a heat map (rank x phase) instead of grouped bars.
BARS_UP_TO_RANKS = 8


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


def _epoch_axis(ax, title: str, ylabel: str) -> None:
    """Integer epoch ticks, labels, and the legend (if any) outside the data, to the right."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(xlabel="epoch", ylabel=ylabel, title=title)
    ax.grid(alpha=0.3)


def _legend_outside(ax, handles=None, labels=None) -> None:
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, fontsize="x-small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)


def _series(records: Sequence[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    """Epochs and values of ``key`` where the record has a number."""
    pairs = [(r["epoch"], r[key]) for r in records if isinstance(r.get(key), (int, float))]
    return [e for e, _ in pairs], [v for _, v in pairs]


def plot_wall_time(ax, records: Sequence[dict[str, Any]]) -> None:
    """Per-epoch wall time stacked by phase (rank 0), the rest shown as 'other'."""
    epochs = [r["epoch"] for r in records]
    bottom = [0.0] * len(records)
    for phase in PHASES:
        values = [r.get(phase) or 0.0 for r in records]
        ax.bar(epochs, values, bottom=bottom, label=_phase_label(phase))
        bottom = [b + v for b, v in zip(bottom, values)]
    other = [max((r.get("wall_s") or b) - b, 0.0) for r, b in zip(records, bottom)]
    ax.bar(epochs, other, bottom=bottom, label="other", color="lightgrey")
    _epoch_axis(ax, "wall time by phase (rank 0)", "seconds")
    _legend_outside(ax)


def plot_throughput(ax, records: Sequence[dict[str, Any]]) -> None:
    """Samples per second per epoch."""
    ax.plot(*_series(records, "samples_per_s"), marker="o")
    _epoch_axis(ax, "throughput", "samples/s")


def plot_learning(ax, records: Sequence[dict[str, Any]]) -> None:
    """Training and validation loss, validation AUC on a second axis."""
    ax.plot(*_series(records, "train_loss"), marker="o", label="train loss")
    ax.plot(*_series(records, "val_loss"), marker="o", label="val loss")
    _epoch_axis(ax, "learning curves", "loss")
    twin = ax.twinx()
    twin.plot(*_series(records, "val_auc"), marker="s", color="tab:green", label="val AUC")
    twin.set_ylabel("val AUC")
    lines, more = ax.get_legend_handles_labels(), twin.get_legend_handles_labels()
    ax.legend(
        lines[0] + more[0],
        lines[1] + more[1],
        fontsize="x-small",
        loc="upper left",
        bbox_to_anchor=(1.14, 1.0),
        borderaxespad=0.0,
    )


def plot_lr(ax, records: Sequence[dict[str, Any]]) -> None:
    """The learning rate at the end of each epoch."""
    ax.plot(*_series(records, "lr"), marker="o", color="tab:purple")
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
    _epoch_axis(ax, "learning rate (end of epoch)", "lr")


def plot_cpu_share(ax, records: Sequence[dict[str, Any]]) -> None:
    """The least-served rank's CPU share per epoch, against the 60% warning line."""
    from pecan.report import CPU_SHARE_WARN

    epochs, shares = _series(records, "cpu_share_min")
    ax.plot(epochs, [100 * s for s in shares], marker="o", color="tab:red", label="lowest rank")
    ax.axhline(100 * CPU_SHARE_WARN, color="grey", linestyle="--", label="warning")
    ax.set_ylim(0, max([105.0, *(100 * s + 5 for s in shares)]))
    _epoch_axis(ax, "CPU share (CPU time / wall x threads)", "%")
    _legend_outside(ax)


def plot_ranks(ax, record: dict[str, Any]) -> None:
    """Each rank's seconds per phase in one epoch: grouped bars for a few ranks, a heat map (rank x phase)
    for many, so that a straggler stands out at 64 ranks too."""
    ranks = record.get("ranks") or {}
    count = len(ranks.get(PHASES[0], [])) or 1
    labels = [_phase_label(p) for p in PHASES]
    title = f"per-rank phases, epoch {record['epoch']}" + (
        f" (straggler ratio {record.get('straggler_ratio') or 1.0:.2f})" if count > 1 else ""
    )
    if count > BARS_UP_TO_RANKS:
        grid = [[(ranks.get(p) or [0.0] * count)[rank] for p in PHASES] for rank in range(count)]
        image = ax.imshow(grid, aspect="auto", cmap="viridis", interpolation="nearest")
        ax.figure.colorbar(image, ax=ax, label="seconds")
        ax.set_xticks(range(len(PHASES)), labels, rotation=45, ha="right", fontsize="small")
        ax.set(ylabel="rank", title=title)
        return
    width = 0.8 / count
    for rank in range(count):
        values = [(ranks.get(p) or [0.0] * count)[rank] for p in PHASES]
        ax.bar([k + rank * width for k in range(len(PHASES))], values, width=width, label=f"rank {rank}")
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(PHASES))], labels, rotation=45, ha="right", fontsize="small")
    ax.set(ylabel="seconds", title=title)
    if count > 1:
        _legend_outside(ax)


def write_plots(
    run_dir: str | Path, records: Sequence[dict[str, Any]], out_dir: str | Path | None = None
) -> list[Path]:
    """Write run.png (six panels) into ``out_dir`` (default RUN_DIR/plots); returns the paths."""
    plt = _pyplot()
    out = Path(out_dir) if out_dir else Path(run_dir) / "plots"
    out.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(3, 2, figsize=(13, 12), layout="constrained")
    plot_wall_time(axes[0][0], records)
    plot_throughput(axes[0][1], records)
    plot_learning(axes[1][0], records)
    plot_lr(axes[1][1], records)
    plot_cpu_share(axes[2][0], records)
    plot_ranks(axes[2][1], records[-1])
    figure.suptitle(f"PECAN run {Path(run_dir).resolve().name}")
    path = out / "run.png"
    figure.savefig(path, dpi=72)
    plt.close(figure)
    return [path]


# The overlay's panels: (record key, title, y label).
OVERLAY_PANELS = (
    ("samples_per_s", "throughput", "samples/s"),
    ("wall_s", "epoch wall time", "seconds"),
    ("train_loss", "training loss", "loss"),
    ("val_loss", "validation loss", "loss"),
    ("val_auc", "validation AUC", "AUC"),
    ("lr", "learning rate (end of epoch)", "lr"),
)


def write_overlay(runs: dict[str, Sequence[dict[str, Any]]], path: str | Path) -> Path:
    """One PNG with every run on the same axes (a line per run per panel); the legend names the runs."""
    plt = _pyplot()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(3, 2, figsize=(13, 11), layout="constrained")
    for ax, (key, title, ylabel) in zip(axes.flat, OVERLAY_PANELS):
        for name, records in runs.items():
            ax.plot(*_series(records, key), marker="o", label=name)
        _epoch_axis(ax, title, ylabel)
        if key == "lr":
            ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
    handles, labels = axes.flat[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside right upper", fontsize="small", title="run")
    figure.suptitle(f"PECAN runs: {', '.join(runs)}")
    figure.savefig(path, dpi=72)
    plt.close(figure)
    return path


SCALARS = (
    "train_loss",
    "val_loss",
    "val_auc",
    "val_acc",
    "val_top1",
    "lr",
    "samples_per_s",
    "wall_s",
    "data_wait_share",
    "straggler_ratio",
    "cpu_share_min",
    "fit_top1",
    "fit_docking_top1",
    "fit_teacher_top1",
    "fit_teacher_spearman",
    *PHASES,
)
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
        flat = {
            f"{section}.{key}": value
            for section, values in config.to_dict().items()
            for key, value in values.items()
            if isinstance(value, (int, float, str, bool))
        }
        metrics = {
            f"final/{name}": float(record[name])
            for name in HPARAM_METRICS
            if isinstance(record.get(name), (int, float))
        }
        self.writer.add_hparams(flat, metrics, run_name=".")

    def close(self) -> None:
        """Flush and close the event file."""
        self.writer.close()
