"""Trainer behaviour through its public methods: metric wiring with known scores, exact resume with
dropout and augmentation, zero-weight replay, gradient clipping, bf16 against fp32."""

import math

import numpy as np
import pytest
import torch

from pecan.engine.distributed import discover
from pecan.train import checkpoint as ckpt
from pecan.train.components import cosine_schedule
from pecan.train.ranking import listwise_ranking_loss, rmsd_ranking_loss
from pecan.train.timing import PhaseTimer
from pecan.train.trainer import Trainer
from tests import configs
from tests.configs import DROP, SMALL_MODEL
from tests.shards import write_dataset

# Every complex: pose0 near-native (rmsd 0.5), pose1/pose2 decoys, plus a crystal pose (label 1).
RMSDS = [0.5, 3.0, 4.0]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("trainer-behaviour") / "data"
    write_dataset(directory, n_shards=2, n_complexes=2, rmsds=RMSDS, n_poses=len(RMSDS))
    return directory


def make_config(data_dir, out_dir, *overrides: str):
    """The factory's tiny run over ``data_dir`` (half of it for validation, a small model), run in out_dir."""
    settings = {
        "data.data_dir": str(data_dir),
        "data.val_fraction": 0.5,
        "model": SMALL_MODEL,
        "train.plots": DROP,
    }
    return configs.make_config(out_dir, settings, *overrides, dataset={})[1]


def trainer_for(data_dir, out_dir, *overrides: str) -> Trainer:
    return Trainer.from_config(make_config(data_dir, out_dir, *overrides), discover({}), torch.device("cpu"))


class KnownScores(torch.nn.Module):
    """Stands in for the model at evaluation: one fixed score per validation sample (by sample id)."""

    def __init__(self, scores: torch.Tensor) -> None:
        super().__init__()
        self.scores = scores

    def forward(self, batch) -> torch.Tensor:
        return self.scores[batch.sample_id]


def scores_by_kind(table, crystal: float, near_native: float, decoys: tuple[float, float]) -> torch.Tensor:
    scores = torch.empty(len(table))
    for i in range(len(table)):
        if table.is_crystal[i]:
            scores[i] = crystal
        elif table.label[i] == 1:
            scores[i] = near_native
        else:
            scores[i] = decoys[int(str(table.pose_id[i]).endswith("pose2"))]
    return scores


def softplus(value: float) -> float:
    return math.log1p(math.exp(value))


def test_validation_metrics_from_known_scores(data_dir, tmp_path):
    trainer = trainer_for(data_dir, tmp_path)
    try:
        table = trainer.data.val_set.table
        # Two complexes of 4 samples each: the split and the labels are what the fixture wrote.
        assert len(table) == 8 and int(table.is_crystal.sum()) == 2 and int(table.label.sum()) == 4

        # Crystal scored highest, then the decoys, then the near-native pose. Over docked poses only (the
        # documented rule) each complex's top pose is a decoy: top-1 is 0. Counting the crystal would give 1.
        trainer.model = KnownScores(scores_by_kind(table, crystal=10.0, near_native=-1.0, decoys=(5.0, 5.0)))
        metrics = trainer.evaluate()
        assert metrics["val_top1"] == 0.0
        # Docked poses only: the near-native pose (-1) and both decoys (5) are on the wrong side of 0, and
        # every decoy outranks the near-native pose. Counting the crystal would give 0.25 and 0.5.
        assert metrics["val_acc"] == 0.0 and metrics["val_auc"] == 0.0 and metrics["val_docked"] == 6
        assert metrics["val_acc_with_crystal"] == 0.25  # per complex only the crystal is right
        assert metrics["val_auc_with_crystal"] == 0.5  # crystal above every decoy, near-native below every decoy
        expected_loss = (softplus(-10.0) + 2 * softplus(5.0) + softplus(1.0)) / 4
        assert metrics["val_loss"] == pytest.approx(expected_loss, rel=1e-6)

        # Near-native highest, crystal just below 0: top-1 is 1, accuracy 3/4, AUC 1 except the crystal.
        trainer.model = KnownScores(scores_by_kind(table, crystal=-1.0, near_native=3.0, decoys=(-2.0, -4.0)))
        metrics = trainer.evaluate()
        assert metrics["val_top1"] == 1.0
        assert metrics["val_acc"] == 1.0 and metrics["val_acc_with_crystal"] == 0.75
        # Positives {3, 3, -1, -1} vs negatives {-2, -2, -4, -4}: every pair ranked right, crystal or not.
        assert metrics["val_auc"] == 1.0 and metrics["val_auc_with_crystal"] == 1.0
    finally:
        trainer.close()


def final_weights(out_dir) -> dict:
    return ckpt.load_checkpoint(out_dir / "run" / "checkpoints" / "last.pt")["model"]


@pytest.mark.slow
def test_resume_with_dropout_and_augmentation_equals_full_run(data_dir, tmp_path):
    settings = ("model.dropout=0.3", "data.augment=true", "train.deterministic=true", "train.epochs=2")
    full = trainer_for(data_dir, tmp_path / "full", *settings)
    try:
        full.fit()
    finally:
        full.close()

    first = trainer_for(data_dir, tmp_path / "resumed", *settings)
    try:
        first.run_epoch(0)  # then the job is killed
    finally:
        first.close()
    second = trainer_for(data_dir, tmp_path / "resumed", *settings)
    try:
        assert second.start_epoch == 1
        assert second.step == first.step and second.best_auc == first.best_auc
        assert second.resumed_from == str(tmp_path / "resumed" / "run" / "checkpoints" / "last.pt")
        assert second.scheduler.get_last_lr() == first.scheduler.get_last_lr()
        second.fit()
    finally:
        second.close()

    expected, got = final_weights(tmp_path / "full"), final_weights(tmp_path / "resumed")
    assert expected.keys() == got.keys()
    differing = [name for name in expected if not torch.equal(expected[name], got[name])]
    assert differing == []


def snapshot(model) -> dict:
    return {name: value.detach().clone() for name, value in model.state_dict().items()}


@pytest.mark.parametrize("previous_batch", [True, False])
def test_replayed_batch_has_zero_weight(data_dir, tmp_path, previous_batch):
    """A rank whose whole batch was bad replays a batch to keep DDP in step; it must not train on it. With no
    weight decay and a fresh optimiser, a zero gradient leaves every weight bit-identical."""
    trainer = trainer_for(data_dir, tmp_path, "train.weight_decay=0.0")
    try:
        if previous_batch:
            trainer.last_batch = trainer.data.train_set.__getitems__([0, 1, 2])
            del trainer.last_batch.io_counts
        before = snapshot(trainer.raw_model)
        trainer.keep_in_step(PhaseTimer(torch.device("cpu")))
        assert trainer.step == 1  # the optimiser stepped, as on the other ranks
        train = trainer.config.train
        factor = cosine_schedule(trainer.steps_per_epoch() * train.epochs, train.warmup_steps)(1)
        assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(train.lr * factor)
        after = snapshot(trainer.raw_model)
        assert [k for k in before if not torch.equal(before[k], after[k])] == []

        # The same step with full weight does move the weights (the check above can fail).
        trainer.train_step(trainer.last_batch, PhaseTimer(torch.device("cpu")))
        moved = snapshot(trainer.raw_model)
        assert any(not torch.equal(after[k], moved[k]) for k in after)
    finally:
        trainer.close()


def gradient_norms_seen_by_optimizer(trainer: Trainer, batch) -> list[float]:
    norms = []

    def record(optimizer, args, kwargs):
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        norms.append(float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))))

    handle = trainer.optimizer.register_step_pre_hook(record)
    try:
        trainer.train_step(batch, PhaseTimer(torch.device("cpu")))
    finally:
        handle.remove()
    return norms


@pytest.mark.parametrize("clip", [0.0, 1e-3])
def test_gradient_clipping_bounds_the_step(data_dir, tmp_path, clip):
    trainer = trainer_for(data_dir, tmp_path, f"train.grad_clip={clip}")
    try:
        batch = trainer.data.train_set.__getitems__([0, 1, 2, 3])
        del batch.io_counts
        # The gradient of the batch's mean BCE, computed here without the trainer's step.
        params = [p for p in trainer.raw_model.parameters() if p.requires_grad]
        grads = torch.autograd.grad(trainer.forward_loss(batch), params, allow_unused=True)
        expected = float(
            torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads if g is not None]))
        )
        (norm,) = gradient_norms_seen_by_optimizer(trainer, batch)
        if clip:
            assert norm <= clip * (1 + 1e-4)
            assert norm >= clip * 0.99  # clipped to the bound, not zeroed
        else:
            assert norm > 1e-2  # unclipped gradients of this batch are far above the bound tested
            assert norm == pytest.approx(expected, rel=1e-4)  # one batch, weight 1, nothing accumulated
    finally:
        trainer.close()


def test_bf16_loss_close_to_fp32(data_dir, tmp_path):
    """bf16 autocast keeps ~3 significant digits; on this batch the loss must agree with fp32 to 2e-2."""
    trainer = trainer_for(data_dir, tmp_path)
    try:
        batch = trainer.data.train_set.__getitems__(list(range(8)))
        del batch.io_counts
        trainer.model.eval()
        with torch.no_grad():
            full = float(trainer.forward_loss(batch))
            trainer.config.train.amp = "bf16"
            reduced = float(trainer.forward_loss(batch))
        assert math.isfinite(reduced)
        assert reduced != full  # autocast really ran in reduced precision
        assert abs(reduced - full) < 2e-2
    finally:
        trainer.close()


def test_evaluation_runs_the_model_in_eval_mode(data_dir, tmp_path):
    """Dropout is off while evaluating, whatever mode training left the model in."""
    trainer = trainer_for(data_dir, tmp_path, "model.dropout=0.5")
    try:
        trainer.model.train()
        first = trainer.evaluate()
        trainer.model.train()
        second = trainer.evaluate()
        assert first == second
        assert not trainer.raw_model.training
    finally:
        trainer.close()


def test_evaluation_counts_its_reads(data_dir, tmp_path):
    """Validation reads land in the epoch's I/O counters (every validation sample once)."""
    from pecan.data.sample import COUNTER_FIELDS

    trainer = trainer_for(data_dir, tmp_path)
    try:
        counts = np.zeros(len(COUNTER_FIELDS), dtype=np.int64)
        trainer.evaluate(counts)
        assert counts[COUNTER_FIELDS.index("samples")] == len(trainer.data.val_set)
    finally:
        trainer.close()


def first_batch_loss(trainer):
    """The first training batch, the trainer's loss of it, the model's logits and their BCE alone."""
    batch, _ = next(iter(trainer.data.train_loader))  # (batch, read counts)
    loss = trainer.forward_loss(batch)
    with torch.no_grad():
        logits = trainer.model(batch).float()
    bce = torch.nn.functional.binary_cross_entropy_with_logits(
        logits, batch.y.float(), pos_weight=torch.tensor(trainer.data.pos_weight)
    )
    return batch, loss, logits, bce


def test_ranking_target_rmsd_orders_the_training_poses_by_their_rmsd(data_dir, tmp_path):
    trainer = trainer_for(
        data_dir, tmp_path / "run", "train.ranking_loss_weight=1.0", "train.ranking_target=rmsd", "data.augment=false"
    )
    try:
        table = trainer.data.train_set.table
        expected = [
            0.0 if crystal else RMSDS[int(str(pose)[-1])] for crystal, pose in zip(table.is_crystal, table.pose_id)
        ]
        assert trainer.loss.rmsd.tolist() == pytest.approx(expected)
        batch, loss, logits, bce = first_batch_loss(trainer)
        ranking = rmsd_ranking_loss(logits, torch.tensor(expected)[batch.sample_id], batch.complex_code, 1.0)
        assert ranking.item() > 0  # the batch has pairs
        assert loss.item() == pytest.approx((bce + ranking).item(), rel=1e-5)
    finally:
        trainer.close()


def test_ranking_loss_listwise_is_what_the_trainer_adds_to_bce(data_dir, tmp_path):
    trainer = trainer_for(
        data_dir, tmp_path / "run", "train.ranking_loss_weight=0.5", "train.ranking_loss=listwise", "data.augment=false"
    )
    try:
        assert trainer.loss.rmsd is None
        batch, loss, logits, bce = first_batch_loss(trainer)
        listwise = listwise_ranking_loss(logits, batch.y, batch.complex_code)
        assert listwise.item() > 0  # the batch has a complex with both kinds of pose
        assert loss.item() == pytest.approx((bce + 0.5 * listwise).item(), rel=1e-5)
    finally:
        trainer.close()
