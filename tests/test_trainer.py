"""The training loop: schedule, batching, a short real run, determinism and the run folder."""

from __future__ import annotations

import copy
import io
import json
import math
import random
import sys
from typing import Any

import numpy as np
import pytest
import torch
from helpers import SRC, TGT, TINY_SRC, TINY_TGT, small_model, toy_pairs

import luong.training.data
import luong.training.objective
from luong import Seq2Seq, Seq2SeqConfig, TrainConfig, train
from luong.data.batching import Batch, ParallelData, bucketed_batches, token_batches
from luong.data.vocab import Vocab
from luong.training.objective import loss_of, lr_factor, make_optimizer
from luong.training.trainer import Trainer

SMALL_MODEL = Seq2SeqConfig(emb_dim=16, enc_hidden=32, enc_layers=1, dec_hidden=64)
SMALL_DATA = {"n_train": 2000, "n_dev": 200, "n_test": 500}


def small_train_config(**changes: object) -> TrainConfig:
    settings: dict[str, object] = {
        "epochs": 10,
        "batch_size": 64,
        "lr": 5e-3,
        "warmup_steps": 20,
        "eval_every": 1000,
        "progress": False,
    }
    settings.update(changes)
    return TrainConfig(**settings)  # type: ignore[arg-type]


# -- the schedule ----------------------------------------------------------------------------


def test_lr_factor_warms_up_linearly_then_decays() -> None:
    assert lr_factor(0, 100, 10, "linear") == pytest.approx(0.1)
    assert lr_factor(9, 100, 10, "linear") == pytest.approx(1.0)
    assert lr_factor(10, 100, 10, "linear") == pytest.approx(1.0)
    assert lr_factor(55, 100, 10, "linear") == pytest.approx(0.5)
    assert lr_factor(100, 100, 10, "linear") == pytest.approx(0.0)
    assert lr_factor(55, 100, 10, "cosine") == pytest.approx(0.5)
    assert lr_factor(10 + 90 // 4, 100, 10, "cosine") == pytest.approx(
        0.5 * (1 + math.cos(math.pi * 22 / 90))
    )
    assert lr_factor(99, 100, 10, "constant") == 1.0
    assert lr_factor(0, 100, 0, "constant") == 1.0


# -- batching --------------------------------------------------------------------------------


def test_bucketed_batches_cover_every_example_once_with_little_padding() -> None:
    rng = random.Random(0)
    lengths = [rng.randint(1, 40) for _ in range(1000)]
    batches = bucketed_batches(lengths, 32, random.Random(1), pool=8)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(1000))
    assert all(1 <= len(b) <= 32 for b in batches)
    # Sorted pools: a batch spans a narrow range of lengths.
    spread = sum(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches)
    assert spread / len(batches) < 10
    # The order follows from the generator alone.
    again = bucketed_batches(lengths, 32, random.Random(1), pool=8)
    assert [b.tolist() for b in batches] == [b.tolist() for b in again]
    other = bucketed_batches(lengths, 32, random.Random(2), pool=8)
    assert [b.tolist() for b in batches] != [b.tolist() for b in other]


def test_the_batchers_order_is_the_one_of_earlier_versions() -> None:
    # Golden batches from luong 0.x's list-based batchers (Python's sorted and shuffle on
    # lists): the numpy-held ones must give the same, from a list, a numpy array of a
    # prepared corpus's int32 lengths or a tensor, so that a run resumed across the change
    # replays the same epoch.
    src = [5, 3, 9, 2, 7, 7, 4, 8, 1, 6, 3, 9, 2, 5]
    tgt = [6, 4, 8, 3, 9, 2, 5, 7, 3, 6, 4, 10, 2, 8]
    expected = [[13, 7], [4, 11], [5, 0], [12, 3, 9], [2], [8, 1, 10, 6]]
    for s, t in (
        (src, tgt),
        (np.array(src, dtype=np.int32), np.array(tgt, dtype=np.int32)),
        (torch.tensor(src), torch.tensor(tgt)),
    ):
        batches = token_batches(s, t, 40, random.Random(7), pool=2)
        assert [b.tolist() for b in batches] == expected
    batches = bucketed_batches(src, 3, random.Random(7), pool=2)
    assert [b.tolist() for b in batches] == [
        [4, 7, 11], [8, 12, 1], [3, 13, 9], [5, 2], [10, 6, 0]
    ]  # fmt: skip
    with pytest.raises(ValueError, match=r"src_lengths: expected one int per example, got an"):
        token_batches([[1, 2]], [3], 40, random.Random(7))


def test_bucketed_batches_reject_bad_sizes() -> None:
    with pytest.raises(ValueError, match="batch_size: expected an int >= 1, got 0"):
        bucketed_batches([1, 2], 0, random.Random(0))


def test_parallel_data_adds_bos_and_eos_and_trims_batches() -> None:
    src_vocab, tgt_vocab = TINY_SRC, TINY_TGT
    data = ParallelData([("ab", "x"), ("abca", "yxy")], src_vocab, tgt_vocab)
    batch = data.batch([0])
    eos, bos = Vocab.eos_id, Vocab.bos_id
    a, b = src_vocab.id("a"), src_vocab.id("b")
    assert batch.src.tolist() == [[a, b, eos]]
    assert batch.src_lengths.tolist() == [3]
    assert batch.tgt.tolist() == [[bos, tgt_vocab.id("x"), eos]]
    both = data.batch([1, 0])
    assert both.src.shape == (2, 5)
    assert both.tgt.shape == (2, 5)
    assert both.target_tokens == 4 + 2


# -- a short real run ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def short_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, object]:
    out = tmp_path_factory.mktemp("run")
    result = train(
        "dates",
        out,
        model_config=SMALL_MODEL,
        train_config=small_train_config(keep_checkpoints=2),
        task_options=SMALL_DATA,
    )
    return result.metrics, out


def test_short_run_learns_dates(short_run: tuple[dict, object]) -> None:
    metrics, _ = short_run
    curve = metrics["dev_curve"]
    assert len(curve) == 10  # one evaluation per epoch
    assert curve[-1]["train_loss"] < curve[0]["train_loss"] / 10
    # 10 epochs of 2,000 pairs on a small model: well above chance, far from perfect.
    assert metrics["test_exact_match"] >= 0.6
    assert metrics["test_char_accuracy"] >= 0.9
    assert metrics["dev_exact_match"] == max(p["dev_exact_match"] for p in curve)
    assert metrics["steps"] == 10 * math.ceil(2000 / 64)


def test_run_folder_holds_model_metrics_and_last_checkpoints(short_run) -> None:
    metrics, out = short_run
    names = {p.name for p in out.iterdir()}
    assert {"model.safetensors", "config.json", "src_vocab.json", "tgt_vocab.json"} <= names
    on_disk = json.loads((out / "metrics.json").read_text())
    assert on_disk["test_exact_match"] == metrics["test_exact_match"]
    for key in ("dev_exact_match", "train_seconds", "steps", "dev_curve", "versions"):
        assert key in on_disk
    assert on_disk["versions"]["torch"] == torch.__version__
    steps_per_epoch = math.ceil(2000 / 64)
    kept = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert kept == ["latest", f"step-{9 * steps_per_epoch:07d}", f"step-{10 * steps_per_epoch:07d}"]
    assert (out / "checkpoints" / "latest").read_text().strip() == kept[2]
    run = json.loads((out / "run.json").read_text())
    assert run["train_config"]["seed"] == 0 and run["versions"]["torch"] == torch.__version__


def test_same_seed_same_weights_bit_for_bit() -> None:
    def weights(seed: int) -> dict[str, torch.Tensor]:
        result = train(
            "dates",
            None,
            model_config=SMALL_MODEL,
            train_config=small_train_config(epochs=1, seed=seed),
            task_options={"n_train": 500, "n_dev": 20, "n_test": 20},
        )
        return result.model.state_dict()

    first, second, other = weights(3), weights(3), weights(4)
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)


def test_patience_stops_early() -> None:
    result = train(
        "dates",
        None,
        model_config=SMALL_MODEL,
        train_config=small_train_config(epochs=50, patience=1, eval_every=5, lr=1e-6),
        task_options={"n_train": 200, "n_dev": 20, "n_test": 20},
    )
    # With a learning rate this small the dev score cannot improve twice in a row.
    assert result.metrics["stopped_early"] is True
    assert result.metrics["epochs"] < 50


def test_select_loss_keeps_the_weights_of_the_lowest_dev_loss(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The dev figures are scripted (dev_loss itself is checked against cross_entropy in
    # tests/test_evaluation.py): lower is better, and exact match says otherwise.
    pairs = toy_pairs(40)
    model = small_model(seed=0)
    losses = iter([2.0, 0.5, 1.0, 0.7, 0.1, 3.0])  # dev loss at each evaluation
    exact = iter([0.9, 0.1, 0.8, 0.2, 0.0, 1.0])
    weights_at: dict[int, torch.Tensor] = {}

    def evaluate(*args: object, **kwargs: object) -> dict[str, float]:
        return {"exact_match": next(exact), "char_accuracy": 0.0}

    def dev_loss(*args: object, **kwargs: object) -> float:
        weights_at[trainer.progress.step] = model.decoder.out.weight.detach().clone()
        return next(losses)

    monkeypatch.setattr("luong.training.dev.evaluate", evaluate)
    monkeypatch.setattr("luong.training.dev.dev_loss", dev_loss)
    config = TrainConfig(epochs=6, batch_size=40, select="loss", patience=2, progress=False)
    trainer = Trainer(model, pairs, pairs[:4], config, log=lambda m: None)
    metrics = trainer.run()
    # 0.5 at the second evaluation (one step an epoch); two evaluations without a lower one
    # stop the run.
    assert [p["dev_loss"] for p in trainer.progress.curve] == [2.0, 0.5, 1.0, 0.7]
    assert metrics["select"] == "loss" and metrics["stopped_early"]
    assert metrics["best_step"] == 2 and metrics["dev_loss"] == 0.5
    assert metrics["dev_exact_match"] == 0.1  # the figures of the selected evaluation
    assert torch.equal(model.decoder.out.weight, weights_at[2])
    assert not torch.equal(weights_at[2], weights_at[1])
    assert not torch.equal(weights_at[2], weights_at[4])


# -- gradient clipping and label smoothing, observed at the step --------------------------------


def recorded_grad_norms(trainer: Trainer) -> list[float]:
    """A list that fills, as ``trainer`` runs, with the norm of all gradients together at the
    moment each optimizer step is taken (after clipping, if any)."""
    norms: list[float] = []
    step = trainer.optimizer.step

    def recording_step(*args: Any, **kwargs: Any) -> Any:
        grads = [
            p.grad.double().flatten() for p in trainer.model.parameters() if p.grad is not None
        ]
        norms.append(float(torch.linalg.vector_norm(torch.cat(grads))))
        return step(*args, **kwargs)

    trainer.optimizer.step = recording_step  # type: ignore[method-assign]
    return norms


def test_the_gradient_norm_at_the_optimizer_step_is_clipped() -> None:
    clip = 0.01
    pairs = toy_pairs(64)

    def norms_at_steps(clip_norm: float) -> list[float]:
        config = TrainConfig(epochs=1, batch_size=16, clip_norm=clip_norm, progress=False)
        trainer = Trainer(small_model(), pairs, pairs[:4], config, log=lambda m: None)
        norms = recorded_grad_norms(trainer)
        trainer.run()
        return norms

    clipped, unclipped = norms_at_steps(clip), norms_at_steps(0.0)
    assert len(clipped) == len(unclipped) == 4
    assert all(norm <= clip * (1 + 1e-6) for norm in clipped), clipped
    # The control: the same first step (same weights, same batch) unclipped is far above it,
    # and clipping scaled it down to the bound, not to zero.
    assert unclipped[0] > 10 * clip
    assert clipped[0] == pytest.approx(clip, rel=1e-4)


def smoothed_loss_by_hand(model: Seq2Seq, batch: Batch, eps: float) -> float:
    """The mean over real (non-pad) target tokens y of
    (1 - eps) (-log p_y) + eps mean_v(-log p_v), in float64, one token at a time."""
    with torch.no_grad():
        logits = model(batch.src, batch.src_lengths, batch.tgt[:, :-1])
    log_p = torch.log_softmax(logits.double(), dim=-1).tolist()
    terms = []
    for b, row in enumerate(batch.tgt[:, 1:].tolist()):
        for t, y in enumerate(row):
            if y != Vocab.pad_id:
                uniform = -math.fsum(log_p[b][t]) / len(log_p[b][t])
                terms.append((1 - eps) * -log_p[b][t][y] + eps * uniform)
    return math.fsum(terms) / len(terms)


def test_smoothed_loss_is_the_hand_computed_mean_over_real_tokens() -> None:
    model = small_model().double()
    pairs = toy_pairs(6)
    batch = ParallelData(pairs, SRC, TGT).batch(range(len(pairs)))
    assert (batch.tgt[:, 1:] == Vocab.pad_id).any()  # padding, which must not count
    smoothed = smoothed_loss_by_hand(model, batch, 0.1)
    plain = smoothed_loss_by_hand(model, batch, 0.0)
    assert abs(smoothed - plain) > 1e-4
    assert loss_of(model, batch, 0.1).item() == pytest.approx(smoothed, abs=1e-10, rel=0)
    assert loss_of(model, batch).item() == pytest.approx(plain, abs=1e-10, rel=0)


def test_the_trainer_steps_on_the_smoothed_loss(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = toy_pairs(12)
    model = small_model().double()
    initial = copy.deepcopy(model)
    seen: list[tuple[Batch, float]] = []

    def recording_loss_of(model: Any, batch: Batch, label_smoothing: float = 0.0) -> Any:
        loss = loss_of(model, batch, label_smoothing)
        seen.append((batch, loss.item()))
        return loss

    monkeypatch.setattr(luong.training.objective, "loss_of", recording_loss_of)
    config = TrainConfig(epochs=1, batch_size=16, label_smoothing=0.1, progress=False)
    Trainer(model, pairs, pairs[:2], config, log=lambda m: None).run()
    assert len(seen) == 1  # one step: the initial weights on a batch of all 12 pairs
    batch, loss = seen[0]
    assert loss == pytest.approx(smoothed_loss_by_hand(initial, batch, 0.1), abs=1e-10, rel=0)
    assert abs(loss - smoothed_loss_by_hand(initial, batch, 0.0)) > 1e-4


def test_each_epochs_batches_are_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """__init__ builds epoch 1's batches (the later epochs' steps follow from the sizes
    alone with batch_size); run() reuses them instead of building them again, and trains on
    the batches a fresh build gives."""
    pairs = toy_pairs(96)
    built: list[list[int]] = []
    trained: list[list[int]] = []

    def counting_batches(*args: Any) -> list[np.ndarray]:
        batches = bucketed_batches(*args)
        built.append([len(b) for b in batches])
        return batches

    monkeypatch.setattr(luong.training.data, "bucketed_batches", counting_batches)
    config = small_train_config(epochs=3, batch_size=16, warmup_steps=1)
    trainer = Trainer(small_model(), pairs, pairs[:2], config, log=lambda m: None)
    assert len(built) == 1  # epoch 1's; the schedule's steps are counted without building
    step = trainer._step

    def recording_step(batches: list[Batch], interrupted: Any) -> bool:
        trained.append([int(b.src.shape[0]) for b in batches])
        return step(batches, interrupted)

    monkeypatch.setattr(trainer, "_step", recording_step)
    fresh = [trainer._epoch_steps(epoch) for epoch in (1, 2, 3)]
    built.clear()
    trainer.run()
    assert len(built) == 2  # epochs 2 and 3; epoch 1's come from __init__
    assert trained == [[len(ix) for ix in group] for steps in fresh for group in steps]


# -- what a new user sees (issue 27, item 13) ------------------------------------------------


def test_a_warm_up_longer_than_the_run_is_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    pairs = toy_pairs(128)  # one epoch of 2 steps (batches of 64)
    with caplog.at_level("WARNING", logger="luong"):
        config = small_train_config(epochs=1, warmup_steps=100)
        Trainer(small_model(), pairs, pairs[:4], config, log=lambda m: None).run()
        assert caplog.messages == [
            "warning: warmup_steps=100 is more than the run's 2 steps: the learning rate only "
            "rises to 2/100 of lr=0.005 and never decays; lower --warmup-steps (to 1, say) or "
            "train longer"
        ]
        caplog.clear()
        config = small_train_config(epochs=1, warmup_steps=2)
        Trainer(small_model(), pairs, pairs[:4], config, log=lambda m: None).run()
        assert caplog.messages == []


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def test_the_progress_bar_is_drawn_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = toy_pairs(128)
    config = small_train_config(epochs=1, warmup_steps=0, progress=True)
    for stream, drawn in ((io.StringIO(), False), (Terminal(), True)):
        monkeypatch.setattr(sys, "stderr", stream)  # where tqdm writes
        Trainer(small_model(), pairs, pairs[:4], config, log=lambda m: None).run()
        # A redirected stderr (a log file, a pipe) gets no carriage-return updates.
        assert ("\r" in stream.getvalue()) == drawn, stream.getvalue()


def test_adam_is_one_fused_kernel_on_the_cpu_and_moves_the_weights_as_the_loop_does() -> None:
    """``make_optimizer`` fuses Adam on the CPU (3-4x faster a step, docs/performance.md);
    its weights after a few steps differ from PyTorch's loop over the tensors by rounding
    alone, and SGD is left as it was."""
    model = small_model()
    loop_model = copy.deepcopy(model)
    config = TrainConfig(lr=1e-2)
    fused = make_optimizer(model, config)
    assert isinstance(fused, torch.optim.Adam) and fused.defaults["fused"] is True
    loop = torch.optim.Adam(loop_model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(0)
    for _ in range(5):
        for a, b in zip(model.parameters(), loop_model.parameters(), strict=True):
            grad = torch.randn(a.shape, generator=generator)
            a.grad, b.grad = grad.clone(), grad.clone()
        fused.step()
        loop.step()
    moved = [
        (a, b, start)
        for a, b, start in zip(
            model.parameters(), loop_model.parameters(), small_model().parameters(), strict=True
        )
    ]
    for a, b, start in moved:
        assert not torch.equal(a, start)  # five steps of lr 1e-2 moved every weight
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
    sgd = make_optimizer(small_model(), TrainConfig(optimizer="sgd", lr=0.5))
    assert isinstance(sgd, torch.optim.SGD) and not sgd.defaults.get("fused")
