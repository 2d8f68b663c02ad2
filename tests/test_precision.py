"""Mixed precision: bf16 autocast through every path of the decoder (the fused recurrence
computing in float32 inside), fp16 with a gradient scaler (its state in every checkpoint),
and decoding under autocast.

fp16 is refused on the CPU (``luong.common.devices.check_precision``); torch itself runs float16
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

import luong.common.devices
import luong.training.trainer
from luong import Seq2Seq, Seq2SeqConfig, TrainConfig, train
from luong.cli import main
from luong.data.batching import ParallelData
from luong.model.recurrence import Recurrence, recur
from luong.training.objective import loss_of
from luong.training.trainer import Trainer, TrainingDiverged

# -- bf16 through the fused recurrence --------------------------------------------------------

B, T, S, D, K = 3, 4, 5, 6, 7


@pytest.fixture
def recur_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the decoder calls ``recur`` (the fused path), one entry per call."""
    calls: list[int] = []

    def counted(*args: Any) -> tuple[torch.Tensor, torch.Tensor]:
        calls.append(1)
        return recur(*args)

    monkeypatch.setattr("luong.model.decoder.recur", counted)
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
def test_under_autocast_the_recurrence_multiplies_in_bf16_and_steps_in_float32(lstm: bool) -> None:
    """bfloat16 activations and float32 weights under autocast: the recurrence's products run
    in bfloat16 (its outputs differ from the float32 recurrence's on the same inputs), its
    outputs are float32 and within bfloat16's reach of a float64 oracle (the elementwise
    steps in float32: 8-bit rounding compounding through the steps would be far off), each
    input's gradient comes back in its own dtype, close to the oracle's; a backward called
    inside autocast gives the same, bit for bit.

    Tolerances, relative in norm: bfloat16's unit roundoff is 2^-8 = 3.9e-3, and each output
    is a few products deep (gates, attention, eq. 5), each rounded once. These weights are
    drawn from N(0, 1), so the pre-activations are several units wide and their sums cancel:
    measured here, 1.6 % on an output and 7.3 % on a gradient (the GRU's bias; 2.0 % for the
    LSTM), against 2e-6 for the float32 recurrence. The bounds are 4 % and 15 %; a trained
    model's smaller weights do better (the whole-model test below)."""
    args = recur_args(lstm, torch.bfloat16)
    spec = Recurrence(lstm, 1)

    def widened(dtype: torch.dtype) -> list[Any]:
        return [
            [w.detach().to(dtype).requires_grad_() for w in a]
            if isinstance(a, list)
            else a.detach().to(dtype).requires_grad_()
            if isinstance(a, torch.Tensor) and a.is_floating_point()
            else a
            for a in args
        ]

    def flat(values: list[Any]) -> list[Any]:
        return [*values[:-1], *values[-1]]

    oracle, fp32 = widened(torch.float64), widened(torch.float32)
    want = recur(spec, *oracle)
    sum(out.sum() * (i + 1) for i, out in enumerate(want)).backward()
    plain = recur(spec, *fp32)
    results = []
    for backward_inside in (False, True):
        for a in flat(args):
            if isinstance(a, torch.Tensor):
                a.grad = None
        with torch.autocast("cpu", torch.bfloat16):
            got = recur(spec, *args)
            loss = sum(out.sum() * (i + 1) for i, out in enumerate(got))
            if backward_inside:
                loss.backward()
        if not backward_inside:
            loss.backward()
        for g, w, p in zip(got, want, plain, strict=True):
            assert g.dtype == torch.float32
            assert float(((g.double() - w).norm() / w.norm()).detach()) <= 0.04
            assert not torch.equal(g, p)  # the products were not float32's
        grads = [a.grad for a in flat(args) if isinstance(a, torch.Tensor) and a.requires_grad]
        for a, w in zip(flat(args), flat(oracle), strict=True):
            if isinstance(a, torch.Tensor) and a.requires_grad:
                assert a.grad.dtype == a.dtype
                difference = float((a.grad.double() - w.grad).norm() / w.grad.norm())
                assert difference <= 0.15
        results.append([*got, *grads])
    assert all(torch.equal(a, b) for a, b in zip(*results, strict=True))


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


# The attentions the fused recurrence does not take (concat, Bahdanau's, the local windows),
# which train step by step under autocast: every product in bfloat16 there too.
OTHER_KINDS = [
    ("concat", "none"), ("bahdanau", "none"), ("general", "monotonic"), ("dot", "predictive"),
    ("concat", "predictive"),
]  # fmt: skip


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize(("score", "local"), OTHER_KINDS)
def test_a_bf16_step_trains_every_other_attention_close_to_float32(
    cell: str, score: str, local: str, recur_calls: list[int]
) -> None:
    """As above, for the attentions that step: the loss and every gradient within the same
    bounds of the float32 step's, the fused recurrence never called. A tensor's difference
    is measured against its own gradient's norm or a hundredth of the largest one's, the
    larger: in these tiny models the query projection of Bahdanau's attention gets a
    gradient 4,000 times smaller than the others' (2.8e-6 against 1.3e-2), where
    bfloat16's rounding of the terms it sums is a quarter of it (0.245 relative), 0.002 of
    the floor."""
    model = small_model(cell=cell, attention=score, local=local, window=2, dec_layers=1)
    model.train()
    batch = ParallelData(toy_pairs(32, seed=3), SRC, TGT).batch(list(range(32)))
    want_loss = loss_of(model, batch)
    want_loss.backward()
    want = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    with torch.autocast("cpu", torch.bfloat16):
        loss = loss_of(model, batch)
    assert not recur_calls
    assert loss.dtype == torch.float32
    assert abs(float(loss.detach()) - float(want_loss.detach())) <= 0.01 * float(want_loss.detach())
    loss.backward()
    flat = []
    floor = 0.01 * max(float(g.norm()) for g in want.values())
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.dtype == torch.float32, name
        assert torch.isfinite(p.grad).all(), name
        scale = max(float(want[name].norm()), floor)
        difference = float((p.grad - want[name]).norm()) / scale
        assert difference <= PER_TENSOR, f"{name}: {difference:.4f}"
        flat.append((p.grad.flatten(), want[name].flatten()))
    got_all, want_all = (torch.cat(parts) for parts in zip(*flat, strict=True))
    assert float((got_all - want_all).norm() / want_all.norm()) <= WHOLE


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
    monkeypatch.setattr(luong.common.devices, "check_precision", lambda *args: None)
    monkeypatch.setattr(luong.training.trainer, "check_precision", lambda *args: None)


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
    monkeypatch.setattr(
        luong.common.devices, "bf16_units", lambda: True
    )  # the bf16 path on any CPU
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


# -- a CPU without bfloat16 units ---------------------------------------------------------------


def test_without_bf16_units_bf16_is_fp32_said_in_one_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """On a CPU without AVX-512 BF16 or AMX, bf16 would convert around float32 products and
    run slower than fp32: a training run and a translator asked for bf16 each say so in one
    line and compute in fp32, bit for bit as an fp32 run."""
    monkeypatch.setattr(luong.common.devices, "bf16_units", lambda: False)
    cpu = torch.device("cpu")
    assert luong.common.devices.computes_in("bf16", cpu) == "fp32"
    assert luong.common.devices.computes_in("fp32", cpu) == "fp32"
    note = luong.common.devices.precision_note("bf16", cpu)
    assert note is not None and note.startswith("warning: this CPU has no bfloat16 units")
    assert luong.common.devices.precision_note("fp32", cpu) is None
    weights = {}
    for precision in ("fp32", "bf16"):
        model = small_model(attention="dot", enc_hidden=3, dec_hidden=6)
        config = TrainConfig(epochs=1, batch_size=16, progress=False, precision=precision)
        caplog.clear()
        with caplog.at_level("WARNING", logger="luong"):
            Trainer(model, toy_pairs(48), toy_pairs(8), config, log=lambda m: None).run()
        notes = [m for m in caplog.messages if "bfloat16 units" in m]
        assert notes == ([note] if precision == "bf16" else [])
        weights[precision] = [p.detach().clone() for p in model.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(*weights.values(), strict=True))
    small_model().save_pretrained(tmp_path / "model")
    caplog.clear()
    with caplog.at_level("WARNING", logger="luong"):
        translator = luong.load(tmp_path / "model", precision="bf16")
        assert translator.translate(["abc", "cab"]) == luong.load(tmp_path / "model").translate(
            ["abc", "cab"]
        )
    assert caplog.messages == [note]


def test_this_machines_cpu_has_bf16_units_where_its_flags_say_so() -> None:
    """``bf16_units`` agrees with the kernel's CPU flags (Linux): a machine whose flags list
    avx512_bf16 or amx_bf16 has them."""
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.is_file():
        pytest.skip("no /proc/cpuinfo to compare with")
    flags = set(cpuinfo.read_text().split())
    assert luong.common.devices.bf16_units() == bool(flags & {"avx512_bf16", "amx_bf16"})
