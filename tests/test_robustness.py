"""What each kind of bad input gets: one test per row of docs/robustness.md.

Every CLI error is one line on stderr and a non-zero exit, no traceback; `luong translate`
never drops or reorders lines: N lines in, N lines out, in order.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest
import torch
from helpers import (
    TINY_SRC,
    TINY_TGT,
    assert_one_line_error,
    luong,
    luong_limited,
    output_lines,
    python_limited,
    small_model,
)
from safetensors.torch import load_file, save_file

from luong import LuongAttention, Seq2Seq, Seq2SeqConfig, TrainConfig, train
from luong.common.lines import LINE_BREAKS
from luong.config.search import SearchOptions
from luong.data.subword import train_subword
from luong.evaluation.evaluate import evaluate
from luong.search import decode
from luong.translation.translator import translate as translate_texts

MODEL = Seq2SeqConfig(emb_dim=8, enc_hidden=8, enc_layers=1, dec_hidden=16, max_src_len=30)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("robust") / "dates"
    config = TrainConfig(epochs=1, batch_size=32, progress=False)
    train(
        "dates",
        out,
        model_config=MODEL,
        train_config=config,
        task_options={"n_train": 300, "n_dev": 20, "n_test": 0},
    )
    return out


def translate(model_dir: Path, text: bytes, *flags: str) -> subprocess.CompletedProcess[bytes]:
    return luong("translate", str(model_dir), *flags, stdin=text)


def test_empty_line_gives_an_empty_output_line(model_dir: Path) -> None:
    lines = output_lines(translate(model_dir, b"3 May 1979\n\n12.10.21\n"))
    assert len(lines) == 3 and lines[1] == "" and lines[0] and lines[2]


def test_whitespace_only_line_gives_an_empty_output_line(model_dir: Path) -> None:
    lines = output_lines(translate(model_dir, b"3 May 1979\n \t  \n12.10.21\n"))
    assert len(lines) == 3 and lines[1] == ""


def test_line_longer_than_max_src_len_is_rejected(model_dir: Path) -> None:
    long = "Monday, March 5, 1979 " * 3  # 66 symbols; the model takes 30
    result = translate(model_dir, f"3 May 1979\n{long}\n".encode())
    assert_one_line_error(result, "<stdin>:2: 66 symbols, above the maximum source length 30")
    assert result.stdout == b""  # nothing half-done
    # --max-src-len raises the limit for this call.
    assert len(output_lines(translate(model_dir, long.encode(), "--max-src-len", "70"))) == 1


def test_truncate_cuts_long_lines_with_a_warning(model_dir: Path) -> None:
    long = "Monday, March 5, 1979 " * 3
    result = translate(model_dir, f"3 May 1979\n{long}\n".encode(), "--truncate")
    assert len(output_lines(result)) == 2
    assert "luong: warning: 1 lines cut to 30 symbols (first: line 2)" in result.stderr.decode()
    cut = translate(model_dir, long[:30].encode())
    assert output_lines(result)[1] == output_lines(cut)[0]


def test_unknown_symbols_are_read_as_unk_and_counted(model_dir: Path) -> None:
    result = translate(model_dir, "3 May 1979 ☃☃\n12.10.21\nJan ∑ 1\n".encode())
    assert len(output_lines(result)) == 3
    err = result.stderr.decode()
    assert "luong: 3 unknown source symbols in 2 lines were read as <unk>" in err


def test_invalid_utf8_names_file_and_line(model_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_bytes(b"3 May 1979\n12.10.21\n\xc3\x28 bad\n")
    result = luong("translate", str(model_dir), "--input", str(path))
    assert_one_line_error(result, f"{path}:3: not valid UTF-8")
    assert result.stdout == b""


def test_windows_line_endings_give_the_same_outputs(model_dir: Path) -> None:
    unix = output_lines(translate(model_dir, b"3 May 1979\n\n12.10.21\n"))
    windows = output_lines(translate(model_dir, b"3 May 1979\r\n\r\n12.10.21\r\n"))
    assert windows == unix


def test_missing_final_newline_loses_nothing(model_dir: Path) -> None:
    with_newline = output_lines(translate(model_dir, b"3 May 1979\n12.10.21\n"))
    without = output_lines(translate(model_dir, b"3 May 1979\n12.10.21"))
    assert without == with_newline and len(without) == 2


def test_tsv_bad_lines_name_file_and_line(tmp_path: Path) -> None:
    good = tmp_path / "dev.tsv"
    good.write_text("abc\txyz\n")
    bad = tmp_path / "train.tsv"
    bad.write_text("abc\txyz\nno tab here\nabc\t\n")
    result = luong("train", "--train", str(bad), "--dev", str(good), "--out", str(tmp_path / "run"))
    assert_one_line_error(result, f"{bad}:2:")
    assert not (tmp_path / "run" / "checkpoints").exists()  # stopped before any training


def test_python_api_names_expected_shapes() -> None:
    attention = LuongAttention(4, "dot", rng=0)
    with pytest.raises(ValueError, match=r"query: expected shape \[B, 4\], got \(2, 3\)"):
        attention(torch.randn(2, 3), torch.randn(2, 5, 4), torch.ones(2, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="mask: expected dtype torch.bool, got torch.float32"):
        attention(torch.randn(2, 4), torch.randn(2, 5, 4), torch.ones(2, 5))
    model = small_model(0, TINY_SRC, TINY_TGT)
    with pytest.raises(
        ValueError, match=r"src: expected a long tensor \[B, S\], got torch.float32"
    ):
        model(torch.zeros(2, 3), torch.tensor([3, 3]), torch.zeros(2, 2, dtype=torch.long))
    with pytest.raises(ValueError, match=r"src_lengths: expected lengths in \[1, S = 3\]"):
        model(torch.zeros(2, 3, dtype=torch.long), torch.tensor([3, 4]), torch.zeros(2, 2).long())


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--beam", "-2"), ("--beam", "-2")),
        (("--batch-size", "0"), ("--batch-size: expected >= 1, got 0",)),
        (("--nbest", "3", "--beam", "2"), ("--nbest",)),
        (("--max-src-len", "0"), ("--max-src-len: expected >= 1, got 0",)),
    ],
)
def test_nonsensical_translate_options_are_usage_errors(
    model_dir: Path, args: tuple[str, ...], needles: tuple[str, ...]
) -> None:
    result = translate(model_dir, b"3 May 1979\n", *args)
    assert result.returncode == 2
    err = result.stderr.decode()
    assert "Traceback" not in err and "usage:" in err
    for needle in needles:
        assert needle in err, err


def test_unknown_attention_name_lists_the_choices() -> None:
    result = luong("train", "dates", "--out", "unused", "--attention", "magic")
    assert result.returncode == 2
    err = result.stderr.decode()
    assert "invalid choice: 'magic'" in err
    for choice in ("dot", "general", "concat", "location", "scaled_dot", "bahdanau"):
        assert choice in err


def test_n_lines_in_n_lines_out_in_order(model_dir: Path) -> None:
    lines = [
        "3 May 1979",
        "",
        "12.10.21",
        "Monday, March 5, 1979 " * 3,  # cut by --truncate
        "   ",
        "Jan ∑ 1",  # unknown symbol
        "August 17, 2031",
    ]
    result = translate(model_dir, "\r\n".join(lines).encode(), "--truncate")
    outputs = output_lines(result)
    assert len(outputs) == len(lines)
    assert [i for i, out in enumerate(outputs) if out == ""] == [1, 4]
    # Each output is the one its line gives alone: nothing moved.
    for i in (0, 2, 6):
        assert outputs[i] == output_lines(translate(model_dir, lines[i].encode()))[0]


def test_a_subword_model_that_emits_line_breaks_still_gives_n_lines(tmp_path: Path) -> None:
    # A subword model can emit the byte pieces of a line break, a tab or a NUL (<0x0A>,
    # <0x0D>, <0x09>, <0x00>...): 200 lines in gave 295 out, and tabs inside n-best fields.
    # This one emits nothing else: <0x0A> the most likely (greedy emits it at every step),
    # the other breakers, "a" and EOS a little less.
    pieces = train_subword(["abc abd", "bca dab"] * 10, "unigram", 265)
    model = Seq2Seq(MODEL, pieces, pieces, seed=0)
    emitted = [f"<0x{ord(c):02X}>" for c in sorted(LINE_BREAKS) if ord(c) < 0x80] + ["a"]
    with torch.no_grad():
        model.decoder.out.weight.zero_()
        model.decoder.out.bias.fill_(-30.0)
        for piece in [*emitted, "</s>"]:
            model.decoder.out.bias[pieces.id(piece)] = 0.0
        model.decoder.out.bias[pieces.id("<0x0A>")] = 0.5
    folder = model.save_pretrained(tmp_path / "breaks")
    # The sources hold such characters too (only \n ends an input line): U+2028, a tab...;
    # not a NUL, a binary file's byte, which luong translate refuses naming its line.
    breakers = sorted(LINE_BREAKS - {"\n", "\x00"})
    sources = [f"ab{'c' * (i % 5)}{breakers[i % len(breakers)]}d" for i in range(200)]
    stdin = "".join(f"{source}\n" for source in sources).encode()
    greedy = output_lines(translate(folder, stdin))
    assert len(greedy) == 200
    assert all(line.strip() == "" and len(line) >= 10 for line in greedy)  # each <0x0A> a space
    sampled = output_lines(translate(folder, stdin, "--sample", "--nbest", "3", "--seed", "1"))
    assert len(sampled) == 200
    fields = [field for line in sampled for field in line.split("\t")]
    assert len(fields) == 600  # three per line: a tab only between them
    assert all(set(field) <= {"a", " "} for field in fields)
    assert sum(field.count(" ") for field in fields) > 1000  # the breakers were drawn


def test_targets_keep_their_spelling_and_references_are_compared_alike(tmp_path: Path) -> None:
    # Targets written decomposed (e + U+0301, as macOS writes them) and with a superscript.
    words = ["cafe", "resume", "m2", "cliche", "creme", "deja vu", "naive", "m3"]
    spelled = ["café", "résumé", "m²", "cliché", "crème", "déjà vu", "naïve", "m³"]
    lines = [
        f"{w}\t{unicodedata.normalize('NFD', t)}\n" for w, t in zip(words, spelled, strict=True)
    ]
    (tmp_path / "train.tsv").write_text("".join(lines * 30), encoding="utf-8")
    (tmp_path / "dev.tsv").write_text("".join(lines), encoding="utf-8")
    result = train(
        "tsv",
        model_config=Seq2SeqConfig(emb_dim=16, enc_hidden=16, enc_layers=1, dec_hidden=32),
        train_config=TrainConfig(epochs=8, batch_size=16, lr=1e-2, warmup_steps=0, progress=False),
        task_options={"train": str(tmp_path / "train.tsv"), "dev": str(tmp_path / "dev.tsv")},
    )
    vocab = result.model.tgt_vocab
    # NFC at most: composed, and m² stays m² (NFKC made it m2 for good).
    assert {"é", "²", "³"} <= set(vocab.symbols) and "\u0301" not in vocab.symbols
    assert vocab.normalization == "NFC"
    outputs = translate_texts(result.model, words)
    assert any(set(output) & {"é", "è", "²", "³"} for output in outputs), outputs
    # Outputs scored against the same strings written decomposed: every one matches.
    decomposed = [(w, unicodedata.normalize("NFD", o)) for w, o in zip(words, outputs, strict=True)]
    for references in (False, True):
        assert evaluate(result.model, decomposed, references=references)["exact_match"] == 1.0


def test_a_lone_carriage_return_stays_in_its_line_and_a_bom_is_dropped(
    model_dir: Path, tmp_path: Path
) -> None:
    # One rule for line ends: \n and \r\n end a line, a lone \r does not (as in TSV files).
    result = translate(model_dir, b"March 5, 1979\rAugust 17, 2031\n3/5/79\n")
    assert len(output_lines(result)) == 2
    plain = output_lines(translate(model_dir, b"3 May 1979\n12.10.21\n"))
    with_bom = translate(model_dir, b"\xef\xbb\xbf3 May 1979\n12.10.21\n")
    assert output_lines(with_bom) == plain
    assert "unknown" not in with_bom.stderr.decode()  # the BOM is not read as <unk>
    path = tmp_path / "in.txt"
    path.write_bytes(b"\xef\xbb\xbf3 May 1979\r\n12.10.21")
    from_file = luong("translate", str(model_dir), "--input", str(path))
    assert output_lines(from_file) == plain and "unknown" not in from_file.stderr.decode()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--beam", "5", "--beta", "1e37"), "--beta: expected at most 10, got 1e+37"),
        (("--beam", "5", "--alpha", "39"), "--alpha: expected at most 5, got 39"),
        (("--beam", "5", "--alpha", "1e308"), "--alpha: expected at most 5, got 1e+308"),
        (("--beam", "1000000000"), "--beam: expected at most 1000, got 1000000000"),
    ],
)
def test_search_options_past_their_bounds_are_usage_errors(
    model_dir: Path, args: tuple[str, ...], needle: str
) -> None:
    result = translate(model_dir, b"March 5, 1979\n" + b"a" * 30 + b"\n", *args)
    assert result.returncode == 2 and result.stdout == b""
    assert_one_line_error(result, needle)


def test_search_never_returns_an_empty_n_best_list(model_dir: Path) -> None:
    model = Seq2Seq.from_pretrained(model_dir)
    for options, message in (
        ({"beta": 1e37}, "beta: expected at most 10"),
        ({"alpha": 39.0}, "alpha: expected at most 5"),
        ({"beam": 10**9}, "beam: expected at most 1000"),
    ):
        with pytest.raises(ValueError, match=message):
            SearchOptions(**{"beam": 5, **options})  # type: ignore[arg-type]
    texts = ["March 5, 1979", "3/5/79", "a" * 30, "Monday, March 5, 1979", "x"]
    # The most extreme penalties allowed, and EOS forbidden until the last step.
    for alpha, beta, min_len in ((5.0, 10.0, 0), (5.0, 0.0, 0), (0.0, 10.0, 0), (5.0, 10.0, 9)):
        options = SearchOptions(
            beam=8, nbest=8, alpha=alpha, beta=beta, min_len=min_len, max_len=10
        )
        lists = decode(model, texts, options)
        for hyps in lists:
            assert len(hyps) == 8
            assert all(math.isfinite(h.score) for h in hyps)
            assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)


def _tampered(model_dir: Path, out: Path, change: dict[str, torch.Tensor]) -> Path:
    """A copy of ``model_dir`` whose weights have ``change`` applied."""
    shutil.copytree(model_dir, out, ignore=shutil.ignore_patterns("checkpoints"))
    tensors = load_file(str(out / "model.safetensors"))
    save_file({**tensors, **change}, str(out / "model.safetensors"))
    return out


@pytest.mark.parametrize(
    ("dtype", "value", "needle"),
    [
        (torch.int64, 1, "has dtype int64, expected float32"),
        (torch.bool, True, "has dtype bool, expected float32"),
        (torch.float64, 0.01, "has dtype float64, expected float32"),
        (torch.float64, 1e300, "has dtype float64, expected float32"),  # inf as float32
        (torch.float8_e4m3fn, 0.5, "has dtype float8_e4m3fn, expected float32"),
    ],
)
def test_weights_of_another_dtype_are_refused(
    model_dir: Path, tmp_path: Path, dtype: torch.dtype, value: object, needle: str
) -> None:
    shape = load_file(str(model_dir / "model.safetensors"))["decoder.out.weight"].shape
    weight = torch.full(shape, value, dtype=torch.float64).to(dtype)  # type: ignore[arg-type]
    folder = _tampered(model_dir, tmp_path / "m", {"decoder.out.weight": weight})
    result = translate(folder, b"3 May 1979\n12.10.21\n")
    assert_one_line_error(result, "model.safetensors: tensor 'decoder.out.weight'", needle)
    assert result.stdout == b""


def test_a_line_break_in_the_vocabulary_is_refused(model_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    shutil.copytree(model_dir, folder, ignore=shutil.ignore_patterns("checkpoints"))
    vocab = json.loads((folder / "tgt_vocab.json").read_text(encoding="utf-8"))
    vocab["symbols"][0] = "\n"  # 3 inputs would have given 9 output lines
    (folder / "tgt_vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    result = translate(folder, b"3 May 1979\n12.10.21\n1.2.3\n")
    assert_one_line_error(result, "tgt_vocab.json: not a vocabulary: symbols[0]: '\\n' holds")
    assert result.stdout == b""


def test_an_edited_vocabulary_is_refused_and_old_folders_still_load(
    model_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "m"
    shutil.copytree(model_dir, folder, ignore=shutil.ignore_patterns("checkpoints"))
    sources = b"3 MAY 1979\n12.10.21\n"
    before = output_lines(translate(folder, sources))
    vocab = json.loads((folder / "src_vocab.json").read_text(encoding="utf-8"))
    (folder / "src_vocab.json").write_text(
        json.dumps({**vocab, "lowercase": True}), encoding="utf-8"
    )
    result = translate(folder, sources)
    assert_one_line_error(
        result,
        f"luong: error: {folder}/src_vocab.json: changed since the model was saved (its SHA-256 "
        "is not the one config.json records)",
    )
    assert result.returncode == 1 and result.stdout == b""
    # A folder written before config.json recorded the hashes loads as it always did.
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    del config["vocab_sha256"]
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "src_vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    assert output_lines(translate(folder, sources)) == before


def test_json_output_holds_no_nan(model_dir: Path, tmp_path: Path) -> None:
    # Finite weights so large that the logits overflow: every score is NaN.
    shape = load_file(str(model_dir / "model.safetensors"))["decoder.out.weight"].shape
    weight = torch.full(shape, 3e38)
    weight[:, ::2] = -3e38  # inf - inf in the output layer
    folder = _tampered(model_dir, tmp_path / "m", {"decoder.out.weight": weight})
    lines = output_lines(translate(folder, b"3 May 1979\n\n12.10.21\n", "--format", "jsonl"))
    assert len(lines) == 3

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")

    records = [json.loads(line, parse_constant=refuse) for line in lines]
    assert records[1] == {"source": "", "hypotheses": []}
    assert [r["hypotheses"][0]["score"] for r in (records[0], records[2])] == [None, None]


@pytest.mark.parametrize(
    ("long_side", "needle"),
    [
        (
            0,
            "train_pairs: 1 sources are longer than the model's max_src_len=30 symbols (the "
            "longest has 200000; the first is pair 201); raise max_src_len (--max-src-len 200000)",
        ),
        (
            1,
            "train_pairs: 1 targets are longer than the longest output allowed=71 symbols (the "
            "longest has 200000; the first is pair 201); raise max_src_len (--max-src-len 99995)",
        ),
    ],
)
def test_one_long_training_line_stops_before_any_padding(
    tmp_path: Path, long_side: int, needle: str
) -> None:
    # 211 KB of pairs, one of them 200,000 symbols long: padding every row to it took 3 GB.
    pair = ["3 May 1979", "1979-05-03"]
    pair[long_side] = "x" * 200_000
    lines = ["3 May 1979\t1979-05-03\n"] * 400
    lines.insert(200, "\t".join(pair) + "\n")
    train_file = tmp_path / "train.tsv"
    train_file.write_text("".join(lines), encoding="utf-8")
    (tmp_path / "dev.tsv").write_text("".join(lines[:5]), encoding="utf-8")
    args = ["train", "--train", str(train_file), "--dev", str(tmp_path / "dev.tsv")]
    tiny = ["--max-src-len", "30", "--emb-dim", "8", "--enc-hidden", "8", "--dec-hidden", "16"]
    result = luong_limited(500 * 2**20, *args, "--out", str(tmp_path / "run"), *tiny)
    assert_one_line_error(result, needle)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("emb_dim", 16_384, "model.safetensors: tensor 'encoder.embedding.weight' has shape"),
        ("enc_layers", 64, "holds 1 encoder layers, the config expects enc_layers = 64"),
        # Past the bounds of Seq2SeqConfig: refused as a config, the weights unread.
        ("emb_dim", 800_000, "config.json: not a valid model config: emb_dim: expected at most"),
        ("enc_layers", 10_000, "config.json: not a valid model config: enc_layers: expected at"),
    ],
)
def test_a_tampered_config_is_refused_before_the_model_is_built(
    model_dir: Path, tmp_path: Path, field: str, value: int, needle: str
) -> None:
    # emb_dim = 800000 took 2.8 GB before the shape error; 10,000 layers built for minutes.
    folder = tmp_path / "m"
    shutil.copytree(model_dir, folder, ignore=shutil.ignore_patterns("checkpoints"))
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config["model"][field] = value
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    result = luong_limited(300 * 2**20, "translate", str(folder), stdin=b"3 May 1979\n")
    assert_one_line_error(result, needle)
    assert result.stdout == b""


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--emb-dim", "100000000000"], "emb_dim: expected at most 16384, got 100000000000"),
        (
            ["--attention", "location", "--max-src-len", "1000000000"],
            "max_src_len: expected at most 1048576, got 1000000000",
        ),
        (["--enc-layers", "100000"], "enc_layers: expected at most 64, got 100000"),
        (
            ["--enc-hidden", "16384", "--enc-layers", "64", "--attention", "general"],
            # Each size within its bound, together 306 billion parameters.
            "model: 306,048,018,308 parameters with vocabularies of the 4 specials, above the "
            "limit of 4,000,000,000 (16 GB of float32 weights); 306,035,294,208 of them in the "
            "encoder (enc_hidden 16384, enc_layers 64)",
        ),
    ],
    ids=["emb-dim", "location", "enc-layers", "together"],
)
def test_sizes_that_cannot_be_allocated_are_one_line(
    tmp_path: Path, flags: list[str], message: str
) -> None:
    # They ended in a torch allocator traceback, or built layers for minutes; now the config
    # refuses them before any data is read or any tensor allocated.
    out = tmp_path / "run"
    result = luong_limited(200 * 2**20, "train", "dates", "--out", str(out), *flags)
    assert_one_line_error(result, f"luong: error: {message}")
    assert result.returncode == 1 and not out.exists()


@pytest.mark.parametrize("command", ["translate", "train", "eval"])
def test_dev_zero_as_input_stops_at_the_line_limit(
    model_dir: Path, tmp_path: Path, command: str
) -> None:
    # An endless line: read until memory ran out.
    dev = tmp_path / "dev.tsv"
    dev.write_text("3 May 1979\t1979-05-03\n")
    args = {
        "translate": ["translate", str(model_dir), "--input", "/dev/zero"],
        "train": ["train", "--train", "/dev/zero", "--dev", str(dev), "--out", str(tmp_path / "r")],
        "eval": ["eval", str(model_dir), "--data", "/dev/zero"],
    }[command]
    result = luong_limited(500 * 2**20, *args)
    assert_one_line_error(result, "/dev/zero:1: line longer than 1048576 bytes")
    assert result.stdout == b""


def test_a_huge_sparse_vocabulary_is_refused_unread(model_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "m"
    shutil.copytree(model_dir, folder, ignore=shutil.ignore_patterns("checkpoints"))
    with open(folder / "src_vocab.json", "r+b") as file:
        file.truncate(50 * 2**30)  # 50 GB, nearly all of it a hole
    result = luong_limited(500 * 2**20, "translate", str(folder), stdin=b"3 May 1979\n")
    assert_one_line_error(
        result, "src_vocab.json: 53687091200 bytes, above the limit of 67108864 bytes"
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("plot", "MODEL", "3 May 1979", "--dpi", "5000"), "--dpi: expected between 1 and 1200"),
        (("plot-scores", "--length", "100000000"), "--length: expected between 1 and 1000"),
    ],
)
def test_absurd_plot_options_are_usage_errors(
    model_dir: Path, tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    args = tuple(str(model_dir) if a == "MODEL" else a for a in args)
    result = luong_limited(500 * 2**20, *args, "--out", str(tmp_path / "out.png"))
    assert result.returncode == 2
    assert_one_line_error(result, needle)
    assert not (tmp_path / "out.png").exists()


def test_a_figure_above_the_pixel_limit_is_refused(tmp_path: Path) -> None:
    # In a child under a memory limit: without the check, Agg allocates 3.6 GB for it.
    code = f"""
import torch
path = {str(tmp_path / "a.png")!r}
try:
    luong.evaluation.plot.plot_attention(
        ["a"], ["b"], torch.ones(1, 1), path, size=(30, 30), dpi=1000
    )
except ValueError as error:
    print(error)
"""
    result = python_limited(500 * 2**20, code)
    assert result.returncode == 0, result.stderr.decode()
    assert "dpi: 1000 gives a 30000 x 30000 pixel figure, above the limit" in result.stdout.decode()
    assert not (tmp_path / "a.png").exists()


def test_translate_streams_its_outputs_in_bounded_memory(model_dir: Path) -> None:
    # 100,000 lines: every hypothesis and its attention were kept to the end (+520 MB here,
    # 830 MB for 200,000 lines of the dates model); now one window of outputs is.
    dates = ["3 May 1979", "12.10.21", "", "August 17, 2031", "Monday, March 5, 1979"]
    lines = [dates[i % 5] if i % 7 else f"{i % 28 + 1} May {1950 + i % 80}" for i in range(100_000)]
    stdin = "".join(line + "\n" for line in lines).encode()
    outputs = output_lines(luong_limited(250 * 2**20, "translate", str(model_dir), stdin=stdin))
    assert len(outputs) == len(lines)
    alone = output_lines(translate(model_dir, "\n".join(lines[:8]).encode()))
    assert outputs[:8] == alone and outputs[2] == "" and outputs[-1] == alone[4]
