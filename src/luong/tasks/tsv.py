"""Your own data: tab-separated ``source<TAB>target`` files.

One pair per line, UTF-8 (a file whose name ends in ``.gz`` or ``.xz`` is read through gzip
or lzma, a line at a time: ``open_data``), lines cut as ``luong.common.files.iter_lines`` cuts every
input: Windows line endings (``\\r\\n``), a UTF-8 byte-order mark on the first line and a
missing final newline are all fine, and a lone ``\\r`` is part of its line::

    cat<TAB>K AE T
    read<TAB>R EH D
    read<TAB>R IY D          # the same source again: a second reference

Reading is strict. A line without exactly one tab, with an empty (or whitespace-only) side, or
with bytes that are not UTF-8 raises ``ValueError("FILE:LINE: what is wrong")`` before any
training; with ``skip_bad_lines`` such lines are left out and counted instead.

``read_split`` (``read_pairs``, ``read_parallel``) returns a whole split as a list;
``PairStream`` gives the same pairs, checks and messages a line at a time, again at every
pass, for a corpus that is not to be held (``luong prepare``). Both go through the same
line-level code.

Several references. A source may appear on several lines with different targets (a word with
two pronunciations). Training sees every pair; scoring counts each unique source once, right
when its output equals any of its references (``luong.evaluation.evaluate``).
"""

from __future__ import annotations

import gzip
import io
import itertools
import lzma
import math
import os
import random
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import iter_lines, nul_problem
from luong.data.vocab import TOKENS, Tokens
from luong.tasks.data import TaskData

__all__ = [
    "BadLine",
    "PairFile",
    "PairStream",
    "Split",
    "check_mix_ratio",
    "load",
    "mix_pairs",
    "open_data",
    "parse_pairs",
    "parse_parallel",
    "read_pairs",
    "read_parallel",
    "read_split",
]

Pair = tuple[str, str]


@dataclass(frozen=True)
class BadLine:
    """A line that is not a pair: its 1-based number and what is wrong with it."""

    line: int
    problem: str


@dataclass(frozen=True)
class PairFile:
    """The pairs of one file, in file order, and the bad lines left out (``skip_bad_lines``)."""

    name: str
    pairs: list[Pair]
    skipped: list[BadLine]


def parse_pairs(raw: bytes, name: str, *, skip_bad_lines: bool = False) -> PairFile:
    """Parse the bytes of a ``source<TAB>target`` file.

    Args:
        raw: the file's bytes.
        name: the file name used in messages (``"train.tsv"`` gives ``"train.tsv:3: ..."``).
        skip_bad_lines: leave bad lines out (and list them) instead of raising.

    Returns:
        The pairs and the skipped lines.

    Raises:
        TypeError: ``raw`` is not bytes.
        ValueError: ``"NAME:LINE: problem"`` for the first bad line (unless
            ``skip_bad_lines``), also saying how many bad lines the file has in all; a line
            longer than ``luong.common.files.MAX_LINE_BYTES`` (never skipped); or
            ``"NAME: no pairs"`` when nothing is left.
    """
    if not isinstance(raw, bytes | bytearray):
        raise LuongTypeError(f"raw: expected bytes, got {type(raw).__name__}")
    return _parse_lines(iter_lines(io.BytesIO(bytes(raw)), name), name, skip_bad_lines)


def _parse_lines(lines: Iterable[bytes], name: str, skip_bad_lines: bool) -> PairFile:
    """``parse_pairs`` on lines already cut (``luong.common.files.iter_lines``)."""
    bad: list[BadLine] = []
    pairs = list(_tsv_pairs(lines, name, skip_bad_lines, bad))
    return PairFile(name, pairs, bad)


def _tsv_pairs(
    lines: Iterable[bytes], name: str, skip_bad_lines: bool, bad: list[BadLine]
) -> Iterator[Pair]:
    """The pairs on ``lines`` (a ``source<TAB>target`` file's, cut by ``iter_lines``), yielded
    in order as they are read; the bad lines are appended to ``bad``. Once a bad line is found
    without ``skip_bad_lines`` no more pairs are yielded, but the rest is read (the message
    counts the file's bad lines); the errors are raised at the end, as ``parse_pairs`` says."""
    count = 0
    for number, line in enumerate(lines, start=1):
        pair_or_problem = _parse_line(line)
        if isinstance(pair_or_problem, str):
            bad.append(BadLine(number, pair_or_problem))
        elif skip_bad_lines or not bad:
            count += 1
            yield pair_or_problem
    if bad and not skip_bad_lines:
        first = bad[0]
        more = (
            f" ({len(bad)} bad lines in this file; --skip-bad-lines skips them)"
            if len(bad) > 1
            else " (--skip-bad-lines skips such lines)"
        )
        raise LuongError(f"{name}:{first.line}: {first.problem}{more}")
    if not count:
        skipped = f" ({len(bad)} bad lines skipped)" if bad else ""
        raise LuongError(f"{name}: no pairs{skipped}; expected lines of source<TAB>target")


def _parse_line(line: bytes) -> Pair | str:
    """The pair on ``line`` (without its line ending), or what is wrong with it."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return (
            f"not valid UTF-8 (byte {error.start + 1} of the line: "
            f"{line[error.start : error.start + 1]!r}, {error.reason})"
        )
    if "\x00" in text:
        return nul_problem(line)
    tabs = text.count("\t")
    if tabs != 1:
        if not text.strip():
            return "empty line; expected source<TAB>target"
        found = "no tab" if tabs == 0 else f"{tabs} tabs"
        return f"expected exactly one tab between source and target, found {found}"
    source, target = text.split("\t")
    for side, value in (("source", source), ("target", target)):
        if not value.strip():
            return f"empty {side}; expected source<TAB>target with text on both sides"
    return source, target


@contextmanager
def open_data(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A data file's bytes as a stream: through gzip for a name ending in ``.gz``, lzma for
    ``.xz``, as they are otherwise. A compressed file that is damaged or cut short raises
    while it is read (inside the block).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a directory, or (while reading) a damaged ``.gz`` or ``.xz`` file; the
            message names the file.
    """
    name = os.fspath(path)
    suffix = name.lower().rsplit(".", 1)[-1]
    try:
        stream: Any  # GzipFile, LZMAFile or a file: binary streams alike
        if suffix == "gz":
            stream = gzip.open(path, "rb")  # noqa: SIM115  (closed below)
        elif suffix == "xz":
            stream = lzma.open(path, "rb")  # noqa: SIM115  (closed below)
        else:
            stream = open(path, "rb")  # noqa: SIM115  (closed below)
    except FileNotFoundError:
        raise FileNotFoundError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise LuongError(f"{name}: is a directory, expected a text file") from None
    try:
        with stream:
            yield stream
    except (EOFError, lzma.LZMAError, gzip.BadGzipFile) as error:
        raise LuongError(
            f"{name}: not a complete .{suffix} file ({error or 'cut short'})"
        ) from None


def read_pairs(path: str | os.PathLike[str], *, skip_bad_lines: bool = False) -> PairFile:
    """Read a ``source<TAB>target`` file (see ``parse_pairs``), plain or compressed
    (``open_data``).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a bad line (``"FILE:LINE: problem"``), no pairs, a directory, a damaged
            compressed file.
    """
    name = os.fspath(path)
    with open_data(path) as stream:  # line by line: no copy of the whole file
        return _parse_lines(iter_lines(stream, name), name, skip_bad_lines)


def parse_parallel(
    source: bytes, target: bytes, names: tuple[str, str], *, skip_bad_lines: bool = False
) -> PairFile:
    """Parse the bytes of two line-aligned files: line i of ``source`` and line i of
    ``target`` make a pair (tabs are text here). Lines are cut as every input is
    (``luong.common.files.iter_lines``).

    Raises:
        ValueError: different line counts (naming both files and both counts), or as
            ``parse_pairs``: ``"FILE:LINE: problem"`` for an empty side or bytes that are not
            UTF-8 (unless ``skip_bad_lines``), ``no pairs``.
    """
    sides = (iter_lines(io.BytesIO(source), names[0]), iter_lines(io.BytesIO(target), names[1]))
    return _parse_parallel_lines(*sides, names, skip_bad_lines)


def _parse_parallel_lines(
    source: Iterable[bytes], target: Iterable[bytes], names: tuple[str, str], skip: bool
) -> PairFile:
    bad: list[BadLine] = []
    pairs = list(_parallel_pairs(source, target, names, skip, bad))
    return PairFile(f"{names[0]} + {names[1]}", pairs, bad)


def _parallel_pairs(
    source: Iterable[bytes],
    target: Iterable[bytes],
    names: tuple[str, str],
    skip: bool,
    bad: list[BadLine],
) -> Iterator[Pair]:
    """The pairs of two line-aligned files' lines, yielded in order as they are read; the bad
    lines are appended to ``bad`` (one per bad side). As ``_tsv_pairs``: nothing more is
    yielded after a bad line without ``skip``, and the errors are raised at the end, as
    ``parse_parallel`` says (different line counts first)."""
    count = 0
    counts = [0, 0]
    for number, lines in enumerate(itertools.zip_longest(source, target), start=1):
        texts = []
        for k, (side, name, line) in enumerate(
            zip(("source", "target"), names, lines, strict=True)
        ):
            counts[k] += line is not None
            text = _decode(line) if line is not None else ""
            if text is None:
                bad.append(BadLine(number, f"not valid UTF-8 in {name}"))
            elif "\x00" in text:
                bad.append(BadLine(number, f"{nul_problem(line or b'')} in {name}"))
                text = None
            elif line is not None and not text.strip():
                bad.append(BadLine(number, f"empty {side} in {name}"))
            texts.append(text)
        if all(text is not None and text.strip() for text in texts) and (skip or not bad):
            count += 1
            yield texts[0], texts[1]  # type: ignore[misc]
    if counts[0] != counts[1]:
        raise LuongError(
            f"{names[0]} has {counts[0]} lines and {names[1]} has {counts[1]}; "
            "expected line-aligned files, a source line and its target line each"
        )
    if bad and not skip:
        first = bad[0]
        raise LuongError(
            f"{names[0]}:{first.line}: {first.problem} (--skip-bad-lines skips such lines)"
        )
    if not count:
        name = f"{names[0]} + {names[1]}"
        raise LuongError(f"{name}: no pairs; expected a source and a target line each")


def read_parallel(
    source: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    skip_bad_lines: bool = False,
) -> PairFile:
    """Read two line-aligned files, a source and its target a line, a line at a time (see
    ``parse_parallel``), each plain or compressed (``open_data``).

    Raises:
        FileNotFoundError: no such file.
        ValueError: different line counts, a bad line, no pairs, a directory, a damaged
            compressed file.
    """
    names = (os.fspath(source), os.fspath(target))
    with open_data(source) as src, open_data(target) as tgt:
        sides = [iter_lines(src, names[0]), iter_lines(tgt, names[1])]
        return _parse_parallel_lines(sides[0], sides[1], names, skip_bad_lines)


def _decode(line: bytes) -> str | None:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return None


Split = str | os.PathLike[str] | tuple[str, str] | list[str]
"""A split's data: a ``source<TAB>target`` file, or a (source file, target file) pair."""


def read_split(path: Split, *, skip_bad_lines: bool = False) -> PairFile:
    """A split from a TSV file or from two line-aligned files ``[source, target]``.

    Raises:
        ValueError: a pair of files that is not two paths; else as the readers.
    """
    paths = _split_paths(path)
    if len(paths) == 2:
        return read_parallel(paths[0], paths[1], skip_bad_lines=skip_bad_lines)
    return read_pairs(paths[0], skip_bad_lines=skip_bad_lines)


def _split_paths(path: Split) -> list[str | os.PathLike[str]]:
    """A split's files: ``[path]`` for one TSV file, ``[source, target]`` for two.

    Raises:
        ValueError: a list or tuple that is not two paths.
    """
    if not isinstance(path, tuple | list):
        return [path]
    if len(path) != 2:
        raise LuongError(f"expected a TSV file or [source, target] files, got {path!r}")
    return list(path)


class PairStream:
    """A split's pairs read a line at a time, each time it is iterated: the files are opened
    again at every pass, so a pass holds one line, not the split (``read_split`` holds it).

    A pass yields the pairs in file order and checks the lines exactly as ``read_split``
    does, with the same messages: a bad line (without ``skip_bad_lines``), parallel files of
    different line counts or a file without pairs raise ``ValueError`` when the pass reaches
    the end of the files (a bad line's message counts the bad lines of the whole file), a
    line too long or a damaged ``.gz``/``.xz`` file where it is read; no pair is yielded
    after the first bad line unless ``skip_bad_lines``.

    Args:
        path: a ``source<TAB>target`` file, or ``[source file, target file]`` (plain,
            ``.gz`` or ``.xz``: ``open_data``).
        skip_bad_lines: leave bad lines out (listed in ``skipped``) instead of raising.

    Attributes:
        name: the name messages use (``"a.en + a.de"`` for parallel files).
        skipped: the bad lines left out by the latest pass read to its end (``read_split``'s
            ``skipped``); empty before one.

    Raises:
        ValueError: a pair of files that is not two paths.
        TypeError: a path that is not a str or a path.
    """

    def __init__(self, path: Split, *, skip_bad_lines: bool = False) -> None:
        paths = _split_paths(path)
        for one in paths:
            if not isinstance(one, str | os.PathLike):
                raise LuongTypeError(f"path: expected a str or a path, got {type(one).__name__}")
        self.paths = [os.fspath(one) for one in paths]
        self.skip_bad_lines = skip_bad_lines
        self.name = " + ".join(self.paths)
        self.skipped: list[BadLine] = []

    def __iter__(self) -> Iterator[Pair]:
        bad: list[BadLine] = []
        if len(self.paths) == 2:
            names = (self.paths[0], self.paths[1])
            with open_data(names[0]) as src, open_data(names[1]) as tgt:
                sides = iter_lines(src, names[0]), iter_lines(tgt, names[1])
                yield from _parallel_pairs(*sides, names, self.skip_bad_lines, bad)
        else:
            with open_data(self.name) as stream:
                lines = iter_lines(stream, self.name)
                yield from _tsv_pairs(lines, self.name, self.skip_bad_lines, bad)
        self.skipped = bad

    def sources(self) -> Iterator[str]:
        """A pass over the sources alone (the whole pair is read and checked)."""
        return (source for source, _ in self)

    def targets(self) -> Iterator[str]:
        """A pass over the targets alone."""
        return (target for _, target in self)


def load(
    train: Split,
    dev: Split,
    test: Split | None = None,
    *,
    src_tokens: Tokens = "char",
    tgt_tokens: Tokens = "char",
    skip_bad_lines: bool = False,
    mix: Split | None = None,
    mix_ratio: float = 1.0,
) -> TaskData:
    """Own data as a task: the splits read (all of them before any training starts).

    Args:
        train: the training pairs: a TSV file, or ``[source file, target file]``.
        dev: pairs for evaluation during training and early stopping.
        test: held-out pairs scored after training (None: no test set).
        src_tokens: cut sources into characters (``"char"``) or on whitespace (``"space"``).
        tgt_tokens: the same for targets.
        skip_bad_lines: leave bad lines out instead of raising.
        mix: general pairs to mix into the training pairs (fine-tuning on a few of your
            own without forgetting the rest): ``mix_ratio`` of them per training pair (at
            most all of them), drawn with a fixed seed, so the same files give the same
            training split.
        mix_ratio: general pairs per pair of ``train``, a number > 0 (only with ``mix``).

    Returns:
        A ``TaskData``; ``info`` holds the file names and, per file, how many bad lines were
        skipped (and with ``mix``: how many general pairs were mixed in, of how many).

    Raises:
        FileNotFoundError: a file is missing.
        ValueError: a bad line (``"FILE:LINE: problem"``), a file without pairs, parallel
            files of different lengths, bad tokens.
    """
    for name, value in (("src_tokens", src_tokens), ("tgt_tokens", tgt_tokens)):
        if value not in TOKENS:
            raise LuongError(f"{name}: expected one of {', '.join(TOKENS)}, got {value!r}")
    ratio = check_mix_ratio(mix_ratio)
    files = {"train": train, "dev": dev, **({"test": test} if test is not None else {})}
    if mix is not None:
        files["mix"] = mix
    read = {split: read_split(path, skip_bad_lines=skip_bad_lines) for split, path in files.items()}
    train_pairs = read["train"].pairs
    mixed: dict[str, Any] = {}
    if mix is not None:
        train_pairs, mixed = mix_pairs(train_pairs, read["mix"].pairs, ratio)
    empty: list[Pair] = []
    return TaskData(
        train_pairs,
        read["dev"].pairs,
        read["test"].pairs if "test" in read else empty,
        src_tokens=src_tokens,
        tgt_tokens=tgt_tokens,
        references=True,
        info={
            "files": {split: _names(path) for split, path in files.items()},
            "skipped_lines": {
                read[split].name: len(read[split].skipped) for split in read if read[split].skipped
            },
            **mixed,
        },
    )


def check_mix_ratio(ratio: object) -> float:
    """``ratio`` as general pairs per training pair: a number > 0.

    Raises:
        ValueError: anything else, named.
    """
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0 < ratio < math.inf:
        raise LuongError(f"mix_ratio: expected a number > 0, got {ratio!r}")
    return float(ratio)


def mix_pairs(
    train: list[Pair], general: list[Pair], ratio: float
) -> tuple[list[Pair], dict[str, Any]]:
    """``train`` and ``ratio`` general pairs per pair of it (at most all of ``general``),
    drawn with a fixed seed (the same files, the same training split: a resumed run's hash),
    and the ``info`` that records them (``{"mixed": {"pairs", "of", "ratio"}}``).

    Raises:
        ValueError: ``ratio`` is no number > 0.
    """
    check_mix_ratio(ratio)
    wanted = ratio * len(train)  # inf for a ratio near the largest float: then all of them
    count = len(general) if wanted >= len(general) else round(wanted)
    mixed = train + random.Random(0).sample(general, count)
    return mixed, {"mixed": {"pairs": count, "of": len(general), "ratio": ratio}}


def _names(path: Split) -> str | list[str]:
    return [os.fspath(p) for p in path] if isinstance(path, tuple | list) else os.fspath(path)
