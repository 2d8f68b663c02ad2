"""Tests for luong.tasks.tsv: the strict reader, several references, and scoring."""

from __future__ import annotations

from pathlib import Path

import pytest

from luong.evaluation import group_references
from luong.metrics import reference_scores
from luong.tasks import OWN_DATA, load_task
from luong.tasks.tsv import BadLine, load, parse_pairs, read_pairs

# The reader.


def test_reads_pairs_in_order() -> None:
    read = parse_pairs(b"cat\tK AE T\nread\tR EH D\nread\tR IY D\n", "a.tsv")
    assert read.pairs == [("cat", "K AE T"), ("read", "R EH D"), ("read", "R IY D")]
    assert read.skipped == [] and read.name == "a.tsv"


@pytest.mark.parametrize(
    "raw",
    [
        b"a\tb\r\nc\td\r\n",  # Windows line endings
        b"a\tb\nc\td",  # no final newline
        b"a\tb\r\nc\td",
        b"\xef\xbb\xbfa\tb\nc\td\n",  # a UTF-8 byte-order mark
    ],
)
def test_line_endings_and_bom_are_fine(raw: bytes) -> None:
    assert parse_pairs(raw, "f").pairs == [("a", "b"), ("c", "d")]


def test_keeps_inner_spaces_and_unicode() -> None:
    raw = "Straße 1\tS T R AA S AH\n  x\ty \n".encode()
    assert parse_pairs(raw, "f").pairs == [("Straße 1", "S T R AA S AH"), ("  x", "y ")]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            b"a\tb\nno tab here\n",
            "f.tsv:2: expected exactly one tab between source and target, found no tab",
        ),
        (
            b"a\tb\nc\td\te\n",
            "f.tsv:2: expected exactly one tab between source and target, found 2 tabs",
        ),
        (b"a\tb\n\tb\n", "f.tsv:2: empty source"),
        (b"a\tb\nc\t\n", "f.tsv:2: empty target"),
        (b"a\tb\nc\t  \r\n", "f.tsv:2: empty target"),
        (b"a\tb\n \tb\n", "f.tsv:2: empty source"),
        (b"a\tb\n\nc\td\n", "f.tsv:2: empty line"),
        (b"a\tb\nc\td\ne\t\xff\n", "f.tsv:3: not valid UTF-8 (byte 3 of the line: b'\\xff'"),
        (b"\xc3\tb\n", "f.tsv:1: not valid UTF-8"),
    ],
)
def test_each_bad_line_kind_names_file_and_line(raw: bytes, message: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_pairs(raw, "f.tsv")
    assert str(error.value).startswith(message)
    assert "--skip-bad-lines" in str(error.value)


def test_the_first_bad_line_is_reported_with_the_count() -> None:
    raw = b"a\tb\nx\ny\nc\td\n\xff\tz\n"
    with pytest.raises(ValueError, match=r"^f:2: .*\(3 bad lines in this file; --skip-bad-lines"):
        parse_pairs(raw, "f")


def test_skip_bad_lines_keeps_the_good_ones_and_lists_the_bad() -> None:
    raw = b"a\tb\nx\nc\t\n\xff\tz\nd\te\n"
    read = parse_pairs(raw, "f", skip_bad_lines=True)
    assert read.pairs == [("a", "b"), ("d", "e")]
    assert [bad.line for bad in read.skipped] == [2, 3, 4]
    assert isinstance(read.skipped[0], BadLine) and "tab" in read.skipped[0].problem


@pytest.mark.parametrize("skip", [False, True])
def test_a_file_without_pairs_is_an_error(skip: bool) -> None:
    with pytest.raises(ValueError, match="^f: no pairs"):
        parse_pairs(b"", "f", skip_bad_lines=skip)
    with pytest.raises(ValueError, match="^f: no pairs .1 bad lines skipped" if skip else "f:1:"):
        parse_pairs(b"junk\n", "f", skip_bad_lines=skip)


def test_parse_pairs_wants_bytes() -> None:
    with pytest.raises(TypeError, match="raw: expected bytes, got str"):
        parse_pairs("a\tb", "f")  # type: ignore[arg-type]


def test_read_pairs_names_missing_files_and_directories(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.tsv: no such file"):
        read_pairs(tmp_path / "nope.tsv")
    with pytest.raises(ValueError, match="is a directory"):
        read_pairs(tmp_path)
    (tmp_path / "bad.tsv").write_bytes(b"a\tb\nc d\n")
    with pytest.raises(ValueError, match=f"^{tmp_path / 'bad.tsv'}:2: expected exactly one tab"):
        read_pairs(tmp_path / "bad.tsv")


def test_load_reads_every_file_before_training(tmp_path: Path) -> None:
    (tmp_path / "train.tsv").write_bytes(b"a b\tA\nc\tC\n")
    (tmp_path / "dev.tsv").write_bytes(b"a\tA\r\n")
    (tmp_path / "test.tsv").write_bytes(b"a\tA\nbad\n")
    with pytest.raises(ValueError, match="test.tsv:2:"):
        load(tmp_path / "train.tsv", tmp_path / "dev.tsv", tmp_path / "test.tsv")
    data = load(
        tmp_path / "train.tsv",
        tmp_path / "dev.tsv",
        tmp_path / "test.tsv",
        src_tokens="space",
        skip_bad_lines=True,
    )
    assert data.train == [("a b", "A"), ("c", "C")] and data.test == [("a", "A")]
    assert (data.src_tokens, data.tgt_tokens, data.lowercase) == ("space", "char", False)
    assert data.info["skipped_lines"] == {str(tmp_path / "test.tsv"): 1}
    same = load_task(
        OWN_DATA, train=tmp_path / "train.tsv", dev=tmp_path / "dev.tsv", src_tokens="space"
    )
    assert same.train == data.train and same.test == []
    with pytest.raises(ValueError, match="tgt_tokens: expected one of char, space, got 'bpe'"):
        load(tmp_path / "train.tsv", tmp_path / "dev.tsv", tgt_tokens="bpe")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"tsv: unknown options \['lowercase'\]"):
        load_task(OWN_DATA, train="a", dev="b", lowercase=True)
    with pytest.raises(ValueError, match=r"missing \['dev'\]"):
        load_task(OWN_DATA, train="a")


# Several references.


def test_group_references_counts_each_source_once() -> None:
    pairs = [("read", "R EH D"), ("cat", "K AE T"), ("read", "R IY D"), ("read", "R EH D")]
    assert group_references(pairs) == [("read", ["R EH D", "R IY D"]), ("cat", ["K AE T"])]


def test_reference_scores_right_if_any_reference_matches() -> None:
    scores = reference_scores(
        ["R IY D", "K AE D", "T AH M EY T OW"],
        [["R EH D", "R IY D"], ["K AE T"], ["T AH M EY T OW", "T AH M AA T OW"]],
    )
    assert scores["sources"] == 3 and scores["word_errors"] == 1
    assert scores["wer"] == pytest.approx(1 / 3) and scores["exact_match"] == pytest.approx(2 / 3)
    # one substitution against "K AE T"; the matched words count their references' length
    assert (scores["token_errors"], scores["tokens"]) == (1, 3 + 3 + 6)
    assert scores["per"] == pytest.approx(1 / 12)


def test_reference_scores_per_uses_the_closest_reference() -> None:
    scores = reference_scores(["AH B K"], [["X Y Z W V", "AH B"]])
    assert (scores["token_errors"], scores["tokens"]) == (1, 2)


def test_reference_scores_in_char_mode_count_characters() -> None:
    scores = reference_scores(["1979-03-05", "2000-01-0"], [["1979-03-05"], ["2000-01-01"]], "char")
    assert scores["wer"] == 0.5 and (scores["token_errors"], scores["tokens"]) == (1, 20)


def test_reference_scores_validate() -> None:
    with pytest.raises(ValueError, match="tokens: expected one of char, space, got 'word'"):
        reference_scores(["a"], [["a"]], "word")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="expected as many outputs as words, got 2 and 1"):
        reference_scores(["a", "b"], [["a"]])
    with pytest.raises(ValueError, match=r"refs\[0\]: expected at least one reference"):
        reference_scores(["a"], [[]])
    with pytest.raises(TypeError, match="got a single str"):
        reference_scores("a", [["a"]])
