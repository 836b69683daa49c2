"""The sections of the run configuration: data, train, trace, synthetic, and the first keys of the model
section (ModelChoice). Every field carries its documentation in ``metadata["doc"]`` (``_doc``), from which
pecan.config.docs renders the reference. pecan.config assembles them into ``Config`` and loads it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Union

from pecan.data import io_modes


def _doc(text: str, default: Any = dataclasses.MISSING, factory: Any = dataclasses.MISSING) -> Any:
    if factory is not dataclasses.MISSING:
        return field(default_factory=factory, metadata={"doc": text})
    return field(default=default, metadata={"doc": text})


@dataclass
class DataConfig:
    """Where the shards are, how samples become graphs, and how they are loaded."""

    data_dir: str = _doc("Directory holding the shards; relative shard paths in index CSVs resolve here.", "")
    train_csvs: list[str] = _doc(
        "Index CSVs of the training split: absolute, or relative to data_dir first, then to the working directory "
        "(found in both and different: an error).",
        factory=list,
    )
    train_fns: list[str] = _doc(
        "Training shard files (globs allowed); the index is derived from the shards when no CSV is given "
        "or the CSV cannot be read.",
        factory=list,
    )
    val_csvs: list[str] = _doc("Index CSVs of the validation split.", factory=list)
    val_fns: list[str] = _doc("Validation shard files (globs allowed).", factory=list)
    test_csvs: list[str] = _doc(
        "Index CSVs of a test set; when set (or test_fns), `pecan predict --config` scores these instead of the "
        "training and validation data.",
        factory=list,
    )
    test_fns: list[str] = _doc("Test shard files (globs allowed), scored by `pecan predict --config`.", factory=list)
    val_fraction: float = _doc(
        "Fraction of complexes held out for validation when no val_csvs/val_fns are given (split by complex).", 0.2
    )
    split_seed: int = _doc("Seed of the complex-level train/validation split.", 0)
    pose_group: str = _doc("Group path of docked poses inside each complex.", "pybel/processed/docking")
    crystal_group: str = _doc(
        "Group path of the crystal pose inside each complex; the sibling name 'crystal' is accepted too.",
        "pybel/processed/pdbbind",
    )
    use_crystal: bool = _doc("Include crystal poses (label 1, rmsd 0) as samples when the shards have them.", True)
    rmsd_threshold: float = _doc("A pose with RMSD below this (Angstrom) is near-native (label 1).", 2.0)
    label_source: Literal["auto", "stored", "rmsd"] = _doc(
        "Where labels come from: stored (the label column/attribute; rmsd fills missing ones), rmsd (rmsd < "
        "rmsd_threshold for every pose), auto (stored, checked against rmsd; see label_conflict).",
        "auto",
    )
    label_conflict: Literal["error", "warn"] = _doc(
        "Under label_source auto, stored labels that contradict rmsd at rmsd_threshold: stop naming the first "
        "pose and the count, or warn with the count and train on the stored labels.",
        "error",
    )
    allow_single_class: bool = _doc("Train even when every training label is the same class (else an error).", False)
    target_column: str = _doc(
        "Soft targets: a column of the training index CSVs holding each pose's probability in [0, 1] (a "
        "teacher's score, e.g. GNINA's CNNscore, or your own), mixed into the BCE target by train.target_mix and "
        "read by the teacher-ordered ranking losses and the fit check. Every docked pose needs a value (an empty, "
        "non-numeric or out-of-range cell is an error naming the CSV line); a crystal pose's cell may be empty and "
        "is never read: its target is its label 1 (docs/distillation.md). Empty: off.",
        "",
    )
    pocket_radius: float = _doc("Keep protein atoms within this distance (Angstrom) of any ligand atom.", 6.0)
    edge_cutoff: float = _doc("Connect atoms closer than this (Angstrom).", 4.5)
    batch_size: int = _doc("Graphs per batch per rank.", 8)
    num_workers: int = _doc(
        "DataLoader workers per rank; -1 (auto): 0 for io_mode packed (its in-process gather is cheaper than "
        "a worker hand-over), else physical cores per rank minus one.",
        -1,
    )
    io_mode: Literal[io_modes.NAMES] = _doc(
        "Data path level: reopen (naive baseline), handle_cache, hoist, decode_cache, packed "
        "(memory-mapped flat copy, zero HDF5 calls per sample).",
        "packed",
    )
    cache_dir: str = _doc(
        "Preferred directory of packs (env PECAN_CACHE_DIR when empty); then beside the shards (.pecan_cache), "
        "the per-user cache ($XDG_CACHE_HOME/pecan), the per-user temp dir: the first writable one wins.",
        "",
    )
    index_dir: str = _doc(
        "Preferred directory of derived index CSVs (env PECAN_INDEX_CSV_DIR when empty); then beside the shards, "
        "the per-user cache, the per-user temp dir.",
        "",
    )
    stage_dir: str = _doc(
        "Node-local directory (e.g. local NVMe) the packs (or, for HDF5 io modes, the shards) are copied to at "
        "start by one process per node; empty: off. Any copy failure falls back to reading in place.",
        "",
    )
    decode_cache: bool = _doc(
        "Keep decoded samples per worker for io_mode decode_cache (forced off by augment); "
        "env PECAN_DECODE_CACHE=0|1 overrides.",
        True,
    )
    shuffle: Literal["global", "block", "window", "complex", "balanced"] = _doc(
        "Training order: global uniform shuffle; block (shuffled shards, shuffled within each shard); window "
        "(shuffled shards, samples shuffled within each window of 8 consecutive shards: a rank reads about 8 packs "
        "at a time, so data larger than memory are read from disk about once per epoch); complex "
        "(shuffled complexes, shuffled poses within each: batches hold whole complexes, for "
        "train.ranking_loss_weight); balanced (complex order with the same number of poses drawn from every "
        "complex per epoch: the mean per complex, subsampled or repeated).",
        "global",
    )
    augment: bool = _doc("Apply a random rigid rotation per sample (forces the decode cache off).", False)
    on_bad_sample: Literal["error", "skip"] = _doc(
        "On a broken sample: stop with an error naming shard and pose, or count, log and skip it.", "error"
    )
    index_prefix: str = _doc("Name prefix of a derived index CSV (<prefix>_all.csv).", "pecan")
    max_atoms: int = _doc(
        "Largest pose (atoms after the pocket crop) built into a graph; a larger one is a bad sample "
        "(error, or skipped under on_bad_sample: skip) before its edges are allocated.",
        20000,
    )
    max_edges: int = _doc("Largest number of radius edges of one pose; a larger one is a bad sample.", 2000000)


@dataclass
class ModelChoice:
    """Which model variant (the first fields of the ``model:`` section)."""

    name: str = _doc("Model variant from the registry: egnn, sgcnn, ggcnn or cnn3d (see the variant table).", "egnn")
    nn_type: Optional[int] = _doc(
        "Legacy numeric model id (0 cnn3d, 1 sgcnn, 2 ggcnn, 3 egnn); overrides name when set.", None
    )


@dataclass
class TrainConfig:
    """Optimisation, devices and where results go."""

    epochs: int = _doc("Training epochs.", 10)
    lr: float = _doc("Peak AdamW learning rate (cosine decay to 5% of it).", 1e-3)
    weight_decay: float = _doc("AdamW weight decay.", 1e-4)
    warmup_steps: int = _doc("Linear learning-rate warm-up steps.", 0)
    pos_weight: Union[float, Literal["auto"]] = _doc(
        "Weight of the positive (near-native) class in the loss; auto: negatives/positives of the training index.", 1.0
    )
    grad_clip: float = _doc("Clip the global gradient norm to this value; 0 disables.", 1.0)
    seed: int = _doc("Seed for model init, sampling order and dropout.", 0)
    device: str = _doc("auto (cuda:local_rank when available, else cpu), cpu, or cuda.", "auto")
    out_dir: str = _doc("Run directory: config.yaml, epochs.jsonl, checkpoints, traces.", "runs/default")
    amp: Literal["off", "bf16"] = _doc("Mixed precision: bf16 autocast (no GradScaler needed) or off.", "off")
    compile: bool = _doc("torch.compile the model (dynamic shapes); env PECAN_TORCH_COMPILE=0|1 overrides.", False)
    compile_backend: Literal["inductor", "aot_eager", "eager"] = _doc(
        "torch.compile backend when train.compile is on: inductor (generated kernels, the speed-up), aot_eager "
        "(graph capture and autograd tracing, eager kernels: tells a capture failure from a code-generation one, "
        "and needs no compiler) or eager (capture only).",
        "inductor",
    )
    resume: str = _doc(
        "auto: continue from out_dir's last checkpoint if present; never; or a checkpoint path. A run that starts "
        "fresh (never, or auto without a checkpoint) in an out_dir holding an earlier run's epochs.jsonl moves that "
        "file to epochs.before-<UTC time>.jsonl (one warning), so epochs.jsonl holds this run's epochs only.",
        "auto",
    )
    schedule_on_resume: Literal["continue", "restart"] = _doc(
        "When a resumed run is longer or shorter than its checkpoint's (train.epochs changed, or another world "
        "size or batch size changed the steps per epoch): continue (the learning rate goes on from the value the "
        "checkpoint's schedule had reached and anneals to its floor over the steps left; after a finished run it "
        "stays at the floor) or restart (a warm restart: train.warmup_steps of warm-up, then cosine decay from "
        "train.lr over the steps left). A resume of the same length continues the schedule exactly either way.",
        "continue",
    )
    init_from: str = _doc(
        "A checkpoint whose model weights start training (pre-training, e.g. on synthetic data, then fine-tuning): "
        "the same variant and model settings, weights only (optimizer, schedule and epoch start fresh). A resumed "
        "run's own checkpoint takes precedence. Empty: random initialisation.",
        "",
    )
    select_on: Literal["val_auc", "val_loss"] = _doc(
        "Which epoch's checkpoint is best.pt: highest validation AUC over docked poses (falling back to lowest "
        "val_loss, with a log line, while AUC is undefined, e.g. one-class validation), or lowest val_loss.",
        "val_auc",
    )
    ranking_loss_weight: float = _doc(
        "Weight of a per-complex ranking loss added to BCE (its form: train.ranking_loss; by default "
        "softplus(s_neg - s_pos) over every (near-native, other) pose pair of one complex within a batch); 0 turns "
        "it off.",
        0.0,
    )
    ranking_loss: Literal["pairwise", "listwise", "teacher_kl", "top_weighted"] = _doc(
        "Form of the ranking loss: pairwise, softplus(s_other - s_near) averaged over pose pairs; listwise, per "
        "complex minus the log of the softmax probability of its near-native poses (the top-1 objective: the "
        "best-scored wrong poses weigh most); teacher_kl, per complex KL(teacher softmax || model softmax) over its "
        "docked poses in the batch, the teacher's logits logit(p) of data.target_column, both divided by "
        "train.ranking_temperature (needs data.target_column); top_weighted, the pairs of train.ranking_target, "
        "each weighted by 1/log2(1 + rank of its better pose in that order within the complex), so the top of each "
        "list weighs most. listwise needs train.ranking_target label.",
        "pairwise",
    )
    ranking_target: Literal["label", "rmsd", "teacher"] = _doc(
        "Which pose pairs the ranking loss orders: label, every (near-native, other) pair; rmsd, every pair of one "
        "complex whose RMSDs to the crystal pose differ by at least train.ranking_rmsd_margin (the closer pose "
        "first), so complexes without a near-native pose teach too; teacher, every pair of docked poses of one "
        "complex whose data.target_column values differ (the higher first). Needs an rmsd column for rmsd, "
        "data.target_column for teacher.",
        "label",
    )
    ranking_temperature: float = _doc(
        "Temperature of train.ranking_loss teacher_kl: the teacher's and the model's logits are divided by it "
        "before each softmax (higher: a softer teacher, the lower ranks count more).",
        1.0,
    )
    target_mix: float = _doc(
        "With data.target_column: the BCE target is target_mix * the soft target + (1 - target_mix) * the label "
        "(1: the teacher's score alone, 0: the label alone; a crystal pose's soft target is its label).",
        1.0,
    )
    fit_check_complexes: int = _doc(
        "Fit check at each epoch's end (or as train.fit_check_every says): up to this many training complexes "
        "(a fixed, seeded sample) scored in eval mode, their top-1 against the labels beside the docking "
        "score's, and with data.target_column the agreement with the teacher's first pose and the median "
        "per-complex Spearman correlation with it (epochs.jsonl fit_* fields, docs/reports.md); 0: off.",
        64,
    )
    fit_check_every: int = _doc(
        "Run the fit check (train.fit_check_complexes) after every this many epochs and after the last; the "
        "epochs between carry no fit_* fields. 1: every epoch.",
        1,
    )
    ranking_rmsd_margin: float = _doc(
        "Smallest RMSD difference (Angstrom) of a pair ranked by train.ranking_target rmsd.", 1.0
    )
    max_steps_per_epoch: int = _doc("Stop an epoch after this many steps; 0 means the full epoch.", 0)
    deterministic: bool = _doc("Use deterministic algorithms (slower; for exact reproduction).", False)
    progress: Union[bool, Literal["auto", "bar", "lines", "off"]] = _doc(
        "Rank 0's progress: auto (a bar on a "
        "terminal, else a line every progress_every_seconds), bar, lines, off; true/false mean bar/off.",
        "auto",
    )
    progress_every_seconds: float = _doc("Seconds between progress lines; 0: every step.", 30.0)
    report: Literal["full", "compact"] = _doc("Epoch report: full (line + phase table) or compact (one line).", "full")
    intra_op_threads: int = _doc(
        "Torch threads per rank; 0: OMP_NUM_THREADS if set, else sized to the cores and the idle CPUs.", 0
    )
    sync_dir: str = _doc(
        "Shared directory out_dir is mirrored to (atomically, file by file) every sync_every_minutes and at "
        "exit, so out_dir can be node-local; empty: off.",
        "",
    )
    sync_every_minutes: float = _doc("Minutes between syncs of out_dir to sync_dir.", 10.0)
    checkpoint_every_steps: int = _doc(
        "Also write checkpoints/mid_epoch.pt every this many steps of an epoch (resume continues at the next "
        "step); 0: off.",
        0,
    )
    checkpoint_every_minutes: float = _doc(
        "Also write checkpoints/mid_epoch.pt when this many minutes passed since the last checkpoint; 0: off.", 0.0
    )
    stop_signal: str = _doc(
        "Early-warning signal that stops the run at the next step with a checkpoint, like SIGTERM and SIGINT "
        "(Slurm: #SBATCH --signal=USR1@120); none: only SIGTERM and SIGINT.",
        "SIGUSR1",
    )
    collective_timeout_s: float = _doc(
        "Seconds a rank waits in a collective for its peers before it stops with an error naming it.", 600.0
    )
    lock_stale_minutes: float = _doc(
        "A .pecan.lock whose heartbeat (refreshed every minute by its run) is older than this is stale and taken "
        "over, whichever host wrote it.",
        10.0,
    )
    on_nonfinite_loss: Literal["error", "skip"] = _doc(
        "A NaN or infinite training loss: stop naming epoch and step, or skip that step (counted in "
        "epochs.jsonl as nonfinite_steps).",
        "error",
    )
    plots: bool = _doc("At the end of a run, rank 0 writes PNG plots into out_dir/plots (needs .[plots]).", True)
    tensorboard: bool = _doc("TensorBoard scalars (epoch, per-step loss/LR, hparams) in out_dir/tensorboard.", False)
    tensorboard_every_steps: int = _doc("Steps between the per-step TensorBoard loss and LR scalars.", 10)

    def __post_init__(self) -> None:
        if isinstance(self.progress, bool):  # older configs: true/false
            self.progress = "bar" if self.progress else "off"


@dataclass
class TraceConfig:
    """dftracer annotations."""

    enabled: bool = _doc(
        "Write dftracer traces (needs the native dftracer package: pip install .[trace-native]).", False
    )
    dir: str = _doc("Trace directory; relative paths are inside train.out_dir.", "traces")
    posix: bool = _doc(
        "Also trace file I/O (POSIX calls) under data.data_dir through dftracer's data-dir interception.", False
    )


@dataclass
class SyntheticConfig:
    """Synthetic demo data generated into data.data_dir on first use (same arguments: reused)."""

    enabled: bool = _doc("Generate the synthetic data set into data.data_dir unless it is already there.", False)
    shards: int = _doc("Number of shards.", 4)
    complexes_per_shard: int = _doc("Complexes per shard.", 12)
    seed: int = _doc("Generator seed.", 0)
