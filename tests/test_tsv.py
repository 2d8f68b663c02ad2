"""Tests for luong.tasks.tsv: the strict reader, several references, and scoring."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import pytest

from luong.evaluation.evaluate import group_references
from luong.evaluation.metrics import reference_scores
from luong.tasks import OWN_DATA, load_task
from luong.tasks.tsv import BadLine, PairStream, Split, load, parse_pairs, read_pairs, read_split

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
        (
            b"a\tb\nOpen\x00file\tDatei\n",
            "f.tsv:2: a NUL byte (byte 5 of the line); expected text, not binary data",
        ),
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


# The stream: read_split's pairs, bad lines and messages, a line at a time.

STREAM_CASES = {
    "good": (b"\xef\xbb\xbfa\tb\r\nc d\te\nf\tg", None),
    "bad lines": (b"a\tb\nx\ny\nc\td\n\xff\tz\ne\t\n", None),
    "one bad line": (b"a\tb\nno tab\nc\td\n", None),
    "no pairs": (b"junk\n\n", None),
    "empty": (b"", None),
    "parallel good": (b"a\nc d\r\nf", b"b\ne\ng\n"),
    "parallel bad": (b"a\n \nc\n\nx\n", b"b\n\xff\nd\n\ne\n"),
    "parallel lengths": (b"a\nb\nc\n", b"A\nB\n"),
    "parallel lengths and bad": (b"a\n\nc\n", b"A\nB\nC\nD\n"),
    "parallel no pairs": (b"\n", b" \n"),
}


def write_split(folder: Path, case: str, gz: bool) -> Split:
    first, second = STREAM_CASES[case]
    suffix = ".gz" if gz else ""
    for name, raw in (("a", first), ("b", second)):
        if raw is not None:
            (folder / f"{name}{suffix}").write_bytes(gzip.compress(raw) if gz else raw)
    return (
        str(folder / f"a{suffix}")
        if second is None
        else [str(folder / f"a{suffix}"), str(folder / f"b{suffix}")]
    )


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("case", sorted(STREAM_CASES))
def test_the_stream_gives_read_splits_pairs_skipped_lines_and_errors(
    tmp_path: Path, case: str, skip: bool, gz: bool
) -> None:
    path = write_split(tmp_path, case, gz)
    stream = PairStream(path, skip_bad_lines=skip)
    try:
        read = read_split(path, skip_bad_lines=skip)
    except ValueError as error:
        with pytest.raises(ValueError) as streamed:
            list(stream)
        assert str(streamed.value) == str(error)
        return
    assert stream.skipped == []  # before a pass
    assert list(stream) == read.pairs
    assert stream.skipped == read.skipped and stream.name == read.name
    assert list(stream) == read.pairs  # again: the files are opened again
    assert list(stream.sources()) == [s for s, _ in read.pairs]
    assert list(stream.targets()) == [t for _, t in read.pairs]


def test_the_stream_pins_the_messages_of_bad_files(tmp_path: Path) -> None:
    cases = {
        "bad lines": f"{tmp_path}/a:2: expected exactly one tab between source and target, "
        "found no tab (4 bad lines in this file; --skip-bad-lines skips them)",
        "parallel bad": f"{tmp_path}/a:2: empty source in {tmp_path}/a (--skip-bad-lines "
        "skips such lines)",
        "parallel lengths": f"{tmp_path}/a has 3 lines and {tmp_path}/b has 2; expected "
        "line-aligned files, a source line and its target line each",
        "parallel lengths and bad": f"{tmp_path}/a has 3 lines and {tmp_path}/b has 4; "
        "expected line-aligned files, a source line and its target line each",
        "no pairs": f"{tmp_path}/a: no pairs (2 bad lines skipped); expected lines of "
        "source<TAB>target",
    }
    for case, message in cases.items():
        path = write_split(tmp_path, case, gz=False)
        with pytest.raises(ValueError) as error:
            list(PairStream(path, skip_bad_lines=case == "no pairs"))
        assert str(error.value) == message, case
    path = write_split(tmp_path, "parallel bad", gz=False)
    stream = PairStream(path, skip_bad_lines=True)
    assert list(stream) == [("a", "b"), ("c", "d"), ("x", "e")]
    assert stream.skipped == [
        BadLine(2, f"empty source in {tmp_path}/a"),
        BadLine(2, f"not valid UTF-8 in {tmp_path}/b"),
        BadLine(4, f"empty source in {tmp_path}/a"),
        BadLine(4, f"empty target in {tmp_path}/b"),
    ]


def test_the_stream_reads_a_line_at_a_time(tmp_path: Path) -> None:
    raw = gzip.compress(b"".join(b"abc%d\tcba\n" % i for i in range(20_000)))
    (tmp_path / "cut.tsv.gz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="cut.tsv.gz: not a complete .gz file"):
        read_split(tmp_path / "cut.tsv.gz")
    # The first pairs come before the end of the file is reached.
    first = list(itertools.islice(PairStream(tmp_path / "cut.tsv.gz"), 3))
    assert first == [("abc0", "cba"), ("abc1", "cba"), ("abc2", "cba")]
    # A bad line stops the pairs (they would be thrown away), not the reading.
    (tmp_path / "bad.tsv").write_bytes(b"a\tb\nc\td\nbad\ne\tf\n")
    seen = []
    with pytest.raises(ValueError, match="bad.tsv:3: expected exactly one tab"):
        for pair in PairStream(tmp_path / "bad.tsv"):
            seen.append(pair)
    assert seen == [("a", "b"), ("c", "d")]


def test_the_stream_checks_its_paths(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"expected a TSV file or \[source, target\] files, got"):
        PairStream(["a", "b", "c"])
    with pytest.raises(TypeError, match="path: expected a str or a path, got int"):
        PairStream(3)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="nope.tsv: no such file"):
        list(PairStream(tmp_path / "nope.tsv"))


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
