"""Glossaries: a project's terminology held in every translation (``--glossary FILE``).

A glossary lists source terms and the target term each must become (``printer`` ->
``Drucker``). Where a source holds a term, its target term joins that source's constraints,
and lexically constrained beam search (``luong.search.constrained``, Post and Vilar 2018: the
machinery of ``--constraints`` and of the placeholders kept) writes it in every output: an
output may end only when it holds it. ``Translator.translations`` does this for a request's
``RequestOptions.glossary`` (``enforced_terms``), on every face.

**Files**: ``luong.memory.glossary_files`` reads them (``read_glossary``: TSV, CSV, TBX).

A source term listed twice keeps its first target; the later ones become its variants. No
term may hold a placeholder or protected span (``luong.translation.placeholders.find_placeholders``:
those are carried over unchanged, never translated), a line break or another control character.

**Matching** (``Glossary.find``), chosen for software strings:

- whole words: neither the character before an occurrence nor the one after it may be a
  letter, a digit, ``_`` or ``-`` (``file`` matches in ``file.``, ``(file)``, ``user's
  file``; not in ``profile``, ``files`` nor ``file-based``, whose translation is another
  word); a space inside a term matches any run of whitespace;
- case: a term written in lower case matches in any case (``printer`` matches ``Printer`` and
  ``PRINTER``: menu labels and buttons are written in Title Case); a term with a capital
  letter matches only as written (``GNOME``, ``IT``, ``Trash``: names and acronyms are not
  the common words they spell);
- an occurrence inside a placeholder or protected span (``%(printer)s``, ``{file}``,
  ``--file``, a URL, a tag's name) does not count;
- overlapping occurrences: the longest wins, then the leftmost, then the term listed first
  (``print queue`` over ``queue``); a shorter term still counts where it overlaps no
  occurrence kept.

**Enforced** (``enforced_terms``): the target term of each term found, as listed. German
inflects, and what is held is the listed form, the first (``Drucker``, not ``Druckers``),
whatever case the sentence asks for: list the form the strings need most (in software
catalogs, the nominative singular). A sentence holds each distinct target at least once,
however often its source holds the term (an output may rightly name it once: "files and
folders"). A target the model's vocabulary cannot write is an error naming the term
(``Glossary.check_vocab``), before anything is decoded; targets beyond the most one sentence's
constraints may have (``MAX_CONSTRAINT_PIECES`` target symbols, the sentence's own
constraints first) are not enforced in that sentence.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from luong.common.errors import LuongError, LuongTypeError
from luong.common.lines import LINE_BREAKS, lone_surrogate
from luong.config.search import MAX_CONSTRAINT_PIECES, MAX_PHRASE_PIECES
from luong.data.vocab import Vocab
from luong.translation.placeholders import find_placeholders

__all__ = [
    "MAX_TERM_CHARS",
    "Glossary",
    "Term",
    "TermMatch",
    "enforced_terms",
    "glossary_of",
]

MAX_TERM_CHARS = 200
"""The longest term, in characters: a term is a word or a phrase, not a sentence."""

_TOKEN = re.compile(r"\w+|\S")  # a word, or one sign: what the glossary's trie is made of
_JOINS = re.compile(r"[\w-]")  # a character that joins a word: no term begins or ends beside it
_END = ""  # the trie key under which a node lists the terms that end there (no token is "")
_Trie = dict[Any, Any]  # (token, spaced) -> node; _END -> [(order, Term)]


@dataclass(frozen=True)
class Term:
    """A glossary's entry: where ``source`` occurs in a source, ``target`` is held in the
    output; ``variants``: other forms of the target, not enforced; ``where``: where it is
    written (``FILE:LINE``, ``glossary[I]``), for messages."""

    source: str
    target: str
    variants: tuple[str, ...] = ()
    where: str = "glossary"


@dataclass(frozen=True)
class TermMatch:
    """An occurrence of ``term`` in a text: ``text[start:end]``."""

    start: int
    end: int
    term: Term


class Glossary:
    """Terms, checked (the module docstring's rules), indexed once in a trie of their tokens
    (``_TOKEN``: a run of word characters, or one other character that is not a space) so that
    ``find`` matches every term in one pass over a text's tokens, whatever the number of
    terms or how they start (a term starting with a sign, ``.NET``, was a regular expression
    searched through every text: 10k of them made 1,000 lines take 62 s instead of 3).

    Args:
        terms: the entries, in order (a source term listed again adds its targets to the
            first entry's variants).
        name: the glossary's name in messages (its file).

    Raises:
        TypeError: an entry is not a ``Term``, a term not a str.
        ValueError: an empty term, one longer than ``MAX_TERM_CHARS``, one holding a
            placeholder, a line break or a control character (named by ``Term.where``).
    """

    def __init__(self, terms: Iterable[Term], name: str = "glossary") -> None:
        merged: dict[str, Term] = {}
        for term in terms:
            if not isinstance(term, Term):
                raise LuongTypeError(f"{name}: expected Term entries, got {type(term).__name__}")
            term = _checked(term)
            first = merged.get(term.source)
            if first is None:
                merged[term.source] = term
                continue
            known = {first.target, *first.variants}
            more = [t for t in (term.target, *term.variants) if t not in known]
            merged[term.source] = Term(
                first.source, first.target, (*first.variants, *dict.fromkeys(more)), first.where
            )
        self.name = name
        self.terms = tuple(merged.values())
        self._spelled: list[Vocab] = []  # the vocabularies check_vocab found to write it all
        # Two tries of tokens: the terms in lower case, matched in any case (their text's
        # tokens lowered), and the others, matched as written.
        self._any_case: _Trie = {}
        self._as_written: _Trie = {}
        for order, term in enumerate(self.terms):
            lower = term.source == term.source.lower()
            node = self._any_case if lower else self._as_written
            for key in _keys(term.source):
                node = node.setdefault(key, {})
            ends = node.setdefault(_END, [])
            ends.append((order, term))

    @classmethod
    def of(cls, pairs: Sequence[Sequence[str]], name: str = "glossary") -> Glossary:
        """A glossary of ``(source term, target term)`` pairs (a request's), entry ``i``
        named ``NAME[i]`` in messages.

        Raises:
            TypeError: not a list of pairs of strings.
            ValueError: as ``Glossary``.
        """
        if isinstance(pairs, str) or not isinstance(pairs, Sequence):
            raise LuongTypeError(
                f"{name}: expected a list of [source term, target term] pairs, "
                f"got {type(pairs).__name__}"
            )
        terms = []
        for i, pair in enumerate(pairs):
            if (
                isinstance(pair, str)
                or not isinstance(pair, Sequence)
                or len(pair) != 2
                or not all(isinstance(t, str) for t in pair)
            ):
                raise LuongTypeError(
                    f"{name}[{i}]: expected a [source term, target term] pair of strings, "
                    f"got {pair!r:.60}"
                )
            terms.append(Term(pair[0].strip(), pair[1].strip(), (), f"{name}[{i}]"))
        return cls(terms, name)

    def __len__(self) -> int:
        return len(self.terms)

    def __repr__(self) -> str:
        return f"Glossary({self.name!r}, {len(self.terms)} terms)"

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The ``(source term, target term)`` pairs, in order: what a request carries
        (``RequestOptions.glossary``)."""
        return tuple((term.source, term.target) for term in self.terms)

    def find(self, text: str) -> list[TermMatch]:
        """The occurrences of the terms in ``text`` (the module docstring's rules: whole
        words, the case rule, none inside a placeholder span, overlaps to the longest, then
        the leftmost), in the text's order.

        Raises:
            TypeError: ``text`` is not a str.
        """
        if not isinstance(text, str):
            raise LuongTypeError(f"text: expected a str, got {type(text).__name__}")
        # Each span's characters become NUL: no term matches across or inside one, and a
        # span bounds a word as a space does.
        clean = list(text)
        for span in find_placeholders(text):
            clean[span.start : span.end] = "\0" * (span.end - span.start)
        plain = "".join(clean)
        tokens = [(t.start(), t.end(), t.group()) for t in _TOKEN.finditer(plain)]
        found: list[tuple[int, int, int, Term]] = []
        for i, (start, _, _) in enumerate(tokens):
            if start and _JOINS.match(plain, start - 1):
                continue  # inside a word: no term starts here
            for trie, lower in ((self._any_case, True), (self._as_written, False)):
                node = trie
                for j in range(i, len(tokens)):
                    at, end, token = tokens[j]
                    spaced = j > i and at > tokens[j - 1][1]  # whitespace before it
                    child = node.get((token.lower() if lower else token, spaced))
                    if child is None:
                        break
                    node = child
                    if _END in node and not _JOINS.match(plain, end):
                        found.extend((start, end, order, t) for order, t in node[_END])
        found.sort(key=lambda f: (f[0] - f[1], f[0], f[2]))  # longest, leftmost, first listed
        kept: list[TermMatch] = []
        for start, end, _, term in found:
            if all(end <= k.start or k.end <= start for k in kept):
                kept.append(TermMatch(start, end, term))
        return sorted(kept, key=lambda k: k.start)

    def targets(self, text: str) -> tuple[str, ...]:
        """The target terms of the terms ``find`` finds in ``text``, each once, in the
        text's order: what a translation of ``text`` must hold (a translation memory's is
        reused only so, ``luong.memory.translation_memory.TranslationMemory.recall``)."""
        return tuple(dict.fromkeys(match.term.target for match in self.find(text)))

    def check_vocab(self, vocab: Vocab) -> None:
        """Raise unless ``vocab`` (a model's target vocabulary) can write every target term
        within the constrained search's bound on a phrase (``MAX_PHRASE_PIECES``).

        Raises:
            ValueError: ``WHERE: the target term 'X' has symbols the target vocabulary
                cannot produce: [...]`` or is too long.
        """
        if any(known is vocab for known in self._spelled):
            return  # a server checks each request's glossary: once per vocabulary is enough
        for term in self.terms:
            unknown = vocab.unknown(term.target)
            if unknown:
                raise LuongError(
                    f"{term.where}: the target term {term.target!r:.80} has symbols the "
                    f"model's target vocabulary cannot produce: {unknown[:5]}; correct the "
                    "term or leave it out"
                )
            pieces = len(vocab.encode(term.target, eos=False))
            if pieces > MAX_PHRASE_PIECES:
                raise LuongError(
                    f"{term.where}: the target term {term.target!r:.40} is {pieces} target "
                    f"symbols, above the most a constraint may have ({MAX_PHRASE_PIECES})"
                )
        self._spelled.append(vocab)


def _checked(term: Term) -> Term:
    """``term`` with its texts stripped, or an error naming ``term.where``."""
    if not isinstance(term.source, str) or not isinstance(term.target, str):
        raise LuongTypeError(f"{term.where}: expected terms as strings, got {term!r:.80}")
    if isinstance(term.variants, str) or not all(isinstance(v, str) for v in term.variants):
        raise LuongTypeError(f"{term.where}: expected variants as a tuple of strings")
    source, target = term.source.strip(), term.target.strip()
    variants = tuple(dict.fromkeys(v.strip() for v in term.variants if v.strip()))
    for side, text in (("source", source), ("target", target)):
        if not text:
            raise LuongError(f"{term.where}: the {side} term is empty")
    for side, text in (("source", source), ("target", target), *(("variant", v) for v in variants)):
        surrogate = lone_surrogate(text)
        if surrogate is not None:
            raise LuongError(
                f"{term.where}: the {side} term is not valid Unicode (a lone surrogate at "
                f"character {surrogate})"
            )
        if len(text) > MAX_TERM_CHARS:
            raise LuongError(
                f"{term.where}: the {side} term has {len(text)} characters, above the "
                f"most a term may have ({MAX_TERM_CHARS})"
            )
        if any(c in LINE_BREAKS or unicodedata.category(c) == "Cc" for c in text):
            raise LuongError(
                f"{term.where}: the {side} term {text!r:.60} holds a line break or a "
                "control character"
            )
        spans = find_placeholders(text)
        if spans:
            raise LuongError(
                f"{term.where}: the {side} term {text!r:.60} holds the placeholder "
                f"{spans[0].text!r:.40}; placeholders are carried over as they are, never "
                "terms"
            )
    return Term(source, target, variants, term.where)


def _keys(source: str) -> list[tuple[str, bool]]:
    """The trie keys of the term ``source``: each token (``_TOKEN``) with whether whitespace
    comes before it (any run of it in a text; never before the first)."""
    keys = []
    for w, word in enumerate(source.split()):
        keys += [(t, w > 0 and k == 0) for k, t in enumerate(_TOKEN.findall(word))]
    return keys


@functools.lru_cache(maxsize=16)
def glossary_of(pairs: tuple[tuple[str, str], ...]) -> Glossary:
    """``Glossary.of(pairs)``, built once for the same pairs (a server's requests and a
    command's windows carry the same glossary again and again)."""
    return Glossary.of(pairs)


def enforced_terms(
    glossary: Glossary, source: str, vocab: Vocab, given: Sequence[str] = ()
) -> list[Term]:
    """The terms whose targets ``source``'s outputs must hold: those ``glossary.find``s in
    it, each distinct target once, in the source's order, none already among ``given`` (the
    sentence's own constraint phrases), as many as fit beside ``given`` within
    ``MAX_CONSTRAINT_PIECES`` target symbols (a target that does not fit is left out, a
    shorter one after it may still fit).

    Raises:
        TypeError: ``glossary`` is not a ``Glossary``, ``source`` not a str.
    """
    if not isinstance(glossary, Glossary):
        raise LuongTypeError(f"glossary: expected a Glossary, got {type(glossary).__name__}")
    phrases = [phrase for phrase in given if isinstance(phrase, str)]
    room = MAX_CONSTRAINT_PIECES - sum(len(vocab.encode(p, eos=False)) for p in phrases)
    held = set(phrases)
    terms = []
    for match in glossary.find(source):
        target = match.term.target
        if target in held:
            continue
        pieces = len(vocab.encode(target, eos=False))
        if pieces <= room:
            held.add(target)
            room -= pieces
            terms.append(match.term)
    return terms
