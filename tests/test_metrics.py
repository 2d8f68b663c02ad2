"""Tests for luong.evaluation.metrics: hand-made golden cases and an independent edit-distance
oracle."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from luong.evaluation.metrics import char_accuracy, exact_match, g2p_scores


def _oracle_distance(a: Sequence[object], b: Sequence[object]) -> int:
    """Textbook Levenshtein DP, only to check the library against an independent oracle."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


# Exact match.


def test_exact_match_counts_whole_strings() -> None:
    assert exact_match(["1979-03-05", "2000-01-01"], ["1979-03-05", "2000-01-02"]) == 0.5
    assert exact_match(["a"], ["a"]) == 1.0
    assert exact_match(["A", "a "], ["a", "a"]) == 0.0  # no normalisation


# Character accuracy.


def test_char_accuracy_golden() -> None:
    # distances 0 and 1 (one insertion) over 3 + 4 reference characters
    assert char_accuracy(["abc", "abd"], ["abc", "abcd"]) == pytest.approx(1 - 1 / 7)
    assert char_accuracy(["1979-03-05"], ["1979-03-05"]) == 1.0
    assert char_accuracy(["1979-05-03"], ["1979-03-05"]) == pytest.approx(1 - 2 / 10)
    assert char_accuracy([""], ["abcd"]) == 0.0


def test_char_accuracy_is_clipped_at_zero() -> None:
    assert char_accuracy(["xxxxxxxxxx"], ["a"]) == 0.0  # 10 edits for 1 character


def test_char_accuracy_without_reference_characters() -> None:
    assert char_accuracy(["", ""], ["", ""]) == 1.0
    assert char_accuracy(["a", ""], ["", ""]) == 0.0


@settings(max_examples=200, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.text("abc", max_size=8), st.text("abc", min_size=1, max_size=8)),
        min_size=1,
        max_size=6,
    )
)
def test_char_accuracy_matches_the_oracle(pairs: list[tuple[str, str]]) -> None:
    hyps = [hyp for hyp, _ in pairs]
    refs = [ref for _, ref in pairs]
    errors = sum(_oracle_distance(hyp, ref) for hyp, ref in pairs)
    expected = max(0.0, 1 - errors / sum(len(ref) for ref in refs))
    assert char_accuracy(hyps, refs) == pytest.approx(expected)
    assert (char_accuracy(hyps, refs) == 1.0) == (exact_match(hyps, refs) == 1.0)


@pytest.mark.parametrize("metric", [exact_match, char_accuracy])
def test_string_metrics_validate(metric: Callable[..., float]) -> None:
    with pytest.raises(ValueError, match="expected as many outputs as references, got 2 and 1"):
        metric(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="refs: expected at least one item"):
        metric([], [])
    with pytest.raises(TypeError, match=r"hyps\[1\]: expected a str, got list"):
        metric(["a", ["b"]], ["a", "b"])
    with pytest.raises(TypeError, match="refs: expected a sequence of strings, got a single str"):
        metric(["a"], "a")


# G2P word and phoneme error rates.

TOMATO_US = ["T", "AH0", "M", "EY1", "T", "OW2"]
TOMATO_UK = ["T", "AH0", "M", "AA1", "T", "OW2"]


def test_g2p_scores_golden() -> None:
    hyps = [
        ["K", "AE1", "T"],  # right, one reference
        TOMATO_UK,  # right: equals the second reference
        ["T", "AH0", "M", "AA1", "T", "OW0"],  # wrong: 2 edits from US, 1 from UK (closest)
        ["R", "IY1", "D"],  # wrong: 1 edit from both; the tie goes to the shorter
        [],  # wrong: empty output, 1 deletion
    ]
    refs = [
        [["K", "AE1", "T"]],
        [TOMATO_US, TOMATO_UK],
        [TOMATO_US, TOMATO_UK],
        [["R", "IY1", "D", "Z"], ["R", "EH1", "D"]],
        [["AH0"]],
    ]
    scores = g2p_scores(hyps, refs)
    assert scores == {
        "wer": 3 / 5,
        "per": 3 / 19,  # edits 0 + 0 + 1 + 1 + 1 over lengths 3 + 6 + 6 + 3 + 1
        "words": 5,
        "word_errors": 3,
        "phoneme_errors": 3,
        "phonemes": 19,
    }


def test_g2p_closest_reference_is_by_distance_not_length() -> None:
    # 2 edits from the short reference, 1 from the long one: the long one is closest.
    scores = g2p_scores([["A", "B", "C", "D"]], [[["A", "B"], ["A", "B", "C", "D", "E"]]])
    assert (scores["per"], scores["phonemes"], scores["wer"]) == (1 / 5, 5, 1.0)


def test_g2p_tie_goes_to_the_shorter_reference_in_any_order() -> None:
    refs = [["R", "IY1", "D", "Z"], ["R", "EH1", "D"]]
    for ordered in (refs, refs[::-1]):
        scores = g2p_scores([["R", "IY1", "D"]], [ordered])
        assert (scores["phoneme_errors"], scores["phonemes"]) == (1, 3)


def test_g2p_phonemes_are_whole_symbols() -> None:
    # AH0 vs AH1 is one substitution, not a character edit inside a symbol.
    scores = g2p_scores([["AH1", "B"]], [[["AH0", "B"]]])
    assert (scores["phoneme_errors"], scores["per"]) == (1, 0.5)
    assert g2p_scores([("K", "AE1", "T")], [[("K", "AE1", "T")]])["wer"] == 0.0  # tuples too


def test_g2p_per_can_exceed_one() -> None:
    assert g2p_scores([["A", "A", "A"]], [[["B"]]])["per"] == 3.0


@settings(max_examples=100, deadline=None)
@given(
    words=st.lists(
        st.tuples(
            st.lists(st.sampled_from("ABC"), max_size=5),
            st.lists(st.lists(st.sampled_from("ABC"), min_size=1, max_size=5), min_size=1),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_g2p_matches_the_oracle(words: list[tuple[list[str], list[list[str]]]]) -> None:
    hyps = [hyp for hyp, _ in words]
    refs = [word_refs for _, word_refs in words]
    closest = [min((_oracle_distance(h, r), len(r)) for r in rs) for h, rs in words]
    scores = g2p_scores(hyps, refs)
    assert scores["word_errors"] == sum(h not in rs for h, rs in words)
    assert scores["phoneme_errors"] == sum(d for d, _ in closest)
    assert scores["phonemes"] == sum(n for _, n in closest)


@pytest.mark.parametrize(
    ("hyps", "refs", "error", "message"),
    [
        ([["A"]], [[["A"]], [["B"]]], ValueError, "expected as many outputs as words, got 1 and 2"),
        ([], [], ValueError, "refs: expected at least one word"),
        ([["A"], ["B"]], [[["A"]], []], ValueError, r"refs\[1\]: expected at least one reference"),
        ([["A"], ["B"]], [[["A"]], [["B"], []]], ValueError, r"refs\[1\]\[1\]: expected a non-"),
        (["K AE1 T"], [[["K", "AE1", "T"]]], TypeError, r"hyps\[0\]: expected a list of phonemes"),
        ([["K"]], [["K"]], TypeError, r"refs\[0\]\[0\]: expected a list of phonemes such as"),
        ([["K"]], ["K"], TypeError, r"refs\[0\]: expected a list of pronunciations, got str"),
        ([["K", 1]], [[["K"]]], TypeError, r"hyps\[0\]\[1\]: expected a str phoneme, got int"),
    ],
)
def test_g2p_validates(hyps: Any, refs: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        g2p_scores(hyps, refs)
