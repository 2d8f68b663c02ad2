"""Tests of ``luong.model.seq2seq`` and ``luong.search``: the model's arguments, seeding, save and
load, greedy search and ``translate`` (``Seq2SeqConfig`` itself: ``tests/test_config.py``).

Oracles: the teacher-forced forward pass (greedy search must pick its argmax at every step);
the same sentence alone and in batches; a round trip through the saved folder; the error
messages, read for the file, the tensor and the shapes they name.

Shapes: B batch, S source length, T output length, V target vocabulary.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
import torch
from helpers import (
    SMALL,
    SRC_SPACE,
    TGT,
    assert_one_line_error,
    luong,
    small_batch,
    small_config,
    small_model,
    source_batch,
)
from safetensors.torch import load_file, save_file

from luong import Seq2Seq, Vocab, greedy_search
from luong.config.model import MAX_PARAMETERS
from luong.config.search import SearchOptions
from luong.data.batching import encode_sources
from luong.translation.translator import translate

FILES = {"model.safetensors", "config.json", "src_vocab.json", "tgt_vocab.json"}


def same_state(a: Seq2Seq, b: Seq2Seq) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return list(sa) == list(sb) and all(torch.equal(sa[k], sb[k]) for k in sa)


# --- the size of a model -----------------------------------------------------------------------


PARAMETER_CASES = [
    {},
    {"cell": "lstm", "enc_layers": 3, "dec_layers": 2, "attention": "concat"},
    {"cell": "lstm", "bidirectional": False, "attention": "bahdanau", "input_feed": False},
    {"attention": "location", "max_src_len": 17, "bridge": "zero"},
    {"attention": "dot", "bridge": "last", "enc_layers": 2},
    {"attention": "scaled_dot", "local": "predictive", "window": 3},
    {"attention": "general", "local": "monotonic", "cell": "lstm", "bridge": "bridge"},
    {"tie_embeddings": True, "emb_dim": 5, "dec_hidden": 7},
]


@pytest.mark.parametrize("fields", PARAMETER_CASES, ids=lambda f: "-".join(map(str, f.values())))
def test_parameter_count_is_the_built_models(fields: dict[str, object]) -> None:
    src, tgt = (SRC_SPACE, SRC_SPACE) if fields.get("tie_embeddings") else (SRC_SPACE, TGT)
    model = small_model(0, src, tgt, **fields)
    count = sum(p.numel() for p in model.parameters())  # a tied tensor once
    assert model.config.parameter_count(len(src), len(tgt)) == count


def test_a_model_too_large_to_allocate_is_refused_before_it_is_built() -> None:
    # Each size within its bound, together 306 billion parameters: refused as a config.
    with pytest.raises(
        ValueError,
        match=r"^model: 306,029,986,218 parameters with vocabularies of the 4 specials, above "
        r"the limit of 4,000,000,000 \(16 GB of float32 weights\); 306,029,395,968 of them in "
        r"the encoder \(enc_hidden 16384, enc_layers 64\)$",
    ):
        small_config(enc_hidden=16_384, enc_layers=64)
    # A config that fits, with vocabularies too large for it (two of 130,004 symbols).
    config = small_config(emb_dim=16_384)
    with pytest.raises(
        ValueError,
        match=r"^model: 4,261,471,416 parameters with vocabularies of 130,004 and 130,004 "
        r"symbols, .*; 4,259,971,072 of them in the embeddings \(emb_dim 16384 x 260,008 "
        r"symbols\)$",
    ):
        config.check_parameters(130_004, 130_004)
    # One embedding matrix for both (130,004 x 16,384 fewer) fits.
    tied = small_config(emb_dim=16_384, tie_embeddings=True)
    count = tied.parameter_count(130_004, 130_004)
    assert count == 4_261_471_416 - 130_004 * 16_384 <= MAX_PARAMETERS
    tied.check_parameters(130_004, 130_004)


def test_the_model_checks_its_parameters_before_it_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # With the limit lowered to this small model's size, exactly at it builds, one above it
    # is refused (with the real limit, a model that large would take 17 GB to try).
    count = sum(p.numel() for p in small_model(0, SRC_SPACE, TGT).parameters())
    monkeypatch.setattr("luong.config.model.MAX_PARAMETERS", count)
    small_model(0, SRC_SPACE, TGT)
    monkeypatch.setattr("luong.config.model.MAX_PARAMETERS", count - 1)
    with pytest.raises(ValueError, match=f"^model: {count:,} parameters with vocabularies of "):
        small_model(0, SRC_SPACE, TGT)


# --- arguments -----------------------------------------------------------------------------------


def test_model_rejects_wrong_argument_types() -> None:
    with pytest.raises(TypeError, match="config: expected a Seq2SeqConfig, got dict"):
        Seq2Seq(SMALL, SRC_SPACE, TGT)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tgt_vocab: expected a Vocab, got list"):
        Seq2Seq(small_config(), SRC_SPACE, ["a"])  # type: ignore[arg-type]


# --- forward: shapes at the boundary -------------------------------------------------------------


def test_forward_shapes() -> None:
    model = small_model(src=SRC_SPACE)
    src, lengths, tgt_in = small_batch((5, 3, 2), 6, src=SRC_SPACE, eos=True)
    assert model(src, lengths, tgt_in).shape == (3, 6, len(TGT))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda s, n, t: (s.float(), n, t),
            r"src: expected a long tensor \[B, S\], got torch.float32",
        ),
        (
            lambda s, n, t: (s[0], n, t),
            r"src: expected a long tensor \[B, S\], got torch.int64 \(5,\)",
        ),
        (lambda s, n, t: (s, n[:2], t), r"src_lengths: expected shape \[B\] = \(3,\), got \(2,\)"),
        (lambda s, n, t: (s, n[:, None], t), r"src_lengths: expected shape \[B\] = \(3,\)"),
        (
            lambda s, n, t: (s, [5, 3, 2], t),
            r"src_lengths: expected shape \[B\] = \(3,\), got list",
        ),
        (
            lambda s, n, t: (s, torch.tensor([5, 0, 2]), t),
            r"lengths in \[1, S = 5\], got \[5, 0, 2\]",
        ),
        (
            lambda s, n, t: (s, torch.tensor([6, 3, 2]), t),
            r"lengths in \[1, S = 5\], got \[6, 3, 2\]",
        ),
        (
            lambda s, n, t: (s, n, t[:2]),
            r"tgt_in: expected shape \[B, T\] with B = 3, got \(2, 4\)",
        ),
        (
            lambda s, n, t: (s, n, t[:, 0]),
            r"tgt_in: expected shape \[B, T\] with B = 3, got \(3,\)",
        ),
    ],
)
def test_forward_rejects_bad_shapes(change, message: str) -> None:
    model = small_model(src=SRC_SPACE)
    src, lengths, tgt_in = change(*small_batch((5, 3, 2), 4, src=SRC_SPACE, eos=True))
    with pytest.raises(ValueError, match=message):
        model(src, lengths, tgt_in)


@pytest.mark.parametrize("max_len", [0, -3, 1.5, True, None])
def test_greedy_search_rejects_bad_max_len(max_len: object) -> None:
    model = small_model(src=SRC_SPACE)
    src, lengths = source_batch((5, 3), vocab=SRC_SPACE, eos=True)
    with pytest.raises(ValueError, match=r"max_len: expected an int >= 1, got"):
        greedy_search(model, src, lengths, max_len)  # type: ignore[arg-type]


def test_greedy_search_rejects_bad_batch() -> None:
    model = small_model(src=SRC_SPACE)
    src, lengths = source_batch((5, 3), vocab=SRC_SPACE, eos=True)
    with pytest.raises(ValueError, match=r"src_lengths: expected shape \[B\] = \(2,\)"):
        greedy_search(model, src, lengths[:1], 5)


# --- seeds ---------------------------------------------------------------------------------------


def test_same_seed_same_weights_other_seed_other_weights() -> None:
    a, b, c = small_model(7, SRC_SPACE), small_model(7, SRC_SPACE), small_model(8, SRC_SPACE)
    assert same_state(a, b)
    sa, sc = a.state_dict(), c.state_dict()
    assert list(sa) == list(sc)
    for name in sa:
        assert not torch.equal(sa[name], sc[name]), name
    # the attention's weights follow the model seed too
    assert not torch.equal(a.decoder.attention.combine.weight, c.decoder.attention.combine.weight)


def test_seeded_model_leaves_global_generator_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    small_model(5, SRC_SPACE)
    assert torch.equal(torch.rand(3), expected)


def test_seed_gives_the_same_weights_whatever_the_global_state() -> None:
    torch.manual_seed(1)
    a = small_model(3, SRC_SPACE)
    torch.manual_seed(2)
    torch.rand(10)
    assert same_state(a, small_model(3, SRC_SPACE))


def test_unseeded_models_differ() -> None:
    torch.manual_seed(0)
    a = Seq2Seq(small_config(), SRC_SPACE, TGT)
    b = Seq2Seq(small_config(), SRC_SPACE, TGT)
    assert not same_state(a, b)


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_gradients_do_not_depend_on_thread_scheduling(cell: str) -> None:
    # Several intra-op threads and a batch with far more target tokens than target symbols:
    # the decoder's per-symbol gate table is read once per token, and a backward that
    # accumulated those reads with atomic adds across threads gave different sums from run
    # to run (and different trained models from the same seed). Same batch, same gradients.
    src, lengths, tgt_in = small_batch(tuple(range(3, 19)) * 16, 12, src=SRC_SPACE, eos=True)
    model = small_model(src=SRC_SPACE, cell=cell, emb_dim=64, enc_hidden=32, dec_hidden=128).train()
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        runs = []
        for _ in range(4):
            model.zero_grad()
            model(src, lengths, tgt_in).logsumexp(-1).sum().backward()
            runs.append({n: p.grad.clone() for n, p in model.named_parameters()})
    finally:
        torch.set_num_threads(threads)
    for later in runs[1:]:
        differ = [n for n in later if not torch.equal(later[n], runs[0][n])]
        assert differ == []


# --- save and load -------------------------------------------------------------------------------

SAVE_CASES = [
    {"cell": "gru"},
    {"cell": "lstm", "attention": "bahdanau", "enc_layers": 2, "dec_layers": 2},
    {"cell": "lstm", "attention": "concat", "input_feed": False, "bridge": "zero"},
    {"attention": "dot", "bridge": "last"},
]


@pytest.mark.parametrize("fields", SAVE_CASES, ids=lambda f: "-".join(map(str, f.values())))
def test_save_load_round_trip(tmp_path: Path, fields: dict[str, object]) -> None:
    model = small_model(4, SRC_SPACE, **fields)
    path = model.save_pretrained(tmp_path / "m")
    assert path == tmp_path / "m"
    assert {p.name for p in path.iterdir()} == FILES
    assert not [p for p in tmp_path.rglob("*") if p.suffix in {".pt", ".pth", ".pkl", ".bin"}]
    # safetensors: an 8-byte little-endian header length, then a JSON header; no pickle opcode
    raw = (path / "model.safetensors").read_bytes()
    assert raw[:1] != b"\x80"
    header = json.loads(raw[8 : 8 + int.from_bytes(raw[:8], "little")])
    assert header["__metadata__"] == {"format": "luong"}
    assert set(load_file(str(path / "model.safetensors"))) == set(model.state_dict())
    config = json.loads((path / "config.json").read_text())
    assert config["model"] == model.config.to_json()
    assert Vocab.load(path / "src_vocab.json") == SRC_SPACE
    assert Vocab.load(path / "tgt_vocab.json") == TGT

    loaded = Seq2Seq.from_pretrained(path)
    assert loaded.config == model.config
    assert loaded.src_vocab == SRC_SPACE and loaded.tgt_vocab == TGT
    assert same_state(loaded, model)
    src, lengths, tgt_in = small_batch((6, 2, 4), 4, src=SRC_SPACE, eos=True)
    with torch.no_grad():
        assert torch.equal(loaded.eval()(src, lengths, tgt_in), model(src, lengths, tgt_in))
    texts = ["abc", "jihgf edcba", "", "a b"]
    options = SearchOptions(max_len=8)
    assert translate(loaded, texts, options) == translate(model, texts, options)


def test_luong_load_is_from_pretrained(tmp_path: Path) -> None:
    import luong

    model = small_model(9, SRC_SPACE)
    model.save_pretrained(tmp_path)
    assert same_state(luong.load(str(tmp_path)).model, model)


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    small_model(1, SRC_SPACE).save_pretrained(tmp_path / "m")
    return tmp_path / "m"


def rewrite_weights(path: Path, edit) -> None:
    tensors = load_file(str(path / "model.safetensors"))
    edit(tensors)
    save_file(tensors, str(path / "model.safetensors"))


def test_load_missing_tensor(saved: Path) -> None:
    rewrite_weights(saved, lambda t: t.pop("decoder.out.bias"))
    with pytest.raises(ValueError) as info:
        Seq2Seq.from_pretrained(saved)
    message = str(info.value)
    assert str(saved / "model.safetensors") in message
    assert "missing tensors ['decoder.out.bias']" in message
    assert "unexpected tensors []" in message


def test_load_extra_tensor(saved: Path) -> None:
    rewrite_weights(saved, lambda t: t.update({"decoder.extra.weight": torch.zeros(2)}))
    with pytest.raises(ValueError) as info:
        Seq2Seq.from_pretrained(saved)
    message = str(info.value)
    assert str(saved / "model.safetensors") in message
    assert "unexpected tensors ['decoder.extra.weight']" in message
    assert "missing tensors []" in message


def test_load_misshaped_tensor(saved: Path) -> None:
    rewrite_weights(saved, lambda t: t.update({"decoder.out.weight": torch.zeros(len(TGT), 7)}))
    with pytest.raises(ValueError) as info:
        Seq2Seq.from_pretrained(saved)
    message = str(info.value)
    assert str(saved / "model.safetensors") in message
    assert "'decoder.out.weight'" in message
    assert f"has shape ({len(TGT)}, 7), the config expects ({len(TGT)}, 6)" in message


def test_load_config_that_does_not_match_weights(saved: Path) -> None:
    config = json.loads((saved / "config.json").read_text())
    config["model"]["dec_hidden"] = 8
    (saved / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"tensor '[\w.]+' has shape .*, the config expects"):
        Seq2Seq.from_pretrained(saved)


def test_load_non_finite_tensor(saved: Path) -> None:
    def poison(tensors: dict[str, torch.Tensor]) -> None:
        tensors["decoder.out.bias"][0] = float("nan")

    rewrite_weights(saved, poison)
    with pytest.raises(ValueError, match=r"tensor 'decoder.out.bias' holds non-finite values"):
        Seq2Seq.from_pretrained(saved)


@pytest.mark.parametrize("name", sorted(FILES))
def test_load_missing_file(saved: Path, name: str) -> None:
    (saved / name).unlink()
    with pytest.raises(FileNotFoundError, match=f"{name}: missing"):
        Seq2Seq.from_pretrained(saved)


def test_load_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nowhere: no such model folder"):
        Seq2Seq.from_pretrained(tmp_path / "nowhere")


def test_a_file_given_as_the_model_folder_is_named_a_file(tmp_path: Path) -> None:
    """``luong translate notes.txt --input notes.txt`` said ``notes.txt: no such model
    folder`` of a file that is there."""
    notes = tmp_path / "notes.txt"
    notes.write_text("Open file\n")
    with pytest.raises(NotADirectoryError, match="notes.txt: a file, not a model folder$"):
        Seq2Seq.from_pretrained(notes)
    result = luong("translate", str(notes), "--input", str(notes))
    assert_one_line_error(result, f"luong: error: {notes}: a file, not a model folder")


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda raw: raw[: len(raw) // 2],  # truncated inside the data
        lambda raw: raw[:20],  # truncated inside the header
        lambda raw: b"",
        lambda raw: b"\x80\x04\x95 not a safetensors file at all, a pickle prefix",
    ],
    ids=["half", "header", "empty", "garbage"],
)
def test_load_corrupt_weights(saved: Path, corrupt) -> None:
    weights = saved / "model.safetensors"
    weights.write_bytes(corrupt(weights.read_bytes()))
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        Seq2Seq.from_pretrained(saved)
    with pytest.raises(ValueError, match="model.safetensors"):
        Seq2Seq.from_pretrained(saved)


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("{not json", "not a valid model config"),
        ('{"model": {"attention": "luong"}}', "attention: expected one of dot, general"),
        ('{"model": {"cell": "gru", "depth": 3}}', r"unknown fields \['depth'\]"),
        ('{"model": {"dec_hidden": -1}}', "dec_hidden: expected an int >= 1"),
        ('{"model": {"input_feed": "yes"}}', "input_feed: expected a bool"),
        ('{"model": [1]}', "expected a JSON object, got list"),
        ("[]", "expected a JSON object"),
    ],
)
def test_load_bad_config(saved: Path, text: str, detail: str) -> None:
    # A "model" object changes those fields of the saved config; other text is written as is.
    try:
        changes = json.loads(text)
    except json.JSONDecodeError:
        changes = None
    if isinstance(changes, dict) and isinstance(changes.get("model"), dict):
        config = json.loads((saved / "config.json").read_text())
        config["model"].update(changes["model"])
        text = json.dumps(config)
    (saved / "config.json").write_text(text)
    with pytest.raises(ValueError, match=detail) as info:
        Seq2Seq.from_pretrained(saved)
    assert str(saved / "config.json") in str(info.value)


def test_load_config_with_missing_fields_names_them(saved: Path) -> None:
    (saved / "config.json").write_text('{"model": {"cell": "gru"}}')
    with pytest.raises(ValueError, match=r"missing fields \['attention', 'bidirectional'"):
        Seq2Seq.from_pretrained(saved)


def test_load_config_not_utf8(saved: Path) -> None:
    (saved / "config.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(ValueError, match="config.json: not a valid model config"):
        Seq2Seq.from_pretrained(saved)


def test_load_bad_vocabulary(saved: Path) -> None:
    (saved / "tgt_vocab.json").write_text('{"tokens": "char"}')
    with pytest.raises(ValueError, match=r"tgt_vocab.json: not a vocabulary: missing field"):
        Seq2Seq.from_pretrained(saved)


def without_hashes(folder: Path) -> None:
    """Make ``folder`` a model folder as luong wrote them before config.json recorded the
    vocabulary files' hashes."""
    config = json.loads((folder / "config.json").read_text())
    del config["vocab_sha256"]
    (folder / "config.json").write_text(json.dumps(config))


def test_load_wrong_vocabulary_size(saved: Path) -> None:
    Vocab(list("0123456789-+")).save(saved / "tgt_vocab.json")
    with pytest.raises(ValueError, match=r"tgt_vocab.json: changed since the model was saved"):
        Seq2Seq.from_pretrained(saved)
    # Without the hashes, the sizes still tell.
    without_hashes(saved)
    with pytest.raises(
        ValueError,
        match=r"'decoder.embedding.weight' has shape \(15, 4\), the config expects \(16, 4\)",
    ):
        Seq2Seq.from_pretrained(saved)


def test_config_records_the_sha256_of_each_vocabulary_file(saved: Path) -> None:
    recorded = json.loads((saved / "config.json").read_text())["vocab_sha256"]
    assert recorded == {
        name: hashlib.sha256((saved / name).read_bytes()).hexdigest()
        for name in ("src_vocab.json", "tgt_vocab.json")
    }


@pytest.mark.parametrize("name", ["src_vocab.json", "tgt_vocab.json"])
@pytest.mark.parametrize(
    "edit",
    [
        lambda vocab: {**vocab, "lowercase": True},  # every output changed, silently
        lambda vocab: {**vocab, "symbols": vocab["symbols"][::-1]},  # the rows mean others
        lambda vocab: vocab,  # the same description, written another way
    ],
    ids=["lowercase", "order", "reformatted"],
)
def test_an_edited_vocabulary_is_refused_naming_the_file(saved: Path, name: str, edit) -> None:
    path = saved / name
    path.write_text(json.dumps(edit(json.loads(path.read_text())), indent=4))
    message = (
        f"{path}: changed since the model was saved (its SHA-256 is not the one config.json "
        "records); the weights were trained with the vocabulary as saved: restore the file"
    )
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        Seq2Seq.from_pretrained(saved)


def test_a_folder_saved_before_the_hashes_loads_unchecked(saved: Path) -> None:
    model = Seq2Seq.from_pretrained(saved)
    without_hashes(saved)
    assert same_state(Seq2Seq.from_pretrained(saved), model)
    tgt = json.loads((saved / "tgt_vocab.json").read_text())
    (saved / "tgt_vocab.json").write_text(json.dumps({**tgt, "lowercase": True}))
    assert Seq2Seq.from_pretrained(saved).tgt_vocab.lowercase  # as before: nothing to check


@pytest.mark.parametrize(
    "recorded", [None, {"src_vocab.json": "ab"}, {"src_vocab.json": "0" * 64, "x": "0" * 64}]
)
def test_recorded_hashes_that_are_not_hashes_name_the_config(saved: Path, recorded) -> None:
    config = json.loads((saved / "config.json").read_text())
    (saved / "config.json").write_text(json.dumps({**config, "vocab_sha256": recorded}))
    with pytest.raises(ValueError, match=r"config.json: vocab_sha256: expected the SHA-256 \("):
        Seq2Seq.from_pretrained(saved)


# --- greedy search -------------------------------------------------------------------------------


def lively(seed: int = 1, bias: float = -1.0, **fields: object) -> Seq2Seq:
    """A random float64 model with its weights scaled up 3 times, so that its outputs depend on
    the source, and ``bias`` added to EOS's logit. The seeds used below give outputs that stop at
    different steps (some at max_len); the tests check that they do."""
    model = small_model(seed, SRC_SPACE, **fields).double()
    with torch.no_grad():
        for param in model.parameters():
            param.mul_(3.0)
        model.decoder.out.bias[Vocab.eos_id] += bias
    return model


LENGTHS = (7, 2, 5, 9, 3, 6, 1, 8)
MAX_LEN = 12


@pytest.mark.parametrize(
    ("seed", "bias", "fields"),
    [(1, -1.0, {}), (2, 0.0, {"cell": "lstm", "attention": "bahdanau"})],
    ids=["gru-general", "lstm-bahdanau"],
)
def test_greedy_is_the_argmax_of_the_teacher_forced_model(
    seed: int, bias: float, fields: dict[str, object]
) -> None:
    model = lively(seed, bias, **fields)
    src, lengths = source_batch(LENGTHS, seed=3, vocab=SRC_SPACE, eos=True)
    hyps = greedy_search(model, src, lengths, MAX_LEN)
    assert len(hyps) == len(LENGTHS)
    ends = {len(h.tokens) for h in hyps if h.tokens[-1] == Vocab.eos_id}
    assert ends and min(ends) < MAX_LEN  # some outputs stop early ...
    assert len({len(h.tokens) for h in hyps}) > 1  # ... at different steps
    for b, hyp in enumerate(hyps):
        n = int(lengths[b])
        assert 1 <= len(hyp.tokens) <= MAX_LEN
        assert Vocab.eos_id not in hyp.tokens[:-1]
        if hyp.tokens[-1] != Vocab.eos_id:
            assert len(hyp.tokens) == MAX_LEN
        assert len(hyp.log_probs) == len(hyp.tokens)
        assert hyp.score == pytest.approx(sum(hyp.log_probs), abs=1e-9)
        assert all(lp <= 0.0 for lp in hyp.log_probs)
        assert hyp.attention.shape == (len(hyp.tokens), n)
        torch.testing.assert_close(
            hyp.attention.sum(-1), torch.ones(len(hyp.tokens)).double(), atol=1e-9, rtol=0
        )
        # the oracle: the teacher-forced model on this sentence alone, fed greedy's own tokens
        tgt_in = torch.tensor([[Vocab.bos_id, *hyp.tokens[:-1]]])
        with torch.no_grad():
            memory, state = model.encode(src[b : b + 1, :n], lengths[b : b + 1])
            logits, weights = model.decoder(tgt_in, state, memory)
        log_probs = torch.log_softmax(logits[0], dim=-1)
        assert log_probs.argmax(-1).tolist() == hyp.tokens
        picked = log_probs.gather(1, torch.tensor(hyp.tokens)[:, None])[:, 0]
        torch.testing.assert_close(torch.tensor(hyp.log_probs).double(), picked, atol=1e-5, rtol=0)
        torch.testing.assert_close(hyp.attention, weights[0], atol=1e-6, rtol=0)


def test_greedy_stops_at_max_len_without_eos() -> None:
    model = lively(bias=-100.0)
    src, lengths = source_batch((4, 2), vocab=SRC_SPACE, eos=True)
    for max_len in (1, 5):
        hyps = greedy_search(model, src, lengths, max_len)
        assert [len(h.tokens) for h in hyps] == [max_len, max_len]
        assert all(Vocab.eos_id not in h.tokens for h in hyps)


def test_greedy_stops_at_once_with_eos() -> None:
    model = lively(bias=100.0)
    src, lengths = source_batch((4, 2), vocab=SRC_SPACE, eos=True)
    hyps = greedy_search(model, src, lengths, 9)
    assert [h.tokens for h in hyps] == [[Vocab.eos_id], [Vocab.eos_id]]
    assert all(h.score == pytest.approx(0.0, abs=1e-6) for h in hyps)


def test_greedy_sentence_alone_equals_sentence_in_batch() -> None:
    model = lively()
    src, lengths = source_batch(LENGTHS, seed=5, vocab=SRC_SPACE, eos=True)
    together = greedy_search(model, src, lengths, MAX_LEN)
    halves = greedy_search(model, src[:4], lengths[:4], MAX_LEN) + greedy_search(
        model, src[4:], lengths[4:], MAX_LEN
    )
    for b, n in enumerate(LENGTHS):
        (alone,) = greedy_search(model, src[b : b + 1, :n], lengths[b : b + 1], MAX_LEN)
        for other in (together[b], halves[b]):
            assert other.tokens == alone.tokens
            assert other.score == pytest.approx(alone.score, abs=1e-5)
            torch.testing.assert_close(other.attention, alone.attention, atol=1e-6, rtol=0)
    assert len({tuple(h.tokens) for h in together}) > 1  # the sentences decode differently


def test_greedy_search_leaves_no_graph() -> None:
    model = lively()
    src, lengths = source_batch((3, 2), vocab=SRC_SPACE, eos=True)
    hyps = greedy_search(model, src, lengths, 4)
    assert not hyps[0].attention.requires_grad


# --- translate -----------------------------------------------------------------------------------


TEXTS = ["abc", "", "jihgfedcba", "   ", "a", "bad cab", "hhhh", "\t\n", "é?!"]


def test_translate_keeps_order_and_empty_inputs() -> None:
    model = lively()
    options = SearchOptions(max_len=10)
    outputs = translate(model, TEXTS, options)
    assert len(outputs) == len(TEXTS)
    for text, output in zip(TEXTS, outputs, strict=True):
        if not text.strip():
            assert output == ""
        else:
            assert output == translate(model, [text], options)[0]
    assert len({o for o, t in zip(outputs, TEXTS, strict=True) if t.strip()}) > 2
    assert translate(model, TEXTS, options, batch_size=2) == outputs
    assert translate(model, list(reversed(TEXTS)), options) == list(reversed(outputs))


def test_translate_equals_greedy_search() -> None:
    model = lively()
    texts = ["abc", "jihg", "bad cab"]
    src, lengths = encode_sources(model.src_vocab, texts)
    assert lengths.tolist() == [4, 5, 8]  # EOS appended
    hyps = greedy_search(model, src, lengths, 10)
    assert translate(model, texts, SearchOptions(max_len=10)) == [
        TGT.decode(h.tokens) for h in hyps
    ]


def test_translate_edge_cases() -> None:
    model = lively()
    assert translate(model, []) == []
    assert translate(model, ["", " "]) == ["", ""]
    model.train()
    translate(model, ["abc"])
    assert model.training  # the mode is restored
    with pytest.raises(TypeError, match="texts: expected a sequence of strings, got a single str"):
        translate(model, "abc")
    with pytest.raises(TypeError, match=r"texts\[1\]: expected a str, got int"):
        translate(model, ["abc", 3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="batch_size: expected an int >= 1, got 0"):
        translate(model, ["abc"], batch_size=0)
    with pytest.raises(ValueError, match="max_len: expected an int >= 1, got 0"):
        translate(model, ["abc"], SearchOptions(max_len=0))


def test_translate_default_limit_does_not_depend_on_the_batch() -> None:
    model = lively(bias=-100.0)  # never emits EOS: every output runs to the limit
    alone = translate(model, ["ab"])[0]
    beside = translate(model, ["ab", "abcdefghijabcdefghij"])[0]
    assert beside == alone
