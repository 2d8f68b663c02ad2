"""The wmt14 preset against Luong, Pham and Manning 2015, section 4.1, and what it needs of the
trainer: plain SGD, the halving schedule, the loss per sentence, uniform initialisation."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import SRC, TGT, small_config, toy_pairs

from luong import Seq2Seq, TrainConfig, Vocab
from luong.cli import main
from luong.config.presets import PRESETS, TRAIN_PRESETS, WMT14, ZOO_PRESETS, task_configs
from luong.training.objective import lr_factor
from luong.training.trainer import Trainer

# Section 4.1 of the paper, as the preset's fields say it.
PAPER_MODEL = {
    "cell": "lstm",  # stacking LSTM
    "enc_layers": 4,  # 4 layers, each with 1000 cells
    "dec_layers": 4,
    "enc_hidden": 1000,
    "dec_hidden": 1000,
    "bidirectional": False,
    "emb_dim": 1000,  # 1000-dimensional embeddings
    "attention": "general",  # local-p with the general score (Table 1's best single model)
    "local": "predictive",
    "window": 10,  # D = 10
    "input_feed": True,
    "dropout": 0.2,  # dropout with probability 0.2
    "bridge": "last",  # the decoder starts from the encoder's final states
    "tie_embeddings": False,
}
PAPER_TRAIN = {
    "optimizer": "sgd",  # plain SGD
    "lr": 1.0,  # start with a learning rate of 1
    "schedule": "halving",  # for dropout models: 12 epochs, halving after 8
    "halve_after": 8,
    "epochs": 12,
    "warmup_steps": 0,
    "batch_size": 128,  # mini-batch size 128
    "batch_tokens": 0,
    "clip_norm": 5.0,  # the normalized gradient is rescaled whenever its norm exceeds 5
    "normalize": "sentences",
    "init_range": 0.1,  # uniformly initialized in [-0.1, 0.1]
    "label_smoothing": 0.0,
    "accumulate": 1,
}
PAPER_VOCAB = {
    "subword": "none",  # words
    "vocab_size": 50_000 + len(Vocab.SPECIALS),  # the top 50K most frequent words
    "joint_vocab": False,  # one per language
    "src_lang": "en",
    "tgt_lang": "de",
}


def test_the_wmt14_preset_is_section_4_1() -> None:
    assert "wmt14" in PRESETS
    assert task_configs("wmt14") is WMT14
    for config, paper in zip(WMT14, (PAPER_MODEL, PAPER_TRAIN, PAPER_VOCAB), strict=True):
        assert {name: getattr(config, name) for name in paper} == paper
    assert len(Vocab.SPECIALS) == 4


def test_the_halving_schedule_gives_each_epoch_its_learning_rate() -> None:
    # The paper's 12 epochs: 1.0 for 8, then halved at every epoch.
    by_epoch = [lr_factor(0, 100, 0, "halving", epoch=e, halve_after=8) for e in range(1, 13)]
    assert by_epoch == [1.0] * 8 + [0.5, 0.25, 0.125, 0.0625]
    # The step does not matter, the epoch does; a warm-up comes first.
    assert lr_factor(99, 100, 0, "halving", epoch=9, halve_after=8) == 0.5
    assert lr_factor(4, 100, 10, "halving", epoch=9, halve_after=8) == pytest.approx(0.5)
    assert lr_factor(10, 100, 10, "halving", epoch=9, halve_after=8) == 0.5


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"schedule": "halving"}, "halve_after: schedule halving needs the epochs at the full lr"),
        ({"halve_after": 2}, "halve_after: only with schedule halving, got 2 with schedule"),
        ({"schedule": "halving", "halve_after": -1}, "halve_after: expected an int >= 0, got -1"),
        ({"optimizer": "adagrad"}, "optimizer: expected one of adam, sgd, got 'adagrad'"),
        ({"normalize": "words"}, "normalize: expected one of tokens, sentences, got 'words'"),
        ({"init_range": -0.1}, "init_range: expected a finite number >= 0, got -0.1"),
        ({"init_range": True}, "init_range: expected a finite number >= 0, got True"),
    ],
)
def test_bad_training_settings_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        TrainConfig(**changes)


def recorded_steps(trainer: Trainer) -> list[dict[str, Any]]:
    """A list that fills, as ``trainer`` runs, with each optimizer step's epoch, learning
    rate, gradients and the weights before and after."""
    steps: list[dict[str, Any]] = []
    step = trainer.optimizer.step
    params = list(trainer.model.parameters())

    def recording_step(*args: Any, **kwargs: Any) -> Any:
        before = [p.detach().clone() for p in params]
        grads = [p.grad.detach().clone() if p.grad is not None else None for p in params]
        result = step(*args, **kwargs)
        steps.append(
            {
                "epoch": trainer.progress.epoch,
                "lr": trainer.optimizer.param_groups[0]["lr"],
                "grads": grads,
                "before": before,
                "after": [p.detach().clone() for p in params],
            }
        )
        return result

    trainer.optimizer.step = recording_step  # type: ignore[method-assign]
    return steps


def small_lstm() -> Seq2Seq:
    """A one-layer LSTM model whose decoder starts from the encoder's state, as the preset's."""
    config = small_config(cell="lstm", bidirectional=False, enc_hidden=6, bridge="last")
    return Seq2Seq(config, SRC, TGT, seed=0)


def test_sgd_steps_by_the_halving_schedule() -> None:
    pairs = toy_pairs(32)
    config = TrainConfig(
        epochs=4,
        batch_size=16,
        optimizer="sgd",
        lr=0.5,
        schedule="halving",
        halve_after=2,
        warmup_steps=0,
        clip_norm=0.0,
        progress=False,
    )
    trainer = Trainer(small_lstm(), pairs, pairs[:4], config, log=lambda m: None)
    assert type(trainer.optimizer) is torch.optim.SGD
    steps = recorded_steps(trainer)
    trainer.run()
    assert [(s["epoch"], s["lr"]) for s in steps] == [
        (1, 0.5),
        (1, 0.5),
        (2, 0.5),
        (2, 0.5),
        (3, 0.25),
        (3, 0.25),
        (4, 0.125),
        (4, 0.125),
    ]
    for s in steps:  # plain SGD: w <- w - lr g, no momentum, no moments
        for before, grad, after in zip(s["before"], s["grads"], s["after"], strict=True):
            if grad is not None:
                assert torch.allclose(after, before - s["lr"] * grad, atol=1e-7, rtol=0)


def test_the_loss_per_sentence_scales_the_gradient_by_tokens_per_sentence() -> None:
    pairs = toy_pairs(12)  # one batch of 12 sentences
    grads: dict[str, list[torch.Tensor]] = {}
    for normalize in ("tokens", "sentences"):
        config = TrainConfig(
            epochs=1, batch_size=16, normalize=normalize, clip_norm=0.0, progress=False
        )
        trainer = Trainer(small_lstm(), pairs, pairs[:2], config, log=lambda m: None)
        steps = recorded_steps(trainer)
        trainer.run()
        assert len(steps) == 1
        grads[normalize] = [g for g in steps[0]["grads"] if g is not None]
    tokens = sum(len(target) + 1 for _, target in pairs)  # EOS included
    assert tokens / len(pairs) > 4  # the two normalisations differ by far
    for per_token, per_sentence in zip(grads["tokens"], grads["sentences"], strict=True):
        assert torch.allclose(per_sentence, per_token * tokens / len(pairs), atol=1e-6, rtol=1e-5)


def test_uniform_init_lies_in_the_range_and_follows_the_seed() -> None:
    def drawn(seed: int) -> Seq2Seq:
        model = small_lstm()
        model.init_uniform_(0.1, seed)
        return model

    model, again, other = drawn(3), drawn(3), drawn(4)
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert float(weights.abs().max()) <= 0.1
    assert float(weights.abs().max()) > 0.099  # the whole range, not a narrower one
    # The draws are uniform: about half of the weights beyond +-0.05.
    assert 0.45 < float((weights.abs() > 0.05).float().mean()) < 0.55
    for p, q in zip(model.parameters(), again.parameters(), strict=True):
        assert torch.equal(p, q)
    assert not torch.equal(weights, torch.cat([p.detach().flatten() for p in other.parameters()]))
    for embedding in (model.encoder.embedding, model.decoder.embedding):
        assert not embedding.weight[Vocab.pad_id].any()  # padding stays zero
    default = torch.cat([p.detach().flatten() for p in small_lstm().parameters()])
    assert float(default.abs().max()) > 0.1  # the layers' own initialisation is wider


@pytest.mark.parametrize(
    ("bound", "seed", "message"),
    [
        (0.0, 0, "bound: expected a finite number > 0, got 0.0"),
        (float("inf"), 0, "bound: expected a finite number > 0, got inf"),
        (0.1, -1, "seed: expected an int from 0 to 2\\*\\*64 - 1, got -1"),
    ],
)
def test_uniform_init_refuses_bad_values(bound: float, seed: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        small_lstm().init_uniform_(bound, seed)


def test_a_tiny_run_with_the_wmt14_training_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``luong train --preset wmt14`` with a tiny model (the size flags override the preset's)
    on tiny word-level data: SGD, the halving schedule and the uniform initialisation run."""
    calls: list[tuple[float, int]] = []
    init = Seq2Seq.init_uniform_

    def recording_init(self: Seq2Seq, bound: float, seed: int) -> None:
        calls.append((bound, seed))
        init(self, bound, seed)

    monkeypatch.setattr(Seq2Seq, "init_uniform_", recording_init)
    words = ["the", "cat", "dog", "sat", "ran", "on", "a", "mat"]
    lines = [
        f"{words[i % 8]} {words[(3 * i) % 8]}\t{words[(3 * i) % 8]} {words[i % 8]}"
        for i in range(40)
    ]
    data = tmp_path / "train.tsv"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sizes = ["--emb-dim", "8", "--enc-hidden", "8", "--dec-hidden", "8"]
    sizes += ["--enc-layers", "1", "--dec-layers", "1", "--vocab-size", "10"]
    argv = ["train", "--preset", "wmt14", "--train", str(data), "--dev", str(data)]
    argv += ["--src-tokens", "space", "--tgt-tokens", "space", *sizes]
    argv += ["--epochs", "3", "--halve-after", "1", "--batch-size", "8", "--log-every", "1"]
    argv += ["--quiet", "--out", str(tmp_path / "run")]
    assert main(argv) == 0
    assert calls == [(0.1, 0)]
    records = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").open()]
    lrs = {(r["epoch"], r["lr"]) for r in records if r["kind"] == "train"}
    assert lrs == {(1, 1.0), (2, 0.5), (3, 0.25)}
    assert sum(r["kind"] == "train" for r in records) == 15  # 5 steps an epoch
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    train = metrics["train_config"]
    assert (train["optimizer"], train["normalize"], train["clip_norm"]) == ("sgd", "sentences", 5.0)
    assert metrics["model_config"]["local"] == "predictive"
    assert "dev_bleu" in metrics  # selected on BLEU, as the preset says
    assert len(metrics["dev_curve"]) == 3


def test_the_quick_preset_is_translations_narrowed_and_trained_shorter_in_bf16() -> None:
    """``make demo-translation``'s preset (README, "A translation model in minutes"):
    translation's model narrowed to 96 / 192, its vocabulary, 3 epochs at a peak learning
    rate of 3e-3 in bf16 (which a CPU without bfloat16 units computes in fp32, saying so);
    not one of the zoo's tasks."""
    quick, translation = task_configs("quick"), task_configs("translation")
    narrowed = replace(translation.model, emb_dim=96, enc_hidden=96, dec_hidden=192)
    assert quick.model == narrowed and quick.vocab == translation.vocab
    assert (quick.train.epochs, quick.train.lr, quick.train.precision) == (3, 3e-3, "bf16")
    assert replace(quick.train, epochs=24, lr=2e-3, precision="fp32") == translation.train
    assert "quick" in TRAIN_PRESETS and "quick" not in ZOO_PRESETS


def test_the_general_preset_is_translations_model_wider_for_two_epochs_in_bf16() -> None:
    # docs/results.md's choice table: 2 x 192 / 384 for 2 epochs beat translation's own
    # model for 3 in the same 107 minutes on Debian's 573,937 German pairs
    general, translation = task_configs("general"), task_configs("translation")
    assert replace(general.model, enc_hidden=128, dec_hidden=256) == translation.model
    assert (general.model.enc_hidden, general.model.dec_hidden) == (192, 384)
    assert general.model.bidirectional and general.model.attention == "general"
    assert general.train.epochs == 2 and general.train.precision == "bf16"
    assert replace(general.train, epochs=24, precision="fp32") == translation.train
    assert general.vocab == translation.vocab and general.vocab.vocab_size == 4000
    assert "general" in TRAIN_PRESETS and "general" not in ZOO_PRESETS
    pieces = Vocab([chr(0x4E00 + i) for i in range(3996)])  # 4,000 with the specials
    sizes = [
        sum(p.numel() for p in Seq2Seq(preset.model, pieces, pieces).parameters())
        for preset in (general, translation)
    ]
    assert sizes == [4_663_968, 2_789_792]  # docs/results.md's 4.66 M and 2.79 M
