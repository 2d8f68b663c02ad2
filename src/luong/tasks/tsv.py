"""Your own data: tab-separated ``source<TAB>target`` files, and scoring with several references.

One pair per line, UTF-8; Windows line endings (``\\r\\n``), a UTF-8 byte-order mark on the
first line and a missing final newline are all fine::

    cat<TAB>K AE T
    read<TAB>R EH D
    read<TAB>R IY D          # the same source again: a second reference

Reading is strict. A line without exactly one tab, with an empty (or whitespace-only) side, or
with bytes that are not UTF-8 raises ``ValueError("FILE:LINE: what is wrong")`` before any
training; with ``skip_bad_lines`` such lines are left out and counted instead.

Several references. A source may appear on several lines with different targets (a word with
two pronunciations). Training sees every pair. Scoring (``reference_scores``,
``evaluate_references``) counts each unique source once: its output is right when it equals
any of its references, and its token errors are counted against the closest reference, as the
G2P literature scores CMUdict (``luong.metrics.g2p_scores``)::

    wer  sources whose output equals none of their references / unique sources
    per  sum over sources of edit distance to the closest reference / that reference's length

Tokens are the target vocabulary's: whitespace-separated symbols (phonemes for G2P) in
``"space"`` mode, characters in ``"char"`` mode; ``exact_match`` is ``1 - wer``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from luong.metrics import g2p_scores
from luong.vocab import TOKENS, Tokens, split_symbols

if TYPE_CHECKING:
    from luong.model import Seq2Seq
    from luong.tasks import TaskData

__all__ = [
    "BadLine",
    "PairFile",
    "evaluate_references",
    "group_references",
    "load",
    "parse_pairs",
    "read_pairs",
    "reference_scores",
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
            ``skip_bad_lines``), also saying how many bad lines the file has in all; or
            ``"NAME: no pairs"`` when nothing is left.
    """
    if not isinstance(raw, bytes | bytearray):
        raise TypeError(f"raw: expected bytes, got {type(raw).__name__}")
    lines = bytes(raw).split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the final newline ends the last line; it does not start an empty one
    if lines and lines[0].startswith(b"\xef\xbb\xbf"):
        lines[0] = lines[0][3:]  # a UTF-8 byte-order mark
    pairs: list[Pair] = []
    bad: list[BadLine] = []
    for number, line in enumerate(lines, start=1):
        if line.endswith(b"\r"):
            line = line[:-1]
        pair_or_problem = _parse_line(line)
        if isinstance(pair_or_problem, str):
            bad.append(BadLine(number, pair_or_problem))
        else:
            pairs.append(pair_or_problem)
    if bad and not skip_bad_lines:
        first = bad[0]
        more = (
            f" ({len(bad)} bad lines in this file; --skip-bad-lines skips them)"
            if len(bad) > 1
            else " (--skip-bad-lines skips such lines)"
        )
        raise ValueError(f"{name}:{first.line}: {first.problem}{more}")
    if not pairs:
        skipped = f" ({len(bad)} bad lines skipped)" if bad else ""
        raise ValueError(f"{name}: no pairs{skipped}; expected lines of source<TAB>target")
    return PairFile(name, pairs, bad)


def _parse_line(line: bytes) -> Pair | str:
    """The pair on ``line`` (without its line ending), or what is wrong with it."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return (
            f"not valid UTF-8 (byte {error.start + 1} of the line: "
            f"{line[error.start : error.start + 1]!r}, {error.reason})"
        )
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


def read_pairs(path: str | os.PathLike[str], *, skip_bad_lines: bool = False) -> PairFile:
    """Read a ``source<TAB>target`` file (see ``parse_pairs``).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a bad line (``"FILE:LINE: problem"``), no pairs, or a directory.
    """
    name = os.fspath(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{name}: is a directory, expected a source<TAB>target file") from None
    return parse_pairs(raw, name, skip_bad_lines=skip_bad_lines)


def group_references(pairs: Iterable[Pair]) -> list[tuple[str, list[str]]]:
    """Each unique source once, in order of first appearance, with its targets (repeats of
    the same target kept once, in order).

    >>> group_references([("read", "R EH D"), ("cat", "K AE T"), ("read", "R IY D")])
    [('read', ['R EH D', 'R IY D']), ('cat', ['K AE T'])]
    """
    grouped: dict[str, list[str]] = {}
    for source, target in pairs:
        targets = grouped.setdefault(source, [])
        if target not in targets:
            targets.append(target)
    return list(grouped.items())


def reference_scores(
    hyps: Sequence[str], refs: Sequence[Sequence[str]], tokens: Tokens = "space"
) -> dict[str, float | int]:
    """Sequence and token error rates over unique sources, each with several references.

    Args:
        hyps: ``hyps[i]``, the output for source i.
        refs: ``refs[i]``, the references of source i (at least one, each with a token).
        tokens: how to cut strings into tokens: ``"space"`` (phonemes, words) or ``"char"``.

    Returns:
        ``{"exact_match", "wer", "per", "sources", "word_errors", "token_errors",
        "tokens"}``: ``wer`` the fraction of sources whose output equals none of their
        references, ``per`` the edit distance to the closest reference over its length
        (summed over sources), ``exact_match = 1 - wer``.

    Raises:
        ValueError: unknown ``tokens``; the lengths differ; no sources; a source without
            references or with an empty one.
    """
    if tokens not in TOKENS:
        raise ValueError(f"tokens: expected one of {', '.join(TOKENS)}, got {tokens!r}")
    if isinstance(hyps, str) or isinstance(refs, str):
        raise TypeError("hyps, refs: expected sequences, got a single str")
    scores = g2p_scores(
        [split_symbols(hyp, tokens) for hyp in hyps],
        [[split_symbols(ref, tokens) for ref in source_refs] for source_refs in refs],
    )
    return {
        "exact_match": 1.0 - scores["wer"],
        "wer": scores["wer"],
        "per": scores["per"],
        "sources": scores["words"],
        "word_errors": scores["word_errors"],
        "token_errors": scores["phoneme_errors"],
        "tokens": scores["phonemes"],
    }


def evaluate_references(
    model: Seq2Seq,
    pairs: Sequence[Pair],
    *,
    batch_size: int = 1000,
    max_len: int | None = None,
    beam_size: int = 1,
    alpha: float = 0.0,
    beta: float = 0.0,
) -> dict[str, Any]:
    """Decode each unique source of ``pairs`` once and score it against all its targets.

    Args:
        model: a trained model.
        pairs: (source, target) pairs; a source may repeat with other targets.
        batch_size: sources per decoding batch.
        max_len: the longest output (None: the model's default).
        beam_size: 1 for greedy search, more for beam search (``Seq2Seq.translate``).
        alpha: beam search's length penalty weight.
        beta: beam search's coverage penalty weight.

    Returns:
        ``reference_scores``'s dict (tokens as the model's target vocabulary cuts them), plus
        ``pairs``, ``unknown_tokens`` (source tokens outside the source vocabulary, mapped to
        unk), ``sources_with_unknown`` and ``unknown_target_tokens`` (reference tokens the
        model can never write).

    Raises:
        ValueError: no pairs; bad search options.
    """
    if not pairs:
        raise ValueError("pairs: expected at least one (source, target) pair, got none")
    grouped = group_references(pairs)
    sources = [source for source, _ in grouped]
    hyps = model.translate(
        sources,
        batch_size=batch_size,
        max_len=max_len,
        beam_size=beam_size,
        alpha=alpha,
        beta=beta,
    )
    tokens = model.tgt_vocab.tokens
    scores: dict[str, Any] = dict(
        reference_scores(hyps, [targets for _, targets in grouped], tokens)
    )
    unknown = [len(model.src_vocab.unknown(source)) for source in sources]
    scores.update(
        pairs=len(pairs),
        unknown_tokens=sum(unknown),
        sources_with_unknown=sum(1 for n in unknown if n),
        unknown_target_tokens=sum(
            len(model.tgt_vocab.unknown(target)) for _, targets in grouped for target in targets
        ),
    )
    return scores


def load(
    train: str | os.PathLike[str],
    dev: str | os.PathLike[str],
    test: str | os.PathLike[str] | None = None,
    *,
    src_tokens: Tokens = "char",
    tgt_tokens: Tokens = "char",
    skip_bad_lines: bool = False,
) -> TaskData:
    """Own data as a task: the three files read (all of them before any training starts).

    Args:
        train: the training pairs.
        dev: pairs for evaluation during training and early stopping.
        test: held-out pairs scored after training (None: no test set).
        src_tokens: cut sources into characters (``"char"``) or on whitespace (``"space"``).
        tgt_tokens: the same for targets.
        skip_bad_lines: leave bad lines out instead of raising.

    Returns:
        A ``TaskData`` with the generic model and training defaults; ``info`` holds the file
        names and, per file, how many bad lines were skipped.

    Raises:
        FileNotFoundError: a file is missing.
        ValueError: a bad line (``"FILE:LINE: problem"``), a file without pairs, bad tokens.
    """
    from luong.tasks import TaskData

    for name, value in (("src_tokens", src_tokens), ("tgt_tokens", tgt_tokens)):
        if value not in TOKENS:
            raise ValueError(f"{name}: expected one of {', '.join(TOKENS)}, got {value!r}")
    files = {"train": train, "dev": dev, **({"test": test} if test is not None else {})}
    read = {split: read_pairs(path, skip_bad_lines=skip_bad_lines) for split, path in files.items()}
    empty: list[Pair] = []
    return TaskData(
        read["train"].pairs,
        read["dev"].pairs,
        read["test"].pairs if "test" in read else empty,
        src_tokens=src_tokens,
        tgt_tokens=tgt_tokens,
        references=True,
        info={
            "files": {split: os.fspath(path) for split, path in files.items()},
            "skipped_lines": {
                read[split].name: len(read[split].skipped) for split in read if read[split].skipped
            },
        },
    )
