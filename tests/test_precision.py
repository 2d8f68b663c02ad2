"""Mixed precision: bf16 autocast through every path of the decoder (the fused recurrence
computing in float32 inside), fp16 with a gradient scaler (its state in every checkpoint),
and decoding under autocast.

fp16 is refused on the CPU (``luong.devices.check_precision``); torch itself runs float16
autocast and ``GradScaler`` on the CPU, so the tests of the scaler's logic lift that refusal
(``fp16_here``) rather than skip where there is no GPU.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import SRC, TGT, small_model, toy_pairs
from safetensors.torch import load_file

import luong.devices
import luong.trainer
from luong import Seq2Seq, Seq2SeqConfig, TrainConfig, train
from luong.batching import ParallelData
from luong.cli import main
from luong.recurrence import Recurrence, recur
from luong.trainer import Trainer, TrainingDiverged
from luong.training.objective import loss_of

# -- bf16 through the fused recurrence --------------------------------------------------------

B, T, S, D, K = 3, 4, 5, 6, 7


@pytest.fixture
def recur_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the decoder calls ``recur`` (the fused path), one entry per call."""
    calls: list[int] = []

    def counted(*args: Any) -> tuple[torch.Tensor, torch.Tensor]:
        calls.append(1)
        return recur(*args)

    monkeypatch.setattr("luong.decoder.recur", counted)
    return calls


def recur_args(lstm: bool, dtype: torch.dtype) -> list[Any]:
    """``recur``'s tensors after its spec: the activations (gates, states, keys, proj) in
    ``dtype`` as autocast hands them over, the weights in float32, all requiring gradients."""
    gen = torch.Generator().manual_seed(0)
    width = (4 if lstm else 3) * D

    def rand(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.randn(*shape, generator=gen).to(dtype).requires_grad_()

    mask = torch.ones(B, S, dtype=torch.bool)
    mask[1, 3:] = False
    return [
        rand(T, B, width, dtype=dtype),
        rand(1, B, D, dtype=dtype),
        rand(1, B, D, dtype=dtype) if lstm else None,
        rand(B, D, dtype=dtype),
        rand(B, S, K, dtype=dtype),
        rand(B, S, D, dtype=dtype),
        mask,
        rand(width, D),
        rand(D, K + D),
        [rand(width, D), rand(width)],
    ]


@pytest.mark.parametrize("lstm", [False, True], ids=["gru", "lstm"])
def test_under_autocast_the_recurrence_computes_in_float32(lstm: bool) -> None:
    """bfloat16 activations and float32 weights under autocast: the outputs are exactly
    those of the recurrence run in float32 on the same (bfloat16-valued) inputs without
    autocast, in float32; each input's gradient comes back in its own dtype, the float32
    gradient rounded. A backward called inside autocast gives the same."""
    args = recur_args(lstm, torch.bfloat16)
    spec = Recurrence(lstm, 1)
    wide = [
        [w.detach().float().requires_grad_() for w in a]
        if isinstance(a, list)
        else a.detach().float().requires_grad_()
        if isinstance(a, torch.Tensor) and a.is_floating_point()
        else a
        for a in args
    ]
    want = recur(spec, *wide)
    sum(out.sum() * (i + 1) for i, out in enumerate(want)).backward()
    for backward_inside in (False, True):
        for a in [*args[:-1], *args[-1]]:
            if isinstance(a, torch.Tensor):
                a.grad = None
        with torch.autocast("cpu", torch.bfloat16):
            got = recur(spec, *args)
            loss = sum(out.sum() * (i + 1) for i, out in enumerate(got))
            if backward_inside:
                loss.backward()
        if not backward_inside:
            loss.backward()
        for g, w in zip(got, want, strict=True):
            assert g.dtype == torch.float32 and torch.equal(g, w)
        for a, w in zip([*args[:-1], *args[-1]], [*wide[:-1], *wide[-1]], strict=True):
            if isinstance(a, torch.Tensor) and a.requires_grad:
                assert a.grad.dtype == a.dtype
                torch.testing.assert_close(a.grad, w.grad.to(a.dtype), rtol=0, atol=0)


# The tolerances of a bf16 step's gradients against float32's (the test's docstring says why).
PER_TENSOR, WHOLE = 0.1, 0.02
CASES = list(
    itertools.product(
        ["gru", "lstm"], ["dot", "general", "scaled_dot", "location"], [True, False], [1, 2]
    )
)


@pytest.mark.parametrize(("cell", "score", "feed", "layers"), CASES)
def test_a_bf16_step_trains_every_fused_score_close_to_float32(
    cell: str, score: str, feed: bool, layers: int, recur_calls: list[int]
) -> None:
    """One training step of a whole model (encoder, bridge, decoder, loss) under bf16
    autocast, as the trainer takes it, through the fused recurrence when input feeding is on
    (the fast path when it is off): the gradients are finite and close to the float32
    step's, and Adam's step moves the weights.

    Why these tolerances: bfloat16 keeps 8 significant bits (unit roundoff 2^-8 = 3.9e-3),
    and autocast runs every matrix product of the encoder, the attention's projections and
    the output layer in it; a gradient is a sum of such products through a few layers, and a
    small tensor (a bias, one direction's recurrent weight) sums terms that cancel. Measured
    on these 32 cases: at most 2.6 % relative difference (in norm) on one tensor, 0.36 % on
    the whole gradient. The bounds are 10 % per tensor and 2 % on the whole, about four and
    five times that; a gradient wrong in one term (a step of the written-out backward left
    out, the float32 recurrence's gradient returned in place of the input's) is off by tens
    of per cent or more, and before the fix every fused case failed outright."""
    model = small_model(cell=cell, attention=score, input_feed=feed, dec_layers=layers)
    model.train()
    batch = ParallelData(toy_pairs(32, seed=3), SRC, TGT).batch(list(range(32)))
    loss_of(model, batch).backward()
    want = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    calls = len(recur_calls)
    with torch.autocast("cpu", torch.bfloat16):
        loss = loss_of(model, batch)
    assert len(recur_calls) - calls == feed  # the fused path exactly when feeding
    loss.backward()
    got = {name: p.grad for name, p in model.named_parameters()}
    for name, grad in got.items():
        assert grad is not None and grad.dtype == torch.float32, name
        assert torch.isfinite(grad).all(), name
        difference = float((grad - want[name]).norm() / want[name].norm())
        assert difference <= PER_TENSOR, f"{name}: {difference:.4f}"
    flat = [torch.cat([g.flatten() for g in grads.values()]) for grads in (got, want)]
    assert float((flat[0] - flat[1]).norm() / flat[1].norm()) <= WHOLE
    before = [p.detach().clone() for p in model.parameters()]
    torch.optim.Adam(model.parameters(), lr=1e-3).step()
    assert all(not torch.equal(a, p) for a, p in zip(before, model.parameters(), strict=True))
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_bf16_trains_the_dates_model_as_float32_does() -> None:
    """A short bf16 run of ``luong.train`` on the dates task (a small model, 2,000 pairs, 4
    epochs) learns as the float32 run of the same seed does: its training loss falls by the
    same order and its test exact match lands within 0.1 of float32's. The full demo in bf16
    (docs/performance.md, "Mixed precision") reaches 0.99 and more; it takes minutes here."""
    results = {}
    for precision in ("fp32", "bf16"):
        results[precision] = train(
            "dates",
            None,
            model_config=Seq2SeqConfig(emb_dim=16, enc_hidden=32, enc_layers=1, dec_hidden=64),
            train_config=TrainConfig(
                epochs=4,
                batch_size=64,
                lr=5e-3,
                warmup_steps=20,
                progress=False,
                precision=precision,
            ),  # fmt: skip
            task_options={"n_train": 2000, "n_dev": 100, "n_test": 300},
        ).metrics
    fp32, bf16 = results["fp32"], results["bf16"]
    assert bf16["dev_curve"][-1]["train_loss"] < bf16["dev_curve"][0]["train_loss"] / 3
    assert abs(bf16["test_exact_match"] - fp32["test_exact_match"]) <= 0.1
    assert bf16["test_exact_match"] >= 0.3


# -- fp16: refused on the CPU; its scaler's logic and state -------------------------------------


def test_fp16_is_refused_on_the_cpu_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = small_model()
    with pytest.raises(ValueError) as raised:
        Trainer(model, toy_pairs(64), toy_pairs(8), TrainConfig(precision="fp16"))
    message = "fp16: needs a CUDA device, and this runs on cpu; use bf16 (or fp32) here"
    assert str(raised.value) == f"precision {message}"
    args = ["dates", "--n-train", "64", "--n-dev", "8", "--n-test", "8", "--no-progress"]
    out = tmp_path / "run"
    assert main(["train", *args, "--out", str(out), "--device", "cpu", "--precision", "fp16"]) == 1
    assert capsys.readouterr().err == f"luong: error: precision {message}\n"
    assert not out.exists()
    model.save_pretrained(tmp_path / "model")
    (tmp_path / "in.txt").write_text("abc\n", encoding="utf-8")
    translate = ["translate", str(tmp_path / "model"), "--input", str(tmp_path / "in.txt")]
    assert main([*translate, "--device", "cpu", "--precision", "fp16"]) == 1
    assert capsys.readouterr().err == f"luong: error: --precision {message}\n"


@pytest.fixture
def fp16_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """fp16 allowed on the CPU (see the module's docstring)."""
    monkeypatch.setattr(luong.devices, "check_precision", lambda *args: None)
    monkeypatch.setattr(luong.trainer, "check_precision", lambda *args: None)


FP16 = TrainConfig(
    epochs=3,
    batch_size=16,
    lr=5e-3,
    warmup_steps=0,
    checkpoint_every=4,
    keep_checkpoints=10,
    max_bad_steps=2,
    progress=False,
    precision="fp16",
    seed=5,
)
HIGH = 2.0**22  # a first loss scale too high for these gradients: the first steps overflow


def fp16_run(out: Path | None, config: TrainConfig = FP16) -> tuple[Trainer, dict[str, Any]]:
    """A fresh fp16 trainer whose scaler starts at ``HIGH``, resumed from ``out``'s latest
    checkpoint if there is one, run to the end."""
    model = small_model(attention="dot", dropout=0.1)
    trainer = Trainer(model, toy_pairs(96), toy_pairs(8, seed=1), config, out, log=lambda m: None)
    trainer.scaler = torch.amp.GradScaler("cpu", init_scale=HIGH)
    trainer.resume()
    return trainer, trainer.run()


def test_fp16_overflows_lower_the_scale_and_do_not_count_as_divergence(fp16_here: None) -> None:
    """Steps whose scaled gradient overflows are skipped and halve the scale, however many
    in a row (here more than max_bad_steps = 2), while a loss that is not finite still
    counts towards max_bad_steps."""
    trainer, metrics = fp16_run(None)
    skipped = metrics["skipped_steps"]
    assert skipped >= 3 and metrics["steps"] == 18
    assert trainer.scaler.get_scale() == HIGH / 2**skipped
    model = small_model(attention="dot", dropout=0.1)
    model.decoder.out.register_forward_hook(lambda m, i, output: output * float("nan"))
    trainer = Trainer(model, toy_pairs(96), toy_pairs(8, seed=1), FP16, None, log=lambda m: None)
    with pytest.raises(TrainingDiverged, match="2 steps in a row had a non-finite loss"):
        trainer.run()


def test_an_fp16_run_resumes_bit_for_bit_with_its_loss_scale(
    fp16_here: None, tmp_path: Path
) -> None:
    """A run resumed from the checkpoint at step 8 ends as the run that went through: the
    same weights, skipped steps and scaler state (a resumed scaler starting at ``HIGH``
    again would skip more steps)."""
    reference, reference_metrics = fp16_run(tmp_path / "reference")
    checkpoints = tmp_path / "reference" / "checkpoints"
    state = json.loads((checkpoints / "step-0000008" / "state.json").read_text())
    assert state["scaler"]["scale"] < HIGH
    out = tmp_path / "resumed"
    shutil.copytree(checkpoints / "step-0000008", out / "checkpoints" / "step-0000008")
    (out / "checkpoints" / "latest").write_text("step-0000008\n")
    trainer, metrics = fp16_run(out)
    assert metrics["steps"] == 18 and metrics["skipped_steps"] == reference_metrics["skipped_steps"]
    assert trainer.scaler.state_dict() == reference.scaler.state_dict()
    last = "checkpoints/step-0000018/model.safetensors"
    got, want = load_file(str(out / last)), load_file(str(tmp_path / "reference" / last))
    assert got.keys() == want.keys()
    assert all(torch.equal(got[key], want[key]) for key in want)


# -- decoding under autocast --------------------------------------------------------------------


@pytest.mark.parametrize("command", ["translate", "eval"])
def test_decoding_with_precision_bf16_runs_the_model_under_autocast(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[bool, torch.dtype | None]] = []
    encode = Seq2Seq.encode

    def recorded(self: Seq2Seq, *args: Any) -> Any:
        on = torch.is_autocast_enabled("cpu")
        seen.append((on, torch.get_autocast_dtype("cpu") if on else None))
        return encode(self, *args)

    monkeypatch.setattr(Seq2Seq, "encode", recorded)
    small_model().save_pretrained(tmp_path / "model")
    (tmp_path / "in.txt").write_text("abc\ncab\n", encoding="utf-8")
    (tmp_path / "pairs.tsv").write_text("abc\t210\ncab\t102\n", encoding="utf-8")
    data = ["--input", str(tmp_path / "in.txt")]
    if command == "eval":
        data = ["--data", str(tmp_path / "pairs.tsv")]
    args = [command, str(tmp_path / "model"), *data, "--device", "cpu"]
    assert main(args) == 0
    assert main([*args, "--precision", "bf16"]) == 0
    assert seen == [(False, None), (True, torch.bfloat16)]
