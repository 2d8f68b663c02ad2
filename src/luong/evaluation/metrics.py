"""Evaluation metrics: exact match, character accuracy, and G2P word and phoneme error rates.

Edit distances are Levenshtein distances (unit-cost insertions, deletions and substitutions)
from ``rapidfuzz.distance.Levenshtein``, on characters for strings and on whole phoneme
symbols for phoneme lists.

Definitions (hyps[i] is the output for item i, refs[i] its reference):

    exact match       #{i : hyps[i] == refs[i]} / N
    char accuracy     max(0, 1 - sum_i dist(hyps[i], refs[i]) / sum_i len(refs[i]))
    G2P WER           #{words whose output equals none of its references} / #words
    G2P PER           sum_w dist(hyp_w, closest_w) / sum_w len(closest_w)
    BLEU, chrF        corpus-level, sacrebleu's defaults (13a tokenizer, chrF2)

For G2P each unique word is counted once, with every pronunciation of it as a reference,
as the G2P literature scores CMUdict (Bisani and Ney 2008; Yao and Zweig 2015).
``reference_scores`` applies the same rule to any output: each unique source once, right
when it equals any of its references, its token errors counted against the closest one.
"""

from __future__ import annotations

from collections.abc import Sequence

from rapidfuzz.distance import Levenshtein
from sacrebleu.metrics import BLEU, CHRF

from luong.common.checks import check_strings
from luong.common.errors import LuongError, LuongTypeError
from luong.data.vocab import TOKENS, Tokens, split_symbols

__all__ = ["bleu_chrf", "char_accuracy", "exact_match", "g2p_scores", "reference_scores"]


def exact_match(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """Fraction of outputs equal to their reference as whole strings (no normalisation).

    Args:
        hyps: the outputs, one string per item.
        refs: the references, as many.

    Returns:
        A number in [0, 1].

    Raises:
        TypeError: an item is not a str.
        ValueError: the lengths differ, or there are no items.
    """
    _check_strings(hyps, refs)
    return sum(hyp == ref for hyp, ref in zip(hyps, refs, strict=True)) / len(refs)


def char_accuracy(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """Character accuracy: 1 - total edit distance / total reference characters, clipped at 0.

    The distances are character-level Levenshtein distances, summed over items before
    dividing (long references weigh more). It is 1 exactly when every output equals its
    reference; outputs far longer than the references would drive it negative, hence the
    clip. With no reference characters at all it is 1 if every output is empty too, else 0.

    Args:
        hyps: the outputs, one string per item.
        refs: the references, as many.

    Returns:
        A number in [0, 1].

    Raises:
        TypeError: an item is not a str.
        ValueError: the lengths differ, or there are no items.
    """
    _check_strings(hyps, refs)
    errors = sum(Levenshtein.distance(hyp, ref) for hyp, ref in zip(hyps, refs, strict=True))
    chars = sum(len(ref) for ref in refs)
    if chars == 0:
        return 1.0 if errors == 0 else 0.0
    return max(0.0, 1.0 - errors / chars)


def g2p_scores(
    hyps: Sequence[Sequence[str]], refs: Sequence[Sequence[Sequence[str]]]
) -> dict[str, float | int]:
    """Word and phoneme error rates of G2P outputs against several references per word.

    A word is right when its output equals any of its references (WER counts the others).
    PER compares each output with its closest reference: the one at the smallest edit
    distance, the shorter one on a tie (then the first listed). The tie rule makes PER the
    larger of the candidates, never flattered by a long reference.

    Args:
        hyps: ``hyps[i]``, the phoneme list output for word i, e.g. ``["K", "AE1", "T"]``.
        refs: ``refs[i]``, the reference pronunciations of word i (each a non-empty phoneme
            list); each word appears once.

    Returns:
        ``{"wer", "per", "words", "word_errors", "phoneme_errors", "phonemes"}``: the rates
        in [0, 1] (PER can exceed 1 for outputs much longer than the references) and the
        counts they divide: ``wer = word_errors / words``, ``per = phoneme_errors / phonemes``.

    Raises:
        TypeError: an output or reference is a string (split it into phonemes) or holds a
            non-string.
        ValueError: the lengths differ, there are no words, a word has no reference, or a
            reference is empty; the message names the index.
    """
    if len(hyps) != len(refs):
        raise LuongError(
            f"hyps, refs: expected as many outputs as words, got {len(hyps)} and {len(refs)}"
        )
    if not refs:
        raise LuongError("refs: expected at least one word, got none")
    word_errors = phoneme_errors = phonemes = 0
    for i, (hyp, word_refs) in enumerate(zip(hyps, refs, strict=True)):
        hyp = _check_phonemes(hyp, f"hyps[{i}]")
        if isinstance(word_refs, str) or not isinstance(word_refs, Sequence):
            raise LuongTypeError(
                f"refs[{i}]: expected a list of pronunciations, got {type(word_refs).__name__}"
            )
        if not word_refs:
            raise LuongError(f"refs[{i}]: expected at least one reference pronunciation, got 0")
        checked = [_check_phonemes(ref, f"refs[{i}][{j}]") for j, ref in enumerate(word_refs)]
        for j, ref in enumerate(checked):
            if not ref:
                raise LuongError(f"refs[{i}][{j}]: expected a non-empty pronunciation, got []")
        # (distance, length): min picks the nearest, then the shorter, then the first listed.
        closest = min((Levenshtein.distance(hyp, ref), len(ref)) for ref in checked)
        word_errors += closest[0] != 0
        phoneme_errors += closest[0]
        phonemes += closest[1]
    return {
        "wer": word_errors / len(refs),
        "per": phoneme_errors / phonemes,
        "words": len(refs),
        "word_errors": word_errors,
        "phoneme_errors": phoneme_errors,
        "phonemes": phonemes,
    }


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
        raise LuongError(f"tokens: expected one of {', '.join(TOKENS)}, got {tokens!r}")
    if isinstance(hyps, str) or isinstance(refs, str):
        raise LuongTypeError("hyps, refs: expected sequences, got a single str")
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


def bleu_chrf(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> dict[str, float | str]:
    """Corpus BLEU and chrF of detokenized outputs, as sacrebleu computes them with its
    defaults (BLEU: the 13a tokenizer, exponential smoothing; chrF: character 6-grams,
    beta 2), several references per output allowed.

    Args:
        hyps: ``hyps[i]``, the output for item i.
        refs: ``refs[i]``, the references of item i (at least one; the numbers may differ).

    Returns:
        ``{"bleu", "chrf", "bleu_signature", "chrf_signature"}``: the scores in [0, 100] and
        sacrebleu's signatures (what a reader needs to compare figures).

    Raises:
        TypeError: a non-string output or reference.
        ValueError: the lengths differ, no items, or an item without references.
    """
    if isinstance(hyps, str) or isinstance(refs, str):
        raise LuongTypeError("hyps, refs: expected sequences, got a single str")
    if len(hyps) != len(refs):
        raise LuongError(
            f"hyps, refs: expected as many outputs as references, got {len(hyps)} and {len(refs)}"
        )
    if not refs:
        raise LuongError("refs: expected at least one item, got none")
    for i, (hyp, item_refs) in enumerate(zip(hyps, refs, strict=True)):
        if not isinstance(hyp, str):
            raise LuongTypeError(f"hyps[{i}]: expected a str, got {type(hyp).__name__}")
        if isinstance(item_refs, str) or not item_refs:
            raise LuongError(f"refs[{i}]: expected a non-empty list of references")
        if not all(isinstance(ref, str) for ref in item_refs):
            raise LuongTypeError(f"refs[{i}]: expected strings")
    # sacrebleu takes reference streams, one reference of every item each; items with
    # fewer references are padded with None.
    width = max(len(item_refs) for item_refs in refs)
    streams = [[r[k] if k < len(r) else None for r in refs] for k in range(width)]
    bleu, chrf = BLEU(), CHRF()
    return {
        "bleu": float(bleu.corpus_score(list(hyps), streams).score),  # type: ignore[arg-type]
        "chrf": float(chrf.corpus_score(list(hyps), streams).score),  # type: ignore[arg-type]
        "bleu_signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
    }


def _check_strings(hyps: Sequence[str], refs: Sequence[str]) -> None:
    check_strings("hyps", hyps)
    check_strings("refs", refs)
    if len(hyps) != len(refs):
        raise LuongError(
            f"hyps, refs: expected as many outputs as references, got {len(hyps)} and {len(refs)}"
        )
    if not refs:
        raise LuongError("refs: expected at least one item, got none")


def _check_phonemes(value: object, name: str) -> list[str]:
    if isinstance(value, str):
        raise LuongTypeError(
            f"{name}: expected a list of phonemes such as ['K', 'AE1', 'T'], "
            f"got the string {value!r}"
        )
    if not isinstance(value, Sequence):
        raise LuongTypeError(f"{name}: expected a list of phonemes, got {type(value).__name__}")
    for k, phoneme in enumerate(value):
        if not isinstance(phoneme, str):
            raise LuongTypeError(
                f"{name}[{k}]: expected a str phoneme, got {type(phoneme).__name__}"
            )
    return list(value)
