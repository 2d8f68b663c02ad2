"""ONNX export (``luong export``, ``luong.export``): the graphs compute what the model computes,
the runtime searches and tokenizes as luong does, it runs where torch is not installed, and
bad input is one clear line."""

from __future__ import annotations

import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
from helpers import TGT, assert_one_line_error, output_lines, small_model

from luong import SearchOptions, Seq2Seq, Vocab, decode, translate
from luong.cli import main
from luong.common.lines import LINE_BREAKS
from luong.config.search import MAX_ALPHA, MAX_BEAM, MAX_BETA, MAX_OUTPUT_LEN
from luong.config.search import SearchOptions as LuongOptions
from luong.data.subword import train_subword
from luong.export import runtime
from luong.export.exporter import check_export, export_onnx, graph_names
from luong.model.decoder import DecoderState, Memory
from luong.search.text import SEARCH_ROWS

# Every attention kind of the family; each with a GRU (input feeding, one layer) and an LSTM
# (no feeding, two layers, dropout, which export must not apply).
KINDS = [
    {"attention": "dot"},
    {"attention": "scaled_dot"},
    {"attention": "general"},
    {"attention": "concat"},
    {"attention": "location", "max_src_len": 12},
    {"attention": "bahdanau"},
    {"attention": "general", "local": "monotonic", "window": 2},
    {"attention": "concat", "local": "predictive", "window": 2},
]
CELLS = [
    {"cell": "gru", "input_feed": True, "dec_layers": 1},
    {"cell": "lstm", "input_feed": False, "dec_layers": 2, "dropout": 0.1},
]
GRID = [
    pytest.param(
        {**kind, **cell}, id=f"{kind['attention']}-{kind.get('local', 'global')}-{cell['cell']}"
    )
    for kind in KINDS
    for cell in CELLS
]


def exported(model: Seq2Seq, folder: Path) -> Path:
    return export_onnx(model, folder)


def random_inputs(model: Seq2Seq, seed: int) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Sources B = 4, S = 9 (shapes the export was not traced with) and a step of R = 6 rows
    from a random state: the step graph's inputs and src_lengths."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([9, 3, 6, 1])
    src = torch.randint(4, len(model.src_vocab), (4, 9), generator=g)
    for b, n in enumerate(lengths.tolist()):
        src[b, n - 1], src[b, n:] = Vocab.eos_id, Vocab.pad_id
    layers, d = model.config.dec_layers, model.config.dec_hidden
    inputs = {
        "src": src,
        "tokens": torch.randint(0, len(model.tgt_vocab), (6,), generator=g),
        "hidden": torch.randn(layers, 6, d, generator=g),
        "cell": torch.randn(layers, 6, d, generator=g),
        "feed": torch.randn(6, d, generator=g),
        "rows": torch.tensor([0, 3, 3, 1, 2, 0]),
        "step": torch.tensor(int(torch.randint(0, 8, (), generator=g))),
    }
    return inputs, lengths


@pytest.mark.parametrize("fields", GRID)
def test_graphs_equal_the_model(fields: dict[str, object], tmp_path: Path) -> None:
    model = small_model(**fields)
    folder = exported(model, tmp_path / "onnx")
    names = graph_names(model)
    encoder = ort.InferenceSession(str(folder / "encoder.onnx"))
    step = ort.InferenceSession(str(folder / "step.onnx"))
    assert [i.name for i in step.get_inputs()] == names["step"]["inputs"]
    for seed in (1, 2):
        inputs, lengths = random_inputs(model, seed)
        with torch.inference_mode():
            memory, state = model.encode(inputs["src"], lengths)
        got = dict(
            zip(
                names["encoder"]["outputs"],
                encoder.run(None, {"src": inputs["src"].numpy(), "src_lengths": lengths.numpy()}),
                strict=True,
            )
        )
        np.testing.assert_allclose(got["keys"], memory.keys, atol=1e-5, rtol=0)
        np.testing.assert_allclose(got["hidden"], state.hidden, atol=1e-5, rtol=0)
        if "proj" in got:
            np.testing.assert_allclose(got["proj"], memory.proj, atol=1e-5, rtol=0)
        if state.cell is not None:
            np.testing.assert_allclose(got["cell"], state.cell, atol=1e-5, rtol=0)
        feeds = {
            **inputs,
            "keys": torch.from_numpy(got["keys"]),
            "proj": memory.proj,
            "mask": memory.mask,
        }
        outputs = dict(
            zip(
                names["step"]["outputs"],
                step.run(None, {name: feeds[name].numpy() for name in names["step"]["inputs"]}),
                strict=True,
            )
        )
        rows = inputs["rows"]
        start = DecoderState(
            inputs["hidden"],
            inputs["cell"] if model.config.cell == "lstm" else None,
            inputs["feed"] if model.config.input_feed else torch.zeros(6, 6),
            None,
            int(inputs["step"]),
        )
        with torch.inference_mode():
            logits, after, weights = model.decoder.step(
                inputs["tokens"],
                start,
                Memory(*(x[rows] for x in (memory.keys, memory.mask, memory.proj))),
            )
        expected = {
            "log_probs": torch.log_softmax(logits, dim=-1),
            "new_hidden": after.hidden,
            "new_cell": after.cell,
            "new_feed": after.feed,
            "weights": weights,
        }
        for name in names["step"]["outputs"]:
            np.testing.assert_allclose(outputs[name], expected[name], atol=1e-5, rtol=0)


def test_export_leaves_the_model_as_it_was(tmp_path: Path) -> None:
    model = small_model(dropout=0.1).train()
    export_onnx(model, tmp_path / "onnx")
    assert model.training and all(m.training for m in model.modules())
    assert check_export(tmp_path / "onnx", model) < 1e-5  # checked in eval mode


RANDOM = random.Random(0)
TEXTS = ["".join(RANDOM.choices("abcdefghij", k=RANDOM.randint(1, 12))) for _ in range(40)]
SEARCHES = [
    SearchOptions(),
    SearchOptions(beam=2),
    SearchOptions(beam=5),
    SearchOptions(beam=5, nbest=3, alpha=0.6, beta=0.2),
    SearchOptions(beam=3, min_len=4, max_len=12),
    SearchOptions(beam=1, alpha=1.0),
]
MODELS = [
    {"attention": "general"},
    {"attention": "concat", "cell": "lstm", "input_feed": False, "dec_layers": 2},
    {"attention": "dot", "local": "monotonic", "window": 2},
    {"attention": "bahdanau", "cell": "lstm"},
    {"attention": "general", "lively": True},
]


@pytest.fixture(scope="module", params=MODELS, ids=lambda f: "-".join(map(str, f.values())))
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    fields = dict(request.param)
    lively = fields.pop("lively", False)
    model = small_model(seed=3, **fields)
    if lively:  # peakier distributions and later EOS (test_search's LIVELY): beams diverge
        with torch.no_grad():
            for param in model.parameters():
                param.mul_(3.0)
            model.decoder.out.bias[Vocab.eos_id] -= 1.0
    folder = export_onnx(model, tmp_path_factory.mktemp("onnx") / "model")
    return model, runtime.load(folder, threads=1)


@pytest.mark.parametrize("options", SEARCHES, ids=lambda o: f"beam{o.beam}-n{o.nbest}-a{o.alpha}")
def test_search_gives_luongs_tokens(pair, options: SearchOptions) -> None:  # type: ignore[no-untyped-def]
    model, onnx = pair
    expected = decode(model, TEXTS, options)
    fields = {
        name: getattr(options, name)
        for name in ("beam", "nbest", "alpha", "beta", "min_len", "max_len")
    }
    got = onnx.decode(TEXTS, runtime.SearchOptions(**fields), batch_size=16)
    assert [hyps[0].tokens for hyps in got] == [hyps[0].tokens for hyps in expected]
    assert onnx.translate(TEXTS, runtime.SearchOptions(**fields)) == translate(
        model, TEXTS, options
    )
    # Below the best, a random model's outputs repeat a token, and two of them can differ in
    # log P by less than the float32 rounding of the two implementations (3 lists in 2,880
    # of a larger grid differed so, each by a hypothesis within 5e-4 of the other's): the
    # lists score the same, and at most one in 40 may hold another near-tie.
    differ = 0
    for hyps, wanted in zip(got, expected, strict=True):
        assert [h.score for h in hyps] == pytest.approx([h.score for h in wanted], abs=1e-3)
        differ += [h.tokens for h in hyps] != [h.tokens for h in wanted]
        for h, w in zip(hyps, wanted, strict=True):
            if h.tokens == w.tokens:
                assert h.score == pytest.approx(w.score, abs=1e-4)
                np.testing.assert_allclose(h.attention, w.attention, atol=1e-5)
    assert differ <= len(TEXTS) // 40


def test_runtime_options_are_luongs() -> None:
    assert runtime.LINE_BREAKS == LINE_BREAKS
    assert runtime.SEARCH_ROWS == SEARCH_ROWS
    assert (runtime.MAX_BEAM, runtime.MAX_ALPHA, runtime.MAX_BETA, runtime.MAX_OUTPUT_LEN) == (
        MAX_BEAM,
        MAX_ALPHA,
        MAX_BETA,
        MAX_OUTPUT_LEN,
    )
    ours, theirs = runtime.SearchOptions(), LuongOptions()
    for name in ("beam", "nbest", "alpha", "beta", "min_len", "max_len", "shortlist"):
        assert getattr(ours, name) == getattr(theirs, name)
    with pytest.raises(ValueError, match="nbest: expected at most beam = 2, got 3"):
        runtime.SearchOptions(beam=2, nbest=3)
    with pytest.raises(ValueError, match=r"alpha: expected a number in \[0, 5\], got 6"):
        runtime.SearchOptions(alpha=6)
    with pytest.raises(TypeError, match="beam: expected an int >= 1, got '5'"):
        runtime.SearchOptions(beam="5")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_len: expected < max_len = 3"):
        runtime.SearchOptions(min_len=3, max_len=3)


@pytest.mark.parametrize("size", [4000, 4037, 30])
@pytest.mark.parametrize("k", [1, 5, 12])
def test_runtime_top_is_torch_topk(size: int, k: int) -> None:
    # Wide rows take _top's chunked path (a tail of 37 that fills no chunk with 4,037), narrow
    # ones the plain partition; the k-th best sits at each chunk's edge and in the tail.
    rng = np.random.default_rng(size + k)
    values = rng.standard_normal((40, size)).astype(np.float32)
    values[:, :2] = -np.inf  # PAD and BOS
    values[1, -1] = 9.0
    edge = min(size - 1, runtime.TOP_CHUNK)
    values[2, edge - 1] = values[2, edge] = 8.0
    values[3] = -np.inf  # a dense row without a beam
    values[4, 10:] = -np.inf  # fewer finite values than some k
    ours = runtime._top(values, k)
    best = torch.topk(torch.from_numpy(values), k)
    np.testing.assert_array_equal(np.take_along_axis(values, ours, axis=1), best.values.numpy())
    ties = np.zeros(len(values), dtype=bool)
    ties[[2, 3, 4]] = True  # equal values come in either order
    np.testing.assert_array_equal(ours[~ties], best.indices.numpy()[~ties])
    # A NaN shows among its row's k best, so that the search finds it there.
    values[5, size // 2] = np.nan
    assert np.isnan(values[5, runtime._top(values, k)[5]]).any()
    # A view (every other row) is read through its strides.
    np.testing.assert_array_equal(runtime._top(values[::2], k)[:7:3], ours[:13:6])


# Text that tests each normalisation: ligatures, full-width digits, superscripts, combining
# accents, case that changes length (İ), specials spelled out, line breaks and tabs.
TRICKY = [
    "ﬁne ＡＢＣ １２３ m² e\u0301té",
    "İstanbul STRASSE Straße ÉCOLE",
    "<s> </s> <unk> <pad> x",
    "a\tb\u2028c\rd",
    "  spaces   inside  ",
    "",
]


def vocabulary(index: int) -> Vocab:
    # Trained without the line breaks (sentencepiece would learn "\r" as a piece, which
    # SubwordVocab refuses); they reach the subword models as byte pieces.
    corpus = [text for text in TRICKY if text and "\r" not in text]
    corpus += [
        "the fine school",
        "Grüße aus Köln",
        "a quick brown fox jumps over the lazy dog",
        "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich",
    ] * 5
    return [
        lambda: Vocab.build(corpus, "char"),
        lambda: Vocab.build(corpus, "char", lowercase=True, normalization="NFC"),
        lambda: Vocab.build(corpus, "space", lowercase=True),
        lambda: Vocab.build(corpus, "space", normalization="NFC"),
        lambda: train_subword(corpus * 4, "unigram", 325),
        lambda: train_subword(corpus * 4, "bpe", 320, lowercase=True),
    ][index]()


@pytest.mark.parametrize("index", range(6))
def test_tokenization_is_luongs(index: int, tmp_path: Path) -> None:
    vocab = vocabulary(index)
    vocab.save(tmp_path / "vocab.json")
    ours = runtime.Vocabulary(tmp_path / "vocab.json")
    assert len(ours) == len(vocab)
    for text in TRICKY:
        assert ours.encode(text) == vocab.encode(text), text
        assert ours.tokenize(text) == vocab.tokenize(text), text
    g = random.Random(index)
    for _ in range(200):  # every id, specials, byte pieces and line-breaking symbols included
        ids = [g.randrange(len(vocab)) for _ in range(g.randint(0, 12))]
        assert ours.decode(ids) == vocab.decode(ids), ids


def minimal_site(folder: Path, extra: tuple[str, ...] = ()) -> Path:
    """A folder holding only numpy, onnxruntime and sentencepiece, and the packages ``extra``
    (links to this venv's)."""
    folder.mkdir()
    for name in ("numpy", "onnxruntime", "sentencepiece", *extra):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.submodule_search_locations
        package = Path(spec.submodule_search_locations[0])
        for entry in (package, package.with_name(f"{name}.libs")):  # vendored libraries
            if entry.exists():
                (folder / entry.name).symlink_to(entry)
    return folder


def without_torch(
    site: Path, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``python -S ARGS`` with sys.path the standard library, ``site`` and the script's or
    -c's folder: no site-packages, no luong, no torch."""
    return subprocess.run(
        [sys.executable, "-S", *args],
        input=stdin,
        capture_output=True,
        env={"PYTHONPATH": str(site), "OMP_NUM_THREADS": "1"},
        timeout=120,
    )


def test_runtime_translates_without_torch_or_luong(tmp_path: Path) -> None:
    pieces = train_subword(
        [f"{a} {b}" for a, b in zip(TEXTS, TEXTS[1:], strict=False)] * 3, "unigram", 290
    )
    model = Seq2Seq(small_model().config, pieces, TGT, seed=5).eval()
    folder = export_onnx(model, tmp_path / "onnx")
    site = minimal_site(tmp_path / "site")
    texts = [*TEXTS[:10], "", "ÄÖÜ ﬁ"]
    code = (
        "import importlib.util, json, sys\n"
        "assert importlib.util.find_spec('torch') is None\n"
        "assert importlib.util.find_spec('luong') is None\n"
        f"sys.path.insert(0, {str(folder)!r})\n"
        "import luong_onnx\n"
        f"model = luong_onnx.load({str(folder)!r})\n"
        "texts = json.loads(sys.stdin.read())\n"
        "out = [model.translate(texts), model.translate(texts, luong_onnx.SearchOptions(beam=4))]\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('torch', 'luong')]\n"
        "print(json.dumps(out))\n"
    )
    result = without_torch(site, "-c", code, stdin=json.dumps(texts).encode())
    assert result.returncode == 0, result.stderr.decode()
    assert json.loads(result.stdout) == [
        translate(model, texts),
        translate(model, texts, SearchOptions(beam=4)),
    ]
    # The file as a command, in the same bare interpreter.
    lines = "\n".join(texts[:3]).encode() + b"\n"
    command = without_torch(
        site, str(folder / "luong_onnx.py"), str(folder), "--beam", "4", "--nbest", "2", stdin=lines
    )
    expected = ["\t".join(n) for n in translate_nbest_lists(model, texts[:3])]
    assert output_lines(command) == expected


def translate_nbest_lists(model: Seq2Seq, texts: list[str]) -> list[list[str]]:
    hyps = decode(model, texts, SearchOptions(beam=4, nbest=2))
    return [[model.tgt_vocab.decode(h.tokens) for h in hs] for hs in hyps]


def test_runtime_refuses_long_sources_and_bad_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = small_model(attention="location", max_src_len=5)
    onnx = runtime.load(export_onnx(model, tmp_path / "onnx"))
    assert onnx.translate(["abcde"]) == translate(model, ["abcde"])
    with pytest.raises(ValueError, match="input 2: 6 symbols, above the maximum source length 5"):
        onnx.translate(["ab", "abcdef"])
    with pytest.raises(TypeError, match="texts: expected a sequence of strings"):
        onnx.translate("abc")
    with pytest.raises(ValueError, match="batch_size: expected an int >= 1, got 0"):
        onnx.translate(["abc"], batch_size=0)
    with pytest.raises(ValueError, match=r"ids: expected ids in \[0, 15\), got 15"):
        onnx.tgt_vocab.decode([4, 15])
    with pytest.raises(ValueError, match="ids: expected one or more sources of ids in"):
        onnx.encode([[4, 2], []])
    with pytest.raises(FileNotFoundError, match="no such export folder"):
        runtime.load(tmp_path / "missing")
    with pytest.raises(ValueError, match="not a luong ONNX export"):
        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "export.json").write_text("{}")
        runtime.load(tmp_path / "other")
    # Weights that overflow: one NaN in one row's scores, found among that row's best.
    step = onnx.run_step

    def overflowing(*given):  # type: ignore[no-untyped-def]
        log_probs, state, weights = step(*given)
        if given[4] == 2:  # t
            log_probs[-1, 7] = np.nan
        return log_probs, state, weights

    monkeypatch.setattr(onnx, "run_step", overflowing)
    with pytest.raises(ValueError, match="the model's scores are NaN at output step 3: its"):
        onnx.translate(["abcd", "ab"], runtime.SearchOptions(beam=3))


def test_export_needs_onnx_and_onnxruntime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    find = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "onnxruntime" else find(name, *a),
    )
    with pytest.raises(
        ModuleNotFoundError,
        match=r"missing: onnxruntime \(in a clone of luong: pip install -e '\.\[export\]'; from",
    ):
        export_onnx(small_model(), tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()


def test_cli_exports_and_refuses_bad_folders(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    model_dir = small_model(src=Vocab(list("abc ")), tgt=TGT).save_pretrained(tmp_path / "model")
    assert main(["export", str(model_dir), "--out", str(tmp_path / "onnx")]) == 0
    out, err = capfd.readouterr()
    assert (
        out.startswith(f"exported {model_dir} to {tmp_path / 'onnx'}; translate with") and not err
    )
    assert sorted(p.name for p in (tmp_path / "onnx").iterdir()) == [
        "encoder.onnx",
        "export.json",
        "luong_onnx.py",
        "src_vocab.json",
        "step.onnx",
        "tgt_vocab.json",
    ]
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    for args, message in [
        (
            [str(tmp_path / "empty"), "--out", str(tmp_path / "out")],
            f"{tmp_path / 'empty' / 'model.safetensors'}: missing (is {tmp_path / 'empty'} a "
            "luong model folder?)",
        ),
        (
            [str(tmp_path / "missing"), "--out", str(tmp_path / "out")],
            f"{tmp_path / 'missing'}: no such model folder",
        ),
        (
            [str(model_dir), "--out", str(tmp_path / "onnx")],
            f"{tmp_path / 'onnx'}: not empty (it holds encoder.onnx, export.json, luong_onnx.py "
            "and 3 more); choose a new or empty folder for --out",
        ),
        (
            [str(model_dir), "--out", str(tmp_path / "file")],
            f"{tmp_path / 'file'}: a file, not a folder; --out names a new or empty folder",
        ),
    ]:
        assert main(["export", *args]) == 1
        assert capfd.readouterr() == ("", f"luong: error: {message}\n")
    assert not (tmp_path / "out").exists()
    onnx = tmp_path / "onnx"
    bad = subprocess.run(
        [sys.executable, str(onnx / "luong_onnx.py"), str(onnx), "--nbest", "2"],
        input=b"abc\n",
        capture_output=True,
        timeout=120,
    )
    assert_one_line_error(bad, "luong_onnx: error: nbest: expected at most beam = 1, got 2")
    binary = subprocess.run(  # as luong translate: a NUL is a binary file's, no text
        [sys.executable, str(onnx / "luong_onnx.py"), str(onnx)],
        input=b"abc\nab\x00c\n",
        capture_output=True,
        timeout=120,
    )
    assert binary.returncode == 1
    assert binary.stderr.decode().splitlines()[-1] == (
        "luong_onnx: error: <stdin>:2: a NUL byte (byte 3 of the line); expected text, not "
        "binary data"
    )
