"""Tests for luong.data.vocab: ids, normalisation, encode/decode, JSON round trips, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from luong.data.vocab import Vocab, one_line


@pytest.fixture
def chars() -> Vocab:
    return Vocab(["a", "b", "c", " "])


@pytest.fixture
def words() -> Vocab:
    return Vocab(["the", "cat", "sat"], tokens="space")


# Specials and ids.


def test_specials_have_fixed_ids() -> None:
    assert (Vocab.PAD, Vocab.BOS, Vocab.EOS, Vocab.UNK) == ("<pad>", "<s>", "</s>", "<unk>")
    assert (Vocab.pad_id, Vocab.bos_id, Vocab.eos_id, Vocab.unk_id) == (0, 1, 2, 3)
    vocab = Vocab(["x"])
    for special, index in zip(Vocab.SPECIALS, range(4), strict=True):
        assert vocab.id(special) == index
        assert vocab.symbol(index) == special
        assert special in vocab


def test_symbols_get_ids_from_four_in_order(chars: Vocab) -> None:
    assert len(chars) == 8
    assert [chars.id(s) for s in "abc "] == [4, 5, 6, 7]
    assert [chars.symbol(i) for i in range(4, 8)] == ["a", "b", "c", " "]
    assert chars.symbols == ("a", "b", "c", " ")
    assert "a" in chars and "z" not in chars and 4 not in chars


def test_empty_vocab_has_only_specials() -> None:
    vocab = Vocab([])
    assert len(vocab) == 4
    assert vocab.encode("abc") == [3, 3, 3, 2]


@pytest.mark.parametrize(
    ("symbols", "tokens", "message"),
    [
        (["a", "b", "a"], "char", r"symbols\[2\]: duplicate symbol 'a' \(already symbols\[0\]\)"),
        (["a", "</s>"], "space", r"symbols\[1\]: '</s>' is a special"),
        (["<unk>"], "space", r"symbols\[0\]: '<unk>' is a special"),
        (["ab"], "char", r"symbols\[0\]: expected one character in char mode, got 'ab'"),
        ([""], "char", "expected one character"),
        (["a b"], "space", r"symbols\[0\]: expected a non-empty token without whitespace"),
        ([""], "space", "non-empty token"),
        (["a"], "word", "tokens: expected one of char, space, got 'word'"),
    ],
)
def test_constructor_rejects_bad_symbols(symbols: list[str], tokens: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Vocab(symbols, tokens=tokens)  # type: ignore[arg-type]


def test_constructor_type_errors() -> None:
    with pytest.raises(TypeError, match="symbols: expected a sequence of strings, got a single"):
        Vocab("abc")
    with pytest.raises(TypeError, match=r"symbols\[1\]: expected a str, got int"):
        Vocab(["a", 1])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="lowercase: expected a bool, got int"):
        Vocab(["a"], lowercase=1)  # type: ignore[arg-type]


def test_lookup_errors(chars: Vocab) -> None:
    with pytest.raises(ValueError, match=r"symbol: 'z' is not in the vocabulary \(V = 8\)"):
        chars.id("z")
    with pytest.raises(ValueError, match=r"id: expected an id in \[0, 8\), got 8"):
        chars.symbol(8)
    with pytest.raises(ValueError, match=r"expected an id in \[0, 8\), got -1"):
        chars.symbol(-1)
    with pytest.raises(TypeError, match="id: expected an int id, got float"):
        chars.symbol(1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="id: expected an int id, got bool"):
        chars.symbol(True)
    with pytest.raises(TypeError, match="symbol: expected a str, got int"):
        chars.id(4)  # type: ignore[arg-type]


# Building.


def test_build_orders_by_count_then_symbol() -> None:
    vocab = Vocab.build(["banana", "cab"])
    # a: 4, b: 2, n: 2, c: 1 -> ties broken by code point.
    assert vocab.symbols == ("a", "b", "n", "c")
    assert Vocab.build(["cab", "banana"]) == vocab
    assert Vocab.build(iter(["banana", "cab"])) == vocab  # any iterable


def test_build_min_count_and_space_mode() -> None:
    vocab = Vocab.build(["the cat sat", "the  dog\tsat", "a <s> </s>"], "space", min_count=2)
    assert vocab.symbols == ("sat", "the")
    assert vocab.tokens == "space"
    everything = Vocab.build(["the cat sat", "a <s> </s>"], "space")
    assert "<s>" not in everything.symbols  # specials spelled in the text stay unknown
    assert everything.symbols == ("a", "cat", "sat", "the")


def test_build_lowercase_merges_cases() -> None:
    vocab = Vocab.build(["AaB"], lowercase=True)
    assert vocab.symbols == ("a", "b")
    assert vocab.lowercase
    assert vocab.encode("AB") == [4, 5, 2]


def test_build_validation() -> None:
    with pytest.raises(TypeError, match="texts: expected an iterable of strings, got a single"):
        Vocab.build("abc")
    with pytest.raises(TypeError, match=r"texts\[1\]: expected a str, got bytes"):
        Vocab.build(["ab", b"cd"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="min_count: expected an int >= 1, got 0"):
        Vocab.build(["ab"], min_count=0)
    with pytest.raises(ValueError, match="tokens: expected one of char, space"):
        Vocab.build(["ab"], tokens="bpe")  # type: ignore[arg-type]


# Normalisation and tokens.


def test_normalize_is_nfkc_then_lowercase() -> None:
    plain = Vocab([])
    assert plain.normalize("ﬁ\u00a0１９７９") == "fi 1979"  # ligature, no-break space, wide digits
    assert plain.normalize("e\u0301") == "é"  # composed
    assert plain.normalize("Mar") == "Mar"
    assert Vocab([], lowercase=True).normalize("MÄRZ") == "märz"


def test_tokenize_char_and_space() -> None:
    assert Vocab([]).tokenize("Mar 5") == ["M", "a", "r", " ", "5"]
    assert Vocab([], "space").tokenize("  K  AE1\tT \n") == ["K", "AE1", "T"]


def test_text_type_is_checked(chars: Vocab) -> None:
    with pytest.raises(TypeError, match="text: expected a str, got list"):
        chars.encode(["a"])  # type: ignore[arg-type]


# Encode and decode.


def test_encode_bos_eos_and_unknowns(chars: Vocab) -> None:
    assert chars.encode("ab") == [4, 5, 2]
    assert chars.encode("ab", bos=True) == [1, 4, 5, 2]
    assert chars.encode("ab", eos=False) == [4, 5]
    assert chars.encode("") == [2]
    assert chars.encode("aXb🙂") == [4, 3, 5, 3, 2]
    assert chars.unknown("aXb🙂X") == ["X", "🙂", "X"]
    assert chars.unknown("abc") == []


def test_specials_in_text_are_unknown(words: Vocab) -> None:
    assert words.encode("the </s> cat <pad>") == [4, 3, 5, 3, 2]
    assert words.unknown("the </s> cat") == ["</s>"]


def test_decode_stops_at_eos_and_drops_pad_and_bos(chars: Vocab) -> None:
    assert chars.decode([1, 4, 0, 5, 3, 2, 6, 6]) == "ab<unk>"
    assert chars.symbols_of([1, 4, 0, 5, 3, 2, 6]) == ["a", "b", "<unk>"]
    assert chars.decode([]) == ""
    assert chars.decode([2, 4]) == ""
    assert chars.decode([1, 4, 0, 2, 5], strip=False) == "<s>a<pad></s>b"
    assert chars.symbols_of([4, 2, 5], strip=False) == ["a", "</s>", "b"]


def test_decode_space_mode_joins_with_spaces(words: Vocab) -> None:
    assert words.decode([4, 3, 6, 2, 5]) == "the <unk> sat"


def test_decode_accepts_numpy_and_torch_ints(chars: Vocab) -> None:
    assert chars.decode(np.array([4, 5, 2])) == "ab"
    assert chars.decode(torch.tensor([4, 6, 2])) == "ac"  # 0-d integer tensors have __index__
    assert chars.decode(torch.tensor([4, 6, 2]).tolist()) == "ac"


def test_decode_rejects_bad_ids(chars: Vocab) -> None:
    with pytest.raises(ValueError, match=r"ids\[1\]: expected an id in \[0, 8\), got 99"):
        chars.decode([4, 99])
    with pytest.raises(TypeError, match=r"ids\[0\]: expected an int id, got float"):
        chars.decode([4.0])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"ids\[0\]: expected an int id, got Tensor"):
        chars.decode(torch.tensor([4.0]))


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.text(max_size=20), min_size=1, max_size=5),
    tokens=st.sampled_from(["char", "space"]),
    lowercase=st.booleans(),
)
def test_decode_inverts_encode_on_known_text(
    texts: list[str], tokens: str, lowercase: bool
) -> None:
    vocab = Vocab.build(texts, tokens, lowercase)  # type: ignore[arg-type]
    for text in texts:
        tokens_of = vocab.tokenize(text)
        if any(token in Vocab.SPECIALS for token in tokens_of):
            continue
        if any(len(f"a{token}b".splitlines()) > 1 or "\t" in token for token in tokens_of):
            continue  # tabs and line breaks are never symbols: they stay unknown
        ids = vocab.encode(text, bos=True)
        assert vocab.unknown(text) == []
        assert Vocab.unk_id not in ids
        assert vocab.symbols_of(ids) == tokens_of
        separator = "" if tokens == "char" else " "
        assert vocab.decode(ids) == one_line(separator.join(tokens_of))  # a NUL: a space


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=30))
def test_encode_never_fails_and_counts_unknowns(text: str) -> None:
    vocab = Vocab(list("abc "))
    ids = vocab.encode(text)
    assert ids[-1] == Vocab.eos_id
    assert ids.count(Vocab.unk_id) == len(vocab.unknown(text))
    assert len(ids) == len(vocab.tokenize(text)) + 1


# Equality and JSON.


def test_equality() -> None:
    assert Vocab(["a", "b"]) == Vocab(["a", "b"])
    assert Vocab(["a", "b"]) != Vocab(["b", "a"])
    assert Vocab(["a"]) != Vocab(["a"], tokens="space")
    assert Vocab(["a"]) != Vocab(["a"], lowercase=True)
    assert Vocab(["a"]) != ["a"]


def test_json_round_trip() -> None:
    vocab = Vocab(["März", "août"], tokens="space", lowercase=True)
    data = vocab.to_json()
    assert data == {
        "tokens": "space",
        "lowercase": True,
        "symbols": ["März", "août"],
        "specials": ["<pad>", "<s>", "</s>", "<unk>"],
    }
    assert Vocab.from_json(json.loads(json.dumps(data))) == vocab


def test_save_and_load_utf8(tmp_path: Path) -> None:
    vocab = Vocab.build(["5 März 1979", "5 août 1979"])
    path = tmp_path / "vocab.json"
    vocab.save(path)
    raw = path.read_bytes()
    assert "ä".encode() in raw and b"\\u00e4" not in raw  # ensure_ascii=False
    assert Vocab.load(path) == vocab
    assert Vocab.load(str(path)) == vocab


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"{not json", r"not valid JSON \(Expecting property name"),
        (b"\xff\xfe{}", r"not UTF-8 \(byte 0"),
        (b"[1, 2]", "not a vocabulary: expected a JSON object, got list"),
        (b'{"tokens": "char", "lowercase": false}', "missing field\\(s\\) symbols, specials"),
        (
            b'{"tokens": "char", "lowercase": false, "symbols": [], "specials": '
            b'["<pad>", "<s>", "</s>", "<unk>"], "size": 4}',
            r"unknown field\(s\) size",
        ),
        (
            b'{"tokens": "char", "lowercase": false, "symbols": [], '
            b'"specials": ["<pad>", "<bos>", "<eos>", "<unk>"]}',
            "specials: expected",
        ),
        (
            b'{"tokens": "char", "lowercase": false, "symbols": ["a", "a"], '
            b'"specials": ["<pad>", "<s>", "</s>", "<unk>"]}',
            r"symbols\[1\]: duplicate symbol 'a'",
        ),
        (
            b'{"tokens": "char", "lowercase": false, "symbols": ["a", 7], '
            b'"specials": ["<pad>", "<s>", "</s>", "<unk>"]}',
            r"symbols\[1\]: expected a str, got int",
        ),
        (
            b'{"tokens": "char", "lowercase": "no", "symbols": [], '
            b'"specials": ["<pad>", "<s>", "</s>", "<unk>"]}',
            "lowercase: expected true or false",
        ),
        (
            b'{"tokens": "bpe", "lowercase": false, "symbols": [], '
            b'"specials": ["<pad>", "<s>", "</s>", "<unk>"]}',
            "tokens: expected one of char, space, got 'bpe'",
        ),
        (
            b'{"tokens": "char", "lowercase": false, "symbols": "abc", '
            b'"specials": ["<pad>", "<s>", "</s>", "<unk>"]}',
            "symbols: expected a list of strings, got str",
        ),
    ],
)
def test_load_malformed_file_names_file_and_problem(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=f"broken.json: .*{problem}") as info:
        Vocab.load(path)
    assert str(path) in str(info.value)


def test_load_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Vocab.load(tmp_path / "absent.json")


def test_target_normalisation_nfc_round_trips_and_old_files_read_nfkc() -> None:
    nfc = Vocab.build(["m²", "cafe\u0301"], normalization="NFC")
    assert "²" in nfc and "é" in nfc and "\u0301" not in nfc
    assert nfc.to_json()["normalization"] == "NFC"
    assert Vocab.from_json(json.loads(json.dumps(nfc.to_json()))) == nfc
    assert nfc != Vocab(nfc.symbols)  # the same symbols, read another way
    old = Vocab.from_json(Vocab(["a"]).to_json())  # no field: written before it existed
    assert old.normalization == "NFKC" and old.normalize("m²") == "m2"
    with pytest.raises(ValueError, match="normalization: expected one of NFKC, NFC, got 'NFD'"):
        Vocab(["a"], normalization="NFD")  # type: ignore[arg-type]


def test_outputs_never_hold_a_line_break_a_tab_or_a_nul() -> None:
    # A NUL symbol (allowed, as before), or a source's tab or U+2028 copied in place of an
    # unknown (translate --replace-unk), is written as a space.
    vocab = Vocab(["a", "\x00"])
    assert vocab.decode([4, 5, 4, 2]) == "a a"
    assert vocab.join(["a", "\t", "\u2028", "\x1c", "\r\n", "b"]) == "a" + " " * 5 + "b"
    assert Vocab(["a"], tokens="space").join(["a", "\x85", "a"]) == "a   a"
    assert one_line("no break") == "no break"
    with pytest.raises(TypeError, match="text: expected a str, got bytes"):
        one_line(b"a\nb")  # type: ignore[arg-type]


def test_tabs_and_line_breaks_are_never_symbols() -> None:
    vocab = Vocab.build(["a\tb\nc\rd\u2028e"])
    assert vocab.symbols == ("a", "b", "c", "d", "e")
    assert vocab.unknown("a\tb") == ["\t"]
    for symbol in ("\n", "\r", "\t", "x\u2029", "\x1e"):
        with pytest.raises(ValueError, match=r"symbols\[1\]: .* holds a tab or a line break"):
            Vocab(["a", symbol], tokens="char" if len(symbol) == 1 else "space")
