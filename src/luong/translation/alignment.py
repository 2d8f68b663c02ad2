"""Word alignments from attention: which source word each output word was translated from.

A model attends over its source *symbols* (characters, words or subword pieces) while it
writes its output *symbols*; people and tools align *words*. ``hypothesis_alignment`` merges
both sides' symbols into words and aligns each output word to the source word that received
the most attention mass over the output word's symbols:

- a source word's weight in one output row is the sum of the row's weights on the word's
  symbols (the source's EOS column is dropped: it is no word);
- an output word's row is the sum of its symbols' rows (the output's EOS row is dropped);
- the output word ``j`` is aligned to the source word ``i`` with the largest summed weight
  (the first such ``i`` on a tie). Every output word gets exactly one link, a source word
  none, one or several; an empty source or output gives no links.

The links are ``(i, j)`` pairs, 0-based (source word, output word), sorted, written in the
Pharaoh format that fast_align, eflomal and fairseq's ``--print-alignment`` write:
``"0-0 1-2 2-1"`` (``pharaoh``).

What a *word* is, for each kind of vocabulary: always a maximal run of non-whitespace
characters (``str.isspace``) of the text the symbols spell, so the words of a source are
``text.split()`` of the source as the vocabulary normalises it, and the words of an output
are ``output.split()`` of the output line ``luong translate`` writes:

- ``char``: a symbol spells itself (one character); a word is the characters between
  whitespace characters;
- ``space``: a symbol spells itself after a space; a word is one symbol;
- ``subword`` (sentencepiece): a piece spells itself with ``▁`` read as a space, and a run
  of byte pieces (``<0xE2><0x82><0xAC>``) the characters its bytes decode to, each character
  owned by the bytes that spell it; so a piece starting with ``▁`` starts a word, a piece of
  only ``▁`` separates words, and a word is the pieces that spell its characters.

A symbol that spells no non-whitespace character (a space piece, a character-level space)
belongs to no word; one that spells characters of two words (a piece ``a▁b``) belongs to
both. Specials spell nothing and belong to no word, except ``<unk>``, which stands for an
unknown word (or character, or piece: the run of characters it replaced).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence

import torch
from torch import Tensor

from luong.common.checks import check_strings
from luong.common.errors import LuongError, LuongTypeError
from luong.data.vocab import Vocab
from luong.search.hypothesis import Hypothesis

__all__ = [
    "align_words",
    "hypothesis_alignment",
    "parse_pharaoh",
    "pharaoh",
    "word_groups",
]

WORD_START = "\u2581"  # sentencepiece's word-start marker, ▁
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_NO_WORD = frozenset((Vocab.PAD, Vocab.BOS, Vocab.EOS))
_KINDS = ("char", "space", "subword")
_PAIR = re.compile(r"(\d+)-(\d+)")


def word_groups(symbols: Sequence[str], tokens: str) -> list[list[int]]:
    """The words that ``symbols`` spell, each as the positions of its symbols.

    Args:
        symbols: the symbols in order (a vocabulary's ``split``, or ``symbols_of`` of ids:
            specials are allowed and spell nothing, ``<unk>`` stands for a word part).
        tokens: the vocabulary's kind, ``"char"``, ``"space"`` or ``"subword"``
            (``Vocab.tokens``).

    Returns:
        one list per word, in order: the 0-based positions of the symbols that spell it,
        ascending; a symbol can be in none (it spells only whitespace) or in several.

    Raises:
        TypeError: ``symbols`` is not a sequence of strings.
        ValueError: an unknown ``tokens``.
    """
    if tokens not in _KINDS:
        raise LuongError(f"tokens: expected one of {', '.join(_KINDS)}, got {tokens!r}")
    check_strings("symbols", symbols)
    words: list[list[int]] = []
    in_word = False
    for char, owners in _characters(symbols, tokens):
        if char.isspace():
            in_word = False
            continue
        if not in_word:
            words.append([])
            in_word = True
        for owner in owners:
            if not words[-1] or words[-1][-1] != owner:
                words[-1].append(owner)
    return words


def _characters(symbols: Sequence[str], tokens: str) -> list[tuple[str, list[int]]]:
    """The characters the symbols spell, each with the positions of the symbols that spell
    it (several for a character spelled by several byte pieces)."""
    chars: list[tuple[str, list[int]]] = []
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending: list[int] = []  # byte pieces whose character is not complete yet
    for position, symbol in enumerate(symbols):
        byte = _BYTE_PIECE.fullmatch(symbol) if tokens == "subword" else None
        if byte is not None:
            pending.append(position)
            for char in decoder.decode(bytes([int(byte.group(1), 16)])):
                chars.append((char, pending))
                pending = []
            continue
        if pending:  # an unfinished byte sequence: its bytes stand for one character
            chars.extend((char, pending) for char in decoder.decode(b"", final=True))
            pending = []
            decoder.reset()
        if tokens == "space" or symbol in _NO_WORD:
            chars.append((" ", [position]))  # a space-level symbol is a word of its own
        if symbol in _NO_WORD:
            continue
        if symbol == Vocab.UNK or tokens == "space":
            chars.append(("?", [position]))  # a non-space stand-in: (part of) a word
        elif tokens == "char":
            chars.append((symbol, [position]))
        else:
            chars.extend((" " if c == WORD_START else c, [position]) for c in symbol)
    if pending:
        chars.extend((char, pending) for char in decoder.decode(b"", final=True))
    return chars


def align_words(
    attention: Tensor, source_words: Sequence[Sequence[int]], target_words: Sequence[Sequence[int]]
) -> list[tuple[int, int]]:
    """Align each target word to the source word with the most attention mass.

    Args:
        attention: ``[T, S]`` weights, a row per target symbol, a column per source symbol.
        source_words: the source words, each as its symbols' columns (``word_groups``).
        target_words: the target words, each as its symbols' rows.

    Returns:
        the sorted ``(i, j)`` links, source word ``i`` and target word ``j``, one per target
        word (none when there is no source word).

    Raises:
        ValueError: ``attention`` is not 2-D, or a word names a row or column outside it.
    """
    if not isinstance(attention, Tensor) or attention.dim() != 2:
        shape = tuple(attention.shape) if isinstance(attention, Tensor) else type(attention)
        raise LuongError(f"attention: expected a [T, S] tensor, got {shape}")
    rows, columns = attention.shape
    _check_words("source_words", source_words, columns)
    _check_words("target_words", target_words, rows)
    if not source_words or not target_words:
        return []
    weights = attention.detach().to("cpu", torch.float64)
    to_source = torch.zeros(columns, len(source_words), dtype=torch.float64)
    for i, word in enumerate(source_words):
        to_source[list(word), i] = 1.0
    to_target = torch.zeros(len(target_words), rows, dtype=torch.float64)
    for j, word in enumerate(target_words):
        to_target[j, list(word)] = 1.0
    mass = to_target @ weights @ to_source  # [target words, source words]
    best = mass.argmax(dim=1).tolist()  # the first of equal maxima
    return sorted((i, j) for j, i in enumerate(best))


def _check_words(name: str, words: Sequence[Sequence[int]], size: int) -> None:
    if isinstance(words, str) or not isinstance(words, Sequence):
        raise LuongTypeError(
            f"{name}: expected a list of lists of ints, got {type(words).__name__}"
        )
    for k, word in enumerate(words):
        if (
            isinstance(word, str)
            or not isinstance(word, Sequence)
            or not word
            or not all(isinstance(p, int) and not isinstance(p, bool) for p in word)
        ):
            raise LuongError(f"{name}[{k}]: expected a non-empty list of ints, got {word!r}")
        if min(word) < 0 or max(word) >= size:
            raise LuongError(f"{name}[{k}]: expected positions in [0, {size}), got {list(word)}")


def hypothesis_alignment(
    hypothesis: Hypothesis, source: str, src_vocab: Vocab, tgt_vocab: Vocab
) -> list[tuple[int, int]]:
    """The word alignment of one output (see the module docstring).

    Args:
        hypothesis: a search's output, with its attention kept (``[len(tokens), S_real]``,
            ``S_real`` the source's symbols and its EOS).
        source: the text it was decoded from.
        src_vocab, tgt_vocab: the model's vocabularies (``model.src_vocab``, ...).

    Returns:
        the sorted ``(i, j)`` links: source word ``i`` of ``source.split()`` (as the
        vocabulary normalises it), output word ``j`` of the output text's ``split()``.

    Raises:
        TypeError: arguments of the wrong type.
        ValueError: the attention was not kept (no columns although the source has symbols),
            or its shape does not fit the source and the tokens.
    """
    if not isinstance(hypothesis, Hypothesis):
        raise LuongTypeError(f"hypothesis: expected a Hypothesis, got {type(hypothesis).__name__}")
    if not isinstance(source, str):
        raise LuongTypeError(f"source: expected a str, got {type(source).__name__}")
    for name, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        if not isinstance(vocab, Vocab):
            raise LuongTypeError(f"{name}: expected a Vocab, got {type(vocab).__name__}")
    source_symbols = src_vocab.tokenize(source)
    attention = hypothesis.attention
    expected = (len(hypothesis.tokens), len(source_symbols) + 1)
    if tuple(attention.shape) != expected:
        raise LuongError(
            f"hypothesis.attention: expected [len(tokens), source symbols + EOS] = "
            f"{list(expected)} (decoded with attention kept), got {list(attention.shape)}"
        )
    # Up to the first EOS: what the output text holds (``hypothesis_text``).
    tokens = list(hypothesis.tokens)
    end = tokens.index(Vocab.eos_id) if Vocab.eos_id in tokens else len(tokens)
    target_symbols = tgt_vocab.symbols_of(tokens[:end], strip=False)
    return align_words(
        attention[:end, : len(source_symbols)],
        word_groups(source_symbols, src_vocab.tokens),
        word_groups(target_symbols, tgt_vocab.tokens),
    )


def pharaoh(links: Sequence[tuple[int, int]]) -> str:
    """Links in the Pharaoh format: ``"i-j"`` pairs separated by single spaces, in order
    (``""`` for none).

    Raises:
        ValueError: a link that is not a pair of ints >= 0.
    """
    parts = []
    for k, link in enumerate(links):
        if (
            not isinstance(link, tuple | list)
            or len(link) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in link)
        ):
            raise LuongError(f"links[{k}]: expected a pair of ints >= 0, got {link!r}")
        parts.append(f"{link[0]}-{link[1]}")
    return " ".join(parts)


def parse_pharaoh(text: str) -> list[tuple[int, int]]:
    """The links of a Pharaoh line (``"0-0 1-2"``), in its order.

    Raises:
        TypeError: ``text`` is not a str.
        ValueError: a field that is not ``i-j``.
    """
    if not isinstance(text, str):
        raise LuongTypeError(f"text: expected a str, got {type(text).__name__}")
    links = []
    for field in text.split():
        match = _PAIR.fullmatch(field)
        if match is None:
            raise LuongError(f"text: expected i-j pairs, got {field!r}")
        links.append((int(match.group(1)), int(match.group(2))))
    return links
