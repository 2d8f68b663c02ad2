"""int8 decoding (``luong.model.int8``, ``Seq2Seq.to_int8``, ``luong quantize``): the int8 product
against its float32 reference, a trained model's outputs in int8 against float32, the
folder's exact round trip, ensembles and the server with int8 members, and each bad input as
one line."""

from __future__ import annotations

import copy
import json
import platform
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient
from helpers import SRC_SPACE, TINY_DATES_FLAGS, assert_one_line_error, output_lines, small_model
from helpers import luong as run_luong
from safetensors import safe_open

import luong.model.int8 as int8_module
from luong import Seq2SeqConfig, TrainConfig
from luong.config.choices import INT8_PARTS
from luong.config.search import SearchOptions
from luong.export.exporter import export_onnx
from luong.model.averaging import average_models
from luong.model.ensemble import Ensemble
from luong.model.int8 import (
    Int8Cells,
    Int8Linear,
    Int8Matrix,
    activation_levels,
    quantize_weight,
    reference_linear,
)
from luong.model.quantize import quantize, quantize_folder
from luong.model.seq2seq import Seq2Seq
from luong.search import decode, hypothesis_text
from luong.server.app import ServedModel, create_app
from luong.tasks import load_task
from luong.training.run import train
from luong.training.trainer import Trainer
from luong.translation.translator import Translator, translate

TEXTS = ["abc", "jihgfe", "a", "", "bbbbbbbbb", "cafe", "dig"]

# -- the int8 product ------------------------------------------------------------------------


def test_weights_are_quantized_per_row_symmetrically() -> None:
    weight = torch.tensor([[0.5, -1.0, 0.25], [0.0, 0.0, 0.0], [0.4, 0.1, -0.05]])
    values, scale = quantize_weight(weight)
    assert values.dtype == torch.int8 and scale.dtype == torch.float32
    # scale = max |row| / 127 (a row of zeros: 0); values = round(weight / scale).
    assert values.tolist() == [[64, -127, 32], [0, 0, 0], [127, 32, -16]]
    assert scale.tolist() == pytest.approx([1 / 127, 0.0, 0.4 / 127], rel=1e-6)
    assert Int8Matrix(values, scale).dequantize()[1].tolist() == [0.0, 0.0, 0.0]


def test_the_int8_product_equals_its_float32_reference() -> None:
    g = torch.Generator().manual_seed(0)
    matrix = Int8Matrix.quantize(torch.randn(300, 70, generator=g) * 0.1)
    x = torch.rand(50, 70, generator=g) * 2 - 1
    bias = torch.randn(300, generator=g)
    y = matrix.linear(x, bias)
    assert y.shape == (50, 300) and y.dtype == torch.float32
    # oneDNN's integer product, scaled, against float32 products of the same integers.
    torch.testing.assert_close(y, reference_linear(x, matrix, bias), atol=1e-5, rtol=1e-5)
    # And close to the float product: each weight within scale / 2, each input within
    # 1 / (2 levels) of its value.
    exact = torch.nn.functional.linear(x, matrix.dequantize(), bias)
    bound = 70 * float(matrix.scale.max()) * 127 / (2 * activation_levels())
    assert float((y - exact).abs().max()) <= bound
    assert float((y - exact).abs().max()) > 0  # the inputs were quantized
    # The leading axes are kept.
    x3 = x[:48].reshape(4, 12, 70)
    assert torch.equal(matrix.linear(x3, bias).reshape(48, 300), y[:48])


def test_each_row_is_computed_alone() -> None:
    """A fixed input scale: a row's result does not depend on the rows beside it (a scale
    measured on the batch would make a sentence's output depend on its batch)."""
    g = torch.Generator().manual_seed(1)
    matrix = Int8Matrix.quantize(torch.randn(40, 16, generator=g))
    x = torch.rand(9, 16, generator=g) * 2 - 1
    x[4] = 1.0  # a row at the top of the range changes no other row
    together = matrix.linear(x)
    for row in range(9):
        assert torch.equal(matrix.linear(x[row : row + 1]), together[row : row + 1])


def test_column_blocks_keep_the_rows_scales() -> None:
    g = torch.Generator().manual_seed(2)
    matrix = Int8Matrix.quantize(torch.randn(20, 12, generator=g))
    block = matrix.columns(3, 8)
    assert torch.equal(block.values, matrix.values[:, 3:8])
    assert block.scale is matrix.scale
    assert matrix.columns(3, 8) is block  # packed once
    assert matrix.columns(0, 12) is matrix
    x = torch.rand(6, 5, generator=g) * 2 - 1
    torch.testing.assert_close(block.linear(x), reference_linear(x, block), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match=r"columns: expected 0 <= start < stop <= 12, got 8, 3"):
        matrix.columns(8, 3)


def test_inputs_past_one_saturate() -> None:
    matrix = Int8Matrix.quantize(torch.ones(2, 3))
    x = torch.tensor([[1.0, -1.0, 0.5], [7.0, -9.0, 0.5]])
    assert torch.equal(matrix.linear(x)[0], matrix.linear(x)[1])


def test_a_torch_without_get_capabilities_takes_seven_bit_inputs(monkeypatch) -> None:
    """torch.cpu.get_capabilities is newer than the oldest torch luong supports; without it an
    x86 CPU's VNNI is unknown, and 7-bit inputs are safe on every x86 CPU."""
    monkeypatch.delattr(torch.cpu, "get_capabilities")
    monkeypatch.setattr(platform, "machine", lambda: "AMD64")
    assert activation_levels() == 63
    g = torch.Generator().manual_seed(3)
    matrix = Int8Matrix.quantize(torch.randn(30, 20, generator=g))
    assert matrix.levels == 63
    x = torch.rand(7, 20, generator=g) * 2 - 1
    torch.testing.assert_close(matrix.linear(x), reference_linear(x, matrix), atol=1e-5, rtol=0)
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    assert activation_levels() == 127


def test_without_onednn_the_float32_reference_decodes_the_same(monkeypatch) -> None:
    model = small_model(18, cell="lstm", dec_layers=2)
    onednn = quantize(model)
    monkeypatch.setattr(int8_module, "_onednn", lambda: False)
    reference = quantize(model)
    assert reference.decoder.out.matrix._packed is None
    assert onednn.decoder.out.matrix._packed is not None
    options = SearchOptions(beam=3, nbest=2)
    pairs = zip(decode(onednn, TEXTS, options), decode(reference, TEXTS, options), strict=True)
    for a, b in pairs:
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-4)


def test_bad_int8_weights_are_named() -> None:
    with pytest.raises(TypeError, match="values: expected an int8 tensor"):
        Int8Matrix(torch.zeros(2, 3), torch.ones(2))
    with pytest.raises(ValueError, match=r"scale: expected shape \(2,\)"):
        Int8Matrix(torch.zeros(2, 3, dtype=torch.int8), torch.ones(3))
    with pytest.raises(ValueError, match="scale: expected finite values"):
        Int8Matrix(torch.zeros(2, 3, dtype=torch.int8), torch.tensor([1.0, float("nan")]))
    with pytest.raises(TypeError, match="weight: expected a floating-point tensor"):
        quantize_weight(torch.zeros(2, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="weight: expected finite values"):
        quantize_weight(torch.tensor([[1.0, float("inf")]]))


# -- models ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained() -> tuple[Seq2Seq, Seq2Seq, list[tuple[str, str]]]:
    """A small dates model (exact match about 0.8), its int8 form and 300 test pairs."""
    result = train(
        "dates",
        None,
        model_config=Seq2SeqConfig(emb_dim=16, enc_hidden=32, enc_layers=1, dec_hidden=64),
        train_config=TrainConfig(
            epochs=6, batch_size=64, lr=5e-3, warmup_steps=20, eval_every=1000, progress=False
        ),
        task_options={"n_train": 2000, "n_dev": 50, "n_test": 0},
    )
    model = result.model.eval()
    pairs = load_task("dates", n_train=0, n_dev=0, n_test=300, seed=1).test
    return model, quantize(model), pairs


@pytest.mark.parametrize("beam", [1, 5])
def test_a_trained_model_decodes_nearly_the_same_in_int8(trained, beam: int) -> None:
    model, int8, pairs = trained
    sources = [s for s, _ in pairs]
    options = SearchOptions(beam=beam)
    floats = [hypothesis_text(model, h[0]) for h in decode(model, sources, options)]
    ints = [hypothesis_text(int8, h[0]) for h in decode(int8, sources, options)]
    same = sum(a == b for a, b in zip(floats, ints, strict=True)) / len(pairs)
    exact_float = sum(a == t for a, (_, t) in zip(floats, pairs, strict=True)) / len(pairs)
    exact_int8 = sum(b == t for b, (_, t) in zip(ints, pairs, strict=True)) / len(pairs)
    assert exact_float >= 0.6  # a model that learnt something
    assert same >= 0.97
    assert abs(exact_int8 - exact_float) <= 0.02


def test_quantize_leaves_the_float_model_as_it_is(trained) -> None:
    model, int8, _ = trained
    assert model.int8_parts == ()
    assert isinstance(model.decoder.out, torch.nn.Linear)
    assert int8.int8_parts == INT8_PARTS
    assert isinstance(int8.decoder.out, Int8Linear)
    assert isinstance(int8.decoder.rnn, Int8Cells)
    assert isinstance(int8.decoder.attention.combine, Int8Linear)
    assert int8.encoder.rnn.weight_ih_l0.dtype == torch.float32  # the encoder stays float


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("parts", [["output"], ["cells"], ["attention"], list(INT8_PARTS)])
def test_each_part_in_int8_keeps_the_logits_close(parts: list[str], cell: str) -> None:
    model = small_model(5, cell=cell, dec_layers=2, enc_layers=2)
    int8 = quantize(model, parts)
    assert int8.int8_parts == tuple(p for p in INT8_PARTS if p in parts)
    src = torch.tensor([[4, 5, 6, 7, 2], [8, 9, 2, 0, 0]])
    lengths = torch.tensor([5, 3])
    tgt_in = torch.tensor([[1, 4, 5, 6], [1, 7, 8, 9]])
    with torch.no_grad():
        expected, got = model(src, lengths, tgt_in), int8(src, lengths, tgt_in)
    difference = float((expected - got).abs().max())
    assert 0 < difference < 0.05


def test_an_int8_model_can_be_deep_copied() -> None:
    """oneDNN's packed weights cannot be copied; a copy packs its own from its buffers."""
    int8 = quantize(small_model(17, cell="lstm", dec_layers=2))
    twin = copy.deepcopy(int8)
    assert twin.decoder.out.matrix.values is twin.decoder.out.weight
    assert twin.decoder.out.weight is not int8.decoder.out.weight
    assert twin.decoder.rnn.all_weights[1][1].values is twin.decoder.rnn.weight_hh_l1
    options = SearchOptions(beam=3, nbest=2)
    for a, b in zip(decode(twin, TEXTS, options), decode(int8, TEXTS, options), strict=True):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == [h.score for h in b]


def test_teacher_forcing_in_int8_equals_the_steps() -> None:
    int8 = quantize(small_model(6, cell="lstm"))
    src, lengths = torch.tensor([[4, 5, 6, 2]]), torch.tensor([4])
    tgt_in = torch.tensor([[1, 4, 5, 6, 7]])
    with torch.no_grad():
        logits = int8(src, lengths, tgt_in)
        memory, state = int8.encode(src, lengths)
        steps = []
        for t in range(tgt_in.shape[1]):
            step_logits, state, _ = int8.decoder.step(tgt_in[:, t], state, memory)
            steps.append(step_logits)
    torch.testing.assert_close(logits, torch.stack(steps, 1), atol=1e-5, rtol=0)


def test_int8_models_are_not_trained_averaged_or_quantized_again() -> None:
    int8 = quantize(small_model(7))
    pairs = [("abc", "123")]
    with pytest.raises(ValueError, match=r"model: an int8 model .* decodes only; train the float"):
        Trainer(int8, pairs, pairs, TrainConfig(epochs=1, progress=False))
    with pytest.raises(ValueError, match=r"b: an int8 model \(luong quantize\); average the float"):
        average_models([small_model(7), int8], ["a", "b"])
    with pytest.raises(ValueError, match=r"model: already int8 \(output, cells, attention\)"):
        quantize(int8)
    with pytest.raises(ValueError, match=r"model: already int8"):
        int8.to_int8(["output"])


@pytest.mark.parametrize(
    ("parts", "error", "message"),
    [
        (["output", "softmax"], ValueError, "parts: expected some of output, cells, attention"),
        ([], ValueError, "got none"),
        (["cells", "cells"], ValueError, "each once"),
        ("output", TypeError, "parts: expected a sequence of part names"),
    ],
)
def test_bad_parts_are_named(parts: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        quantize(small_model(8), parts)  # type: ignore[arg-type]


# -- the folder ------------------------------------------------------------------------------


def test_the_folder_round_trips_exactly(tmp_path: Path) -> None:
    model = small_model(9, cell="lstm", tie_embeddings=False)
    model.save_pretrained(tmp_path / "float")
    quantize_folder(tmp_path / "float", tmp_path / "int8")
    loaded = Seq2Seq.from_pretrained(tmp_path / "int8")
    direct = quantize(Seq2Seq.from_pretrained(tmp_path / "float"))
    assert loaded.int8_parts == INT8_PARTS
    for name, tensor in direct.state_dict().items():
        assert tensor.dtype == loaded.state_dict()[name].dtype
        assert torch.equal(tensor, loaded.state_dict()[name]), name
    options = SearchOptions(beam=3, nbest=2)
    for a, b in zip(decode(direct, TEXTS, options), decode(loaded, TEXTS, options), strict=True):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == [h.score for h in b]
    # Saved again, the weights file is the same bytes.
    loaded.save_pretrained(tmp_path / "again")
    for name in ("model.safetensors", "config.json", "src_vocab.json", "tgt_vocab.json"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "int8" / name).read_bytes()


def test_the_folder_holds_int8_values_and_float_scales(tmp_path: Path) -> None:
    small_model(10).save_pretrained(tmp_path / "float")
    quantize_folder(tmp_path / "float", tmp_path / "int8", ["output"])
    config = json.loads((tmp_path / "int8" / "config.json").read_text())
    assert config["quantized"] == "int8" and config["int8_parts"] == ["output"]
    with safe_open(str(tmp_path / "int8" / "model.safetensors"), framework="pt") as file:
        dtypes = {name: file.get_slice(name).get_dtype() for name in file.keys()}  # noqa: SIM118
    assert dtypes["decoder.out.weight"] == "I8"
    assert dtypes["decoder.out.scale"] == "F32"
    assert dtypes["decoder.rnn.weight_hh_l0"] == "F32"  # not a quantized part
    assert "decoder.out.weight_scale" not in dtypes


def test_int8_folders_load_on_the_cpu_only(tmp_path: Path) -> None:
    small_model(11).save_pretrained(tmp_path / "float")
    quantize_folder(tmp_path / "float", tmp_path / "int8")
    with pytest.raises(
        ValueError,
        match=r"an int8 model \(luong quantize\) decodes on the CPU only, got device cuda; "
        r"decode it on the CPU \(--device cpu\), or the float model it was made from on cuda",
    ):
        Seq2Seq.from_pretrained(tmp_path / "int8", device="cuda")


def test_a_config_naming_another_quantization_is_refused(tmp_path: Path) -> None:
    small_model(12).save_pretrained(tmp_path / "float")
    quantize_folder(tmp_path / "float", tmp_path / "int8")
    path = tmp_path / "int8" / "config.json"
    config = json.loads(path.read_text())
    for quantized, parts in (("int4", ["output"]), ("int8", ["output", "embeddings"])):
        path.write_text(json.dumps({**config, "quantized": quantized, "int8_parts": parts}))
        with pytest.raises(ValueError, match=r"config.json: expected 'quantized': \"int8\""):
            Seq2Seq.from_pretrained(tmp_path / "int8")


def test_quantize_folder_checks_its_folders(tmp_path: Path) -> None:
    small_model(13).save_pretrained(tmp_path / "float")
    with pytest.raises(ValueError, match="the output is the model folder being quantized"):
        quantize_folder(tmp_path / "float", tmp_path / "float")
    quantize_folder(tmp_path / "float", tmp_path / "int8", ["cells"])
    with pytest.raises(ValueError, match="holds an earlier int8 model"):
        quantize_folder(tmp_path / "float", tmp_path / "int8")
    quantize_folder(tmp_path / "float", tmp_path / "int8", ["output"], force=True)
    assert Seq2Seq.from_pretrained(tmp_path / "int8").int8_parts == ("output",)
    with pytest.raises(ValueError, match="not empty and not an earlier int8 model"):
        quantize_folder(tmp_path / "float", tmp_path, force=True)


# -- ensembles and the server ----------------------------------------------------------------


def test_an_ensemble_of_two_int8_copies_decodes_as_the_int8_model() -> None:
    int8 = quantize(small_model(14, cell="lstm"))
    ensemble = Ensemble([int8, quantize(small_model(14, cell="lstm"))])
    options = SearchOptions(beam=4, nbest=2)
    for a, b in zip(decode(ensemble, TEXTS, options), decode(int8, TEXTS, options), strict=True):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)


def test_the_server_answers_with_an_int8_model() -> None:
    int8 = quantize(small_model(15, src=SRC_SPACE))
    served = ServedModel("int8", Translator(int8), {})
    with TestClient(create_app([served], max_wait_ms=0)) as client:
        answer = client.post("/api/translate", json={"sources": ["abc de", "j"], "beam": 3})
    assert answer.status_code == 200
    texts = [r["hypotheses"][0]["text"] for r in answer.json()["results"]]
    assert texts == translate(int8, ["abc de", "j"], SearchOptions(beam=3))


# -- the command line ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folders(trained, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The trained model's folder and its int8 form, written by ``luong quantize``."""
    root = tmp_path_factory.mktemp("int8")
    trained[0].save_pretrained(root / "float")
    result = run_luong("quantize", str(root / "float"), "--out", str(root / "int8"))
    assert result.returncode == 0, result.stderr.decode()
    assert f"into {root / 'int8'}: model.safetensors" in result.stdout.decode()
    return root / "float", root / "int8"


def test_translate_eval_and_ensembles_read_the_int8_folder(trained, folders) -> None:
    _, int8, pairs = trained
    floats, ints = folders
    sources = [s for s, _ in pairs[:20]]
    stdin = "".join(f"{s}\n" for s in sources).encode()
    lines = output_lines(run_luong("translate", str(ints), "--beam", "5", stdin=stdin))
    assert lines == translate(int8, sources, SearchOptions(beam=5))
    both = output_lines(run_luong("translate", str(ints), str(floats), stdin=stdin))
    assert len(both) == len(sources)
    result = run_luong("eval", str(ints), "--task", "dates", "--n", "40", "--json")
    assert result.returncode == 0, result.stderr.decode()
    assert 0.0 <= json.loads(result.stdout)["exact_match"] <= 1.0


def test_quantize_refuses_what_is_not_a_float_model_in_one_line(folders, tmp_path: Path) -> None:
    _, ints = folders
    assert_one_line_error(
        run_luong("quantize", str(tmp_path), "--out", str(tmp_path / "q")),
        f"{tmp_path / 'model.safetensors'}: missing (is {tmp_path} a luong model folder?)",
    )
    assert_one_line_error(
        run_luong("quantize", str(ints), "--out", str(tmp_path / "q")),
        f"{ints}: holds an int8 model already (luong quantize); quantize the float model it "
        "was made from",
    )
    assert not (tmp_path / "q").exists()


def test_quantize_out_is_new_or_empty_or_an_earlier_int8_model(folders, tmp_path: Path) -> None:
    floats, ints = folders
    before = (ints / "model.safetensors").read_bytes()
    assert_one_line_error(
        run_luong("quantize", str(floats), "--out", str(ints), "--parts", "output"),
        f"{ints}: holds an earlier int8 model (config.json, model.safetensors, src_vocab.json and "
        "1 more); choose a new or empty folder for --out, or --force to replace it",
    )
    assert_one_line_error(
        run_luong("quantize", str(floats), "--out", str(floats.parent)),
        f"{floats.parent}: not empty and not an earlier int8 model",
    )
    assert_one_line_error(
        run_luong("quantize", str(floats), "--out", str(tmp_path / "q"), "--parts", "all"),
        "--parts: expected some of output, cells, attention, each once, got 'all'",
    )
    assert (ints / "model.safetensors").read_bytes() == before
    assert not (tmp_path / "q").exists()


def test_export_refuses_an_int8_model_folder_in_one_line(folders, tmp_path: Path) -> None:
    _, ints = folders
    assert_one_line_error(
        run_luong("export", str(ints), "--out", str(tmp_path / "onnx")),
        f"{ints}: an int8 model (luong quantize); export the float model it was made from (the "
        "ONNX graphs are float32)",
    )
    assert not (tmp_path / "onnx").exists()
    with pytest.raises(ValueError, match=r"model: an int8 model \(luong quantize\); export"):
        export_onnx(quantize(small_model(16)), tmp_path / "onnx")


def test_train_refuses_an_int8_model_folder_in_one_line(folders) -> None:
    _, ints = folders
    assert_one_line_error(
        run_luong("train", "dates", "--out", str(ints), "--resume", *TINY_DATES_FLAGS),
        f"{ints}: holds an int8 model (luong quantize), which decodes only and is not trained; "
        "train or resume the float run it was made from, or choose another --out",
    )
    assert sorted(p.name for p in ints.iterdir()) == [
        "config.json", "model.safetensors", "src_vocab.json", "tgt_vocab.json",
    ]  # fmt: skip
