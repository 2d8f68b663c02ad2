"""Vocabulary: symbols <-> ids, for characters or whitespace-separated tokens.

Ids 0 to 3 are the specials, the same in every vocabulary:

    0  ``<pad>``  padding                    2  ``</s>``   end of sequence
    1  ``<s>``    beginning of sequence      3  ``<unk>``  a symbol outside the vocabulary

The other symbols follow from id 4 in the order given. ``V = len(vocab)`` counts both.

Raw strings go in: ``tokenize`` applies the vocabulary's Unicode normalisation (and
lowercasing when asked), then splits into characters (``tokens="char"``) or on whitespace
(``tokens="space"``). Every normalisation lives here, so training, evaluation and
``luong translate`` see text the same way.

Two normalisations, one per side of a pair:

- sources: NFKC (the default), compatibility folding: full-width digits, ligatures and
  superscripts read as their plain forms, so more inputs map onto known symbols;
- targets: NFC at most (``normalization="NFC"``, what a run builds its target vocabulary
  with): canonically equivalent spellings become one (``e`` + U+0301 is ``é``), nothing else
  changes, so a target such as ``m²`` is learned and written as ``m²``. Evaluation puts the
  references through the same ``normalize`` before comparing them with the outputs
  (``luong.evaluation.evaluate``): like is compared with like.

Symbols never hold a tab or a line break (any character ``str.splitlines`` breaks at): an
output stays on its line, and n-best lists stay tab-separated. ``build`` leaves such
characters out (they stay unknown); a vocabulary, or a vocabulary file, holding one is refused.
Whatever reaches an output anyway (a subword model's byte pieces ``<0x0A>``, ``<0x09>``...,
a source's tab copied in place of an unknown, a NUL symbol) is written as a space: ``join``,
and so ``decode`` and every output (``one_line``), never holds a line break, a tab or a NUL.

A token of the text is known when it is one of the vocabulary's own symbols. A token spelled
like a special (``"<s>"`` in space mode) is unknown: raw input can never inject an end of
sequence. Unknown tokens encode to ``unk_id``; ``unknown(text)`` lists them so callers can count
them.

A vocabulary is saved as JSON (``to_json`` / ``save``), never pickled.
"""

from __future__ import annotations

import json
import operator
import os
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Literal

from luong.common.checks import check_positive_int, check_strings
from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import MAX_JSON_BYTES, read_bounded, write_json
from luong.common.lines import LINE_BREAKS

__all__ = [
    "NORMALIZATIONS",
    "TOKENS",
    "Normalization",
    "Tokens",
    "Vocab",
    "join_symbols",
    "one_line",
    "split_symbols",
]

Tokens = Literal["char", "space"]
TOKENS: tuple[str, ...] = ("char", "space")
Normalization = Literal["NFKC", "NFC"]
NORMALIZATIONS: tuple[str, ...] = ("NFKC", "NFC")
"""Sources: NFKC (the default); targets: NFC (see the module docstring)."""

_FIELDS = ("tokens", "lowercase", "symbols", "specials")
# A tab and every line boundary of str.splitlines: never in a symbol. (A NUL symbol is
# allowed, as it always was, so vocabulary files written before still load; ``join`` writes
# it as a space.)
_LINE_BREAKING = LINE_BREAKS - {"\x00"}
# What an output never holds, each written as a space (``one_line``).
_AS_SPACES = str.maketrans(dict.fromkeys(LINE_BREAKS, " "))
# Written only when it is not NFKC: a file without it is an NFKC vocabulary (files written
# before targets were NFC read as they always did).
_OPTIONAL_FIELDS = ("normalization",)


class Vocab:
    """Symbols <-> ids with fixed specials (pad 0, bos 1, eos 2, unk 3).

    Args:
        symbols: the non-special symbols in id order; the first gets id 4. In char mode each is
            one character; in space mode each is a non-empty string without whitespace.
        tokens: ``"char"`` (every character is a token) or ``"space"`` (``str.split()``).
        lowercase: lowercase text in ``normalize`` (after the normalisation).
        normalization: ``"NFKC"`` (sources, the default) or ``"NFC"`` (targets).

    Raises:
        TypeError: ``symbols`` is not a sequence of strings, ``lowercase`` is not a bool.
        ValueError: unknown ``tokens`` or ``normalization``, a duplicate symbol, a special among
            ``symbols``, a symbol that ``tokenize`` could never produce (not one character in
            char mode; empty or with whitespace in space mode), a symbol with a tab or a line
            break.
    """

    PAD: ClassVar[str] = "<pad>"
    BOS: ClassVar[str] = "<s>"
    EOS: ClassVar[str] = "</s>"
    UNK: ClassVar[str] = "<unk>"
    SPECIALS: ClassVar[tuple[str, ...]] = (PAD, BOS, EOS, UNK)
    TOKEN_KINDS: ClassVar[tuple[str, ...]] = ("char", "space")  # what ``tokens`` may be
    pad_id: ClassVar[int] = 0
    bos_id: ClassVar[int] = 1
    eos_id: ClassVar[int] = 2
    unk_id: ClassVar[int] = 3

    def __init__(
        self,
        symbols: Sequence[str],
        tokens: str = "char",
        lowercase: bool = False,
        normalization: Normalization = "NFKC",
    ) -> None:
        if tokens not in self.TOKEN_KINDS:
            raise LuongError(
                f"tokens: expected one of {', '.join(self.TOKEN_KINDS)}, got {tokens!r}"
            )
        if normalization not in NORMALIZATIONS:
            raise LuongError(
                f"normalization: expected one of {', '.join(NORMALIZATIONS)}, got {normalization!r}"
            )
        if not isinstance(lowercase, bool):
            raise LuongTypeError(f"lowercase: expected a bool, got {type(lowercase).__name__}")
        check_strings("symbols", symbols)
        self.tokens: str = tokens
        self.lowercase = lowercase
        self.normalization: Normalization = normalization
        self._symbols: tuple[str, ...] = self.SPECIALS + tuple(symbols)
        self._ids: dict[str, int] = {}
        for index, symbol in enumerate(self._symbols):
            position = index - len(self.SPECIALS)  # index into ``symbols``
            if symbol in self._ids:
                first = self._ids[symbol]
                if first < len(self.SPECIALS):
                    raise LuongError(
                        f"symbols[{position}]: {symbol!r} is a special "
                        f"(specials are {', '.join(self.SPECIALS)}); list only the other symbols"
                    )
                raise LuongError(
                    f"symbols[{position}]: duplicate symbol {symbol!r} "
                    f"(already symbols[{first - len(self.SPECIALS)}])"
                )
            if position >= 0:
                self._check_symbol(position, symbol)
            self._ids[symbol] = index

    def _check_symbol(self, position: int, symbol: str) -> None:
        if _breaks_lines(symbol):
            raise LuongError(
                f"symbols[{position}]: {symbol!r} holds a tab or a line break, which would "
                "break output lines"
            )
        if self.tokens == "char" and len(symbol) != 1:
            raise LuongError(
                f"symbols[{position}]: expected one character in char mode, got {symbol!r}"
            )
        if self.tokens == "space" and (not symbol or symbol.split() != [symbol]):
            raise LuongError(
                f"symbols[{position}]: expected a non-empty token without whitespace "
                f"in space mode, got {symbol!r}"
            )

    @classmethod
    def build(
        cls,
        texts: Iterable[str],
        tokens: Tokens = "char",
        lowercase: bool = False,
        min_count: int = 1,
        max_size: int | None = None,
        normalization: Normalization = "NFKC",
    ) -> Vocab:
        """Collect the symbols of ``texts``, the most frequent first.

        Symbols are sorted by descending count, then by symbol (code point order), so the
        same texts give the same ids in any order. Tokens spelled like a special are left
        out (they stay unknown), and so are tabs and line breaks in char mode.

        Args:
            texts: raw strings, tokenized as ``tokenize`` does.
            tokens: ``"char"`` or ``"space"``.
            lowercase: lowercase in ``normalize``.
            min_count: keep symbols seen at least this many times.
            max_size: the most symbols V, the 4 specials included (the most frequent are
                kept); None for no cap.
            normalization: ``"NFKC"`` (sources) or ``"NFC"`` (targets).

        Returns:
            The vocabulary.

        Raises:
            TypeError: ``texts`` is a single string or holds a non-string.
            ValueError: unknown ``tokens`` or ``normalization``, ``min_count`` not a positive
                int.
        """
        check_positive_int("min_count", min_count)
        if max_size is not None and (
            isinstance(max_size, bool) or not isinstance(max_size, int) or max_size <= 4
        ):
            raise LuongError(
                f"max_size: expected an int > 4 (the specials and more), got {max_size!r}"
            )
        if isinstance(texts, str):
            raise LuongTypeError("texts: expected an iterable of strings, got a single str")
        empty = cls((), tokens, lowercase, normalization)  # validates the settings
        counts: Counter[str] = Counter()
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise LuongTypeError(f"texts[{index}]: expected a str, got {type(text).__name__}")
            counts.update(empty.tokenize(text))
        for special in cls.SPECIALS:
            counts.pop(special, None)
        kept = [
            symbol
            for symbol, count in counts.items()
            if count >= min_count and not _breaks_lines(symbol)
        ]
        kept.sort(key=lambda symbol: (-counts[symbol], symbol))
        if max_size is not None:
            kept = kept[: max_size - len(cls.SPECIALS)]
        return cls(kept, tokens, lowercase, normalization)

    # Text -> tokens -> ids.

    def normalize(self, text: str) -> str:
        """The vocabulary's Unicode normalisation (NFKC, or NFC for targets), then lowercasing
        (normalised again) when ``lowercase``."""
        _check_text(text)
        text = unicodedata.normalize(self.normalization, text)
        if self.lowercase:
            text = unicodedata.normalize(self.normalization, text.lower())
        return text

    def tokenize(self, text: str) -> list[str]:
        """``normalize``, then characters (char mode) or ``str.split()`` (space mode)."""
        return self.split(self.normalize(text))

    def split(self, text: str) -> list[str]:
        """Normalised ``text`` as symbols, without looking them up: its characters (char
        mode) or ``str.split()`` (space mode)."""
        return split_symbols(text, self.tokens)

    def join(self, symbols: Iterable[str]) -> str:
        """Symbols joined into text, one line of it (``one_line``): the inverse of ``split``
        for text without line breaks, tabs and NUL, which become spaces."""
        return one_line(join_symbols(symbols, self.tokens))

    def surface_tokens(self, text: str) -> list[str]:
        """``text``'s tokens as written, before lowercasing (to copy with their case): one
        per token of ``tokenize`` unless lowercasing changed their number."""
        _check_text(text)
        return self.split(unicodedata.normalize(self.normalization, text))

    def encode(self, text: str, *, bos: bool = False, eos: bool = True) -> list[int]:
        """Ids of ``text``'s tokens, unknown ones as ``unk_id``; never fails on content.

        Args:
            text: a raw string.
            bos: prepend ``bos_id``.
            eos: append ``eos_id``.

        Returns:
            The ids, ``[bos] + tokens + [eos]`` as asked.

        Raises:
            TypeError: ``text`` is not a str.
        """
        first = len(self.SPECIALS)
        ids = [self.bos_id] if bos else []
        for token in self.tokenize(text):
            index = self._ids.get(token, self.unk_id)
            ids.append(index if index >= first else self.unk_id)
        if eos:
            ids.append(self.eos_id)
        return ids

    def unknown(self, text: str) -> list[str]:
        """The tokens of ``text`` that ``encode`` maps to ``unk_id``, in order, repeats kept."""
        first = len(self.SPECIALS)
        return [token for token in self.tokenize(text) if self._ids.get(token, 0) < first]

    # Ids -> symbols -> text.

    def symbols_of(self, ids: Iterable[int], *, strip: bool = True) -> list[str]:
        """The symbols of ``ids``.

        Args:
            ids: ints (or anything with ``__index__``, such as numpy or 0-d torch integers).
            strip: stop at the first EOS and drop PAD and BOS; with False every id is kept.

        Returns:
            The symbols; UNK (and, unstripped, every special) as its string.

        Raises:
            TypeError: an id is not an integer.
            ValueError: an id is outside ``[0, V)``.
        """
        out: list[str] = []
        for position, value in enumerate(ids):
            index = self._index(value, f"ids[{position}]")
            if strip:
                if index == self.eos_id:
                    break
                if index in (self.pad_id, self.bos_id):
                    continue
            out.append(self._symbols[index])
        return out

    def decode(self, ids: Iterable[int], *, strip: bool = True) -> str:
        """Text of ``ids``: ``symbols_of`` joined by ``""`` (char) or ``" "`` (space), one
        line of it (``join``).

        Args:
            ids: ints (or anything with ``__index__``).
            strip: stop at the first EOS and drop PAD and BOS. UNK is written ``"<unk>"``.

        Returns:
            The text.

        Raises:
            TypeError: an id is not an integer.
            ValueError: an id is outside ``[0, V)``.
        """
        return self.join(self.symbols_of(ids, strip=strip))

    # Lookups.

    @property
    def symbols(self) -> tuple[str, ...]:
        """The non-special symbols in id order (ids from 4)."""
        return self._symbols[len(self.SPECIALS) :]

    def __len__(self) -> int:
        """V: the specials and the symbols."""
        return len(self._symbols)

    def __contains__(self, symbol: object) -> bool:
        """True for the specials and the symbols (the same set as ``id`` accepts)."""
        return isinstance(symbol, str) and symbol in self._ids

    def symbol(self, id: int) -> str:
        """The symbol with id ``id`` (specials included).

        Raises:
            TypeError: ``id`` is not an integer.
            ValueError: ``id`` is outside ``[0, V)``.
        """
        return self._symbols[self._index(id, "id")]

    def id(self, symbol: str) -> int:
        """The id of ``symbol`` (specials included); see ``encode`` for text with unknowns.

        Raises:
            TypeError: ``symbol`` is not a str.
            ValueError: ``symbol`` is not in the vocabulary.
        """
        if not isinstance(symbol, str):
            raise LuongTypeError(f"symbol: expected a str, got {type(symbol).__name__}")
        if symbol not in self._ids:
            raise LuongError(f"symbol: {symbol!r} is not in the vocabulary (V = {len(self)})")
        return self._ids[symbol]

    def _index(self, value: Any, name: str) -> int:
        if isinstance(value, bool):
            raise LuongTypeError(f"{name}: expected an int id, got bool")
        try:
            index = operator.index(value)
        except TypeError:
            raise LuongTypeError(
                f"{name}: expected an int id, got {type(value).__name__}"
            ) from None
        if not 0 <= index < len(self._symbols):
            raise LuongError(f"{name}: expected an id in [0, {len(self._symbols)}), got {index}")
        return index

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocab):
            return NotImplemented
        return (self.tokens, self.lowercase, self.normalization, self._symbols) == (
            other.tokens,
            other.lowercase,
            other.normalization,
            other._symbols,
        )

    def __repr__(self) -> str:
        return (
            f"Vocab(V={len(self)}, tokens={self.tokens!r}, lowercase={self.lowercase}, "
            f"normalization={self.normalization!r})"
        )

    # JSON.

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: ``tokens``, ``lowercase``, ``symbols`` (ids from 4), ``specials``,
        and ``normalization`` when it is not NFKC."""
        data: dict[str, Any] = {
            "tokens": self.tokens,
            "lowercase": self.lowercase,
            "symbols": list(self.symbols),
            "specials": list(self.SPECIALS),
        }
        if self.normalization != "NFKC":
            data["normalization"] = self.normalization
        return data

    @classmethod
    def from_json(cls, data: object) -> Vocab:
        """Rebuild a vocabulary from ``to_json``'s dict.

        Raises:
            ValueError: ``data`` is not such a dict: a missing or unknown field, a field of the
                wrong type, specials other than this version's, or invalid symbols.
        """
        if not isinstance(data, dict):
            raise LuongError(f"expected a JSON object, got {type(data).__name__}")
        missing = [field for field in _FIELDS if field not in data]
        if missing:
            raise LuongError(f"missing field(s) {', '.join(missing)}")
        known = _FIELDS + _OPTIONAL_FIELDS
        extra = sorted(str(field) for field in data if field not in known)
        if extra:
            raise LuongError(f"unknown field(s) {', '.join(extra)}; expected {', '.join(known)}")
        if data["specials"] != list(cls.SPECIALS):
            raise LuongError(f"specials: expected {list(cls.SPECIALS)}, got {data['specials']!r}")
        symbols = data["symbols"]
        if not isinstance(symbols, list):
            raise LuongError(f"symbols: expected a list of strings, got {type(symbols).__name__}")
        if not isinstance(data["lowercase"], bool):
            raise LuongError(f"lowercase: expected true or false, got {data['lowercase']!r}")
        try:
            normalization = data.get("normalization", "NFKC")
            return cls(symbols, data["tokens"], data["lowercase"], normalization)
        except TypeError as error:  # a non-string symbol: the data is wrong, not the call
            raise LuongError(str(error)) from None

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ``to_json()`` to ``path`` as UTF-8 JSON (non-ASCII symbols kept as written),
        atomically: a reader sees the old file or the new one, never half of one."""
        write_json(path, self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Vocab:
        """Read a vocabulary that ``save`` wrote.

        Raises:
            OSError: the file cannot be read.
            ValueError: the file is larger than ``luong.common.files.MAX_JSON_BYTES``, not
                UTF-8, not JSON, or not a vocabulary; the message names the file and the problem.
        """
        name = os.fspath(path)
        raw = read_bounded(path, MAX_JSON_BYTES)  # a 50 GB sparse file is refused unread
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise LuongError(f"{name}: not UTF-8 (byte {error.start}: {error.reason})") from None
        except json.JSONDecodeError as error:
            raise LuongError(
                f"{name}: not valid JSON ({error.msg} at line {error.lineno}, column {error.colno})"
            ) from None
        except RecursionError:
            raise LuongError(f"{name}: not valid JSON (nested too deep)") from None
        try:
            return cls.from_json(data)
        except ValueError as error:
            raise LuongError(f"{name}: not a vocabulary: {error}") from None


def split_symbols(text: str, tokens: str) -> list[str]:
    """``text`` as symbols: its characters (``"char"``) or ``str.split()`` (``"space"``)."""
    return list(text) if tokens == "char" else text.split()


def join_symbols(symbols: Iterable[str], tokens: str) -> str:
    """The inverse of ``split_symbols``: joined by ``""`` (char) or ``" "`` (space)."""
    return ("" if tokens == "char" else " ").join(symbols)


def one_line(text: str) -> str:
    """``text`` with each line break, tab and NUL (``luong.common.lines.LINE_BREAKS``: what
    ``str.splitlines`` breaks at, the tab that separates n-best outputs, NUL) replaced by a
    space: what every output goes through (``Vocab.join``), so that N lines in give N lines
    out and an output is one field of a tab-separated line, whatever the model emits.

    A space, not nothing: these characters separate what is on either side of them (a
    removed ``\\n`` would glue two words into one), and the output keeps its length in
    characters. Runs are kept, as sentencepiece keeps runs of spaces (``"\\r\\n"`` gives two
    spaces).

    Raises:
        TypeError: ``text`` is not a str.
    """
    _check_text(text)
    return text.translate(_AS_SPACES)


def _breaks_lines(symbol: str) -> bool:
    return not _LINE_BREAKING.isdisjoint(symbol)


def _check_text(text: object) -> None:
    if not isinstance(text, str):
        raise LuongTypeError(f"text: expected a str, got {type(text).__name__}")
