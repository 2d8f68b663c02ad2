"""Tests of ``luong.search``: beam search, its penalties, n-best lists and unknown-word
replacement.

Oracles: greedy search (beam 1 must equal it; a wider beam must never end below it); the same
sentence alone and in a batch; the hypothesis' own fields (its score is recomputed from its
log-probabilities and attention); the search without its greedy-bound pruning; hand-computed
penalties.

Shapes: B batch, S source length, T output length, V target vocabulary, k beam size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch
from helpers import SRC_SPACE, TGT, small_model, source_batch
from hypothesis import given, settings
from hypothesis import strategies as st

from luong import Seq2Seq, Vocab
from luong.config.search import SearchOptions
from luong.model.ensemble import encode_texts
from luong.search import (
    Hypothesis,
    beam_search,
    coverage_penalty,
    decode,
    decode_batches,
    default_max_len,
    greedy_search,
    hypothesis_symbols,
    hypothesis_text,
    length_penalty,
    replace_unknowns,
    search_beams,
    source_symbols,
)
from luong.search.beam import Proposal, TopK
from luong.translation.translator import translate, translate_nbest

SETTINGS = settings(max_examples=60, deadline=None)


@dataclass(frozen=True)
class Case:
    """A random small model and a batch for it."""

    cell: str
    attention: str
    input_feed: bool
    seed: int
    scale: float  # the weights are multiplied by it: larger gives peakier distributions
    eos_bias: float  # added to EOS's output bias: outputs stop early (> 0) or late (< 0)
    lengths: tuple[int, ...]

    def model(self) -> Seq2Seq:
        fields = {"cell": self.cell, "attention": self.attention, "input_feed": self.input_feed}
        model = small_model(self.seed, SRC_SPACE, **fields).double()
        with torch.no_grad():
            for param in model.parameters():
                param.mul_(self.scale)
            model.decoder.out.bias[Vocab.eos_id] += self.eos_bias
        return model

    def batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        return source_batch(self.lengths, self.seed, vocab=SRC_SPACE, eos=True)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    return Case(
        cell=draw(st.sampled_from(["lstm", "gru"])),
        attention=draw(st.sampled_from(["dot", "general", "concat", "bahdanau"])),
        input_feed=draw(st.booleans()),
        seed=draw(st.integers(0, 10_000)),
        scale=draw(st.sampled_from([1.0, 3.0])),
        eos_bias=draw(st.sampled_from([-1.0, 0.0, 1.5])),
        lengths=tuple(draw(st.lists(st.integers(1, 9), min_size=1, max_size=5))),
    )


LIVELY = Case("gru", "general", True, seed=1, scale=3.0, eos_bias=-1.0, lengths=(7, 2, 5, 9, 3, 6))
MAX_LEN = 12


def recomputed_score(hyp: Hypothesis, alpha: float, beta: float) -> float:
    """s(Y, X) from the hypothesis' own fields, by hand."""
    log_p = math.fsum(hyp.log_probs)
    lp = ((5 + len(hyp.tokens)) / 6) ** alpha
    coverage = hyp.attention.double().sum(0).tolist()
    cp = beta * math.fsum(math.log(min(c, 1.0)) for c in coverage)
    return log_p / lp + cp


# --- the properties -------------------------------------------------------------------------------


@SETTINGS
@given(cases())
def test_beam_size_one_is_greedy(case: Case) -> None:
    model = case.model()
    src, lengths = case.batch()
    greedy = greedy_search(model, src, lengths, MAX_LEN)
    beam = beam_search(model, src, lengths, SearchOptions(beam=1), MAX_LEN)
    assert [len(hyps) for hyps in beam] == [1] * len(greedy)
    for g, (b,) in zip(greedy, beam, strict=True):
        assert b.tokens == g.tokens
        assert b.score == pytest.approx(g.score, abs=1e-6)
        torch.testing.assert_close(b.attention, g.attention, atol=1e-9, rtol=0)


@SETTINGS
@given(cases(), st.integers(2, 5))
def test_best_beam_is_never_below_greedy(case: Case, beam_size: int) -> None:
    model = case.model()
    src, lengths = case.batch()
    greedy = greedy_search(model, src, lengths, MAX_LEN)
    beam = beam_search(model, src, lengths, SearchOptions(beam=beam_size), MAX_LEN)
    for g, hyps in zip(greedy, beam, strict=True):
        best = max(hyps, key=lambda h: h.score)
        assert best is hyps[0]
        assert math.fsum(best.log_probs) >= g.score - 1e-6


@SETTINGS
@given(
    cases(),
    st.integers(1, 5),
    st.data(),
    st.sampled_from([0.0, 0.6, 1.0]),
    st.sampled_from([0.0, 0.2]),
)
def test_nbest_lists_are_sorted_distinct_and_scored(
    case: Case, beam_size: int, data: st.DataObject, alpha: float, beta: float
) -> None:
    n_best = data.draw(st.integers(1, beam_size))
    model = case.model()
    src, lengths = case.batch()
    options = SearchOptions(beam=beam_size, nbest=n_best, alpha=alpha, beta=beta)
    lists = beam_search(model, src, lengths, options, MAX_LEN)
    assert len(lists) == len(case.lengths)
    for b, hyps in enumerate(lists):
        assert len(hyps) == n_best  # V = 15 >= k: the beam always fills
        scores = [h.score for h in hyps]
        assert scores == sorted(scores, reverse=True)
        assert len({tuple(h.tokens) for h in hyps}) == len(hyps)
        for hyp in hyps:
            assert 1 <= len(hyp.tokens) <= MAX_LEN
            assert Vocab.eos_id not in hyp.tokens[:-1]
            if hyp.tokens[-1] != Vocab.eos_id:
                assert len(hyp.tokens) == MAX_LEN  # open at max_len
            assert len(hyp.log_probs) == len(hyp.tokens)
            assert all(lp <= 0.0 for lp in hyp.log_probs)
            assert hyp.attention.shape == (len(hyp.tokens), case.lengths[b])
            assert hyp.score == pytest.approx(recomputed_score(hyp, alpha, beta), abs=1e-9)


@pytest.mark.parametrize(
    ("beam_size", "n_best", "alpha", "beta"),
    [(4, 3, 0.0, 0.0), (3, 1, 0.6, 0.0), (5, 2, 1.0, 0.2)],
)
def test_sentence_alone_equals_sentence_in_batch(
    beam_size: int, n_best: int, alpha: float, beta: float
) -> None:
    model = LIVELY.model()
    src, lengths = LIVELY.batch()
    options = SearchOptions(beam=beam_size, nbest=n_best, alpha=alpha, beta=beta)
    together = beam_search(model, src, lengths, options, MAX_LEN)
    for b, n in enumerate(LIVELY.lengths):
        (alone,) = beam_search(model, src[b : b + 1, :n], lengths[b : b + 1], options, MAX_LEN)
        assert [h.tokens for h in together[b]] == [h.tokens for h in alone]
        for x, y in zip(together[b], alone, strict=True):
            assert x.score == pytest.approx(y.score, abs=1e-5)
            torch.testing.assert_close(x.attention, y.attention, atol=1e-6, rtol=0)
    assert len({tuple(hyps[0].tokens) for hyps in together}) > 1  # they decode differently


@SETTINGS
@given(cases(), st.integers(1, 4), st.sampled_from([0.0, 0.3]))
def test_every_attention_row_sums_to_one_over_real_positions(
    case: Case, beam_size: int, beta: float
) -> None:
    model = case.model()
    src, lengths = case.batch()
    options = SearchOptions(beam=beam_size, beta=beta)
    for b, hyps in enumerate(beam_search(model, src, lengths, options, MAX_LEN)):
        for hyp in hyps:
            assert hyp.attention.shape == (len(hyp.tokens), case.lengths[b])
            assert bool((hyp.attention >= 0).all())
            torch.testing.assert_close(
                hyp.attention.sum(-1), torch.ones(len(hyp.tokens)).double(), atol=1e-9, rtol=0
            )


FAMILY = (
    [(attention, "none") for attention in ("location", "dot", "scaled_dot", "general", "concat")]
    + [("bahdanau", "none")]
    + [
        (attention, local)
        for local in ("monotonic", "predictive")
        for attention in ("dot", "general")
    ]
)


@pytest.mark.parametrize(("attention", "local"), FAMILY)
@pytest.mark.parametrize("input_feed", [True, False])
def test_beam_log_probs_and_attention_equal_teacher_forcing(
    attention: str, local: str, input_feed: bool
) -> None:
    """The beams of a sentence attend to its memory together, in one batched product
    (``Memory.for_beams``), open slots or all: every hypothesis of the n-best lists has the
    log-probabilities and attention rows of the teacher-forced forward pass over its tokens,
    for the whole attention family (local-m's window at the step's position for every beam)."""
    model = small_model(
        5, SRC_SPACE, attention=attention, local=local, window=2, input_feed=input_feed
    ).double()
    with torch.no_grad():
        for param in model.parameters():
            param.mul_(3.0)
    src, lengths = source_batch((7, 3, 9, 5, 8), seed=2, vocab=SRC_SPACE, eos=True)
    lists = beam_search(model, src, lengths, SearchOptions(beam=4, nbest=3), MAX_LEN)
    checked = 0
    for b, hyps in enumerate(lists):
        length = int(lengths[b])
        for hyp in hyps:
            tgt_in = torch.tensor([[Vocab.bos_id, *hyp.tokens[:-1]]])
            with torch.no_grad():
                memory, state = model.encode(src[b : b + 1, :length], lengths[b : b + 1])
                logits, weights = model.decoder(tgt_in, state, memory)
            log_probs = logits[0].log_softmax(-1)[torch.arange(len(hyp.tokens)), hyp.tokens]
            torch.testing.assert_close(
                torch.tensor(hyp.log_probs, dtype=torch.float64), log_probs, atol=1e-6, rtol=0
            )
            torch.testing.assert_close(hyp.attention.double(), weights[0], atol=1e-9, rtol=0)
            checked += 1
    assert checked == 3 * len(lists)


@SETTINGS
@given(cases(), st.integers(2, 5), st.sampled_from([(0.0, 0.0), (0.6, 0.0), (0.0, 0.3)]))
def test_greedy_bound_pruning_keeps_the_best_hypothesis(
    case: Case, beam_size: int, penalties: tuple[float, float]
) -> None:
    model = case.model()
    src, lengths = case.batch()
    alpha, beta = penalties
    options = SearchOptions(beam=beam_size, alpha=alpha, beta=beta)
    pruned = beam_search(model, src, lengths, options, MAX_LEN)
    full = beam_search(model, src, lengths, options, MAX_LEN, prune=False)
    for (p,), (f,) in zip(pruned, full, strict=True):
        assert p.tokens == f.tokens
        assert p.score == pytest.approx(f.score, abs=1e-9)


def test_pruning_and_finished_sentences_save_decoder_rows() -> None:
    """The decoder runs only the open beams: beam 0 at the first step, fewer rows once slots
    finish, and fewer again with the greedy bound (whose greedy search runs first)."""
    model = Case("gru", "dot", True, 3, scale=6.0, eos_bias=-3.0, lengths=(5, 6, 7, 8)).model()
    src, lengths = source_batch((5, 6, 7, 8), seed=3, vocab=SRC_SPACE, eos=True)
    rows: list[int] = []
    step = model.decoder.step

    def counting(tokens: torch.Tensor, *args: object) -> object:
        rows.append(tokens.shape[0])
        return step(tokens, *args)  # type: ignore[arg-type]

    model.decoder.step = counting  # type: ignore[method-assign]
    greedy_search(model, src, lengths, MAX_LEN)
    greedy_rows = list(rows)
    rows.clear()
    pruned = beam_search(model, src, lengths, SearchOptions(beam=5), MAX_LEN)
    assert rows[: len(greedy_rows)] == greedy_rows  # the bound's greedy search comes first
    pruned_rows = rows[len(greedy_rows) :]
    rows.clear()
    full = beam_search(model, src, lengths, SearchOptions(beam=5), MAX_LEN, prune=False)
    assert [h[0].tokens for h in pruned] == [h[0].tokens for h in full]
    assert rows[0] == pruned_rows[0] == 4  # the first step runs beam 0 of each sentence
    assert max(rows) == 4 * 5
    assert min(rows[1:]) < 4 * 5  # finished slots and sentences are not computed
    assert sum(pruned_rows) < sum(rows)


# --- penalties ------------------------------------------------------------------------------------


def test_length_penalty_is_gnmt() -> None:
    assert length_penalty(7, 0.0) == 1.0
    assert length_penalty(1, 1.0) == 1.0  # (5 + 1) / 6
    assert length_penalty(7, 0.6) == pytest.approx(2.0**0.6)  # ((5 + 7) / 6) ** 0.6
    assert length_penalty(13, 0.5) == pytest.approx(math.sqrt(3.0))


def test_length_penalty_in_beam_scores_by_hand() -> None:
    model = LIVELY.model()
    src, lengths = LIVELY.batch()
    plain = beam_search(model, src, lengths, SearchOptions(beam=3, nbest=3), MAX_LEN)
    for alpha in (0.6, 1.0):
        scored = beam_search(
            model, src, lengths, SearchOptions(beam=3, nbest=3, alpha=alpha), MAX_LEN
        )
        for hyps in scored:
            for hyp in hyps:
                lp = ((5 + len(hyp.tokens)) / 6) ** alpha
                assert hyp.score == pytest.approx(math.fsum(hyp.log_probs) / lp, abs=1e-9)
    # alpha = 0 ranks by log P alone
    for hyps in plain:
        for hyp in hyps:
            assert hyp.score == pytest.approx(math.fsum(hyp.log_probs), abs=1e-9)


def test_coverage_penalty_by_hand_and_finite_with_padding() -> None:
    coverage = torch.tensor([[0.5, 1.5, 0.25, 0.0], [1.0, 0.0, 0.0, 0.0]])  # [B=2, S=4]
    mask = torch.tensor([[True, True, True, False], [True, True, False, False]])
    got = coverage_penalty(coverage, mask, 0.2)
    # row 0: log 0.5 + log 1 + log 0.25, the padded 0 left out; row 1: a real position
    # the attention never reached gives log(tiny), large but finite.
    tiny = torch.finfo(torch.float32).tiny
    expected = [0.2 * (math.log(0.5) + math.log(0.25)), 0.2 * math.log(tiny)]
    assert torch.isfinite(got).all()
    assert got.tolist() == pytest.approx(expected, rel=1e-6)
    assert coverage_penalty(coverage, mask, 0.0).tolist() == [0.0, 0.0]
    # beam search on a padded batch with beta: every score finite and as computed by hand
    model = LIVELY.model()
    src, lengths = LIVELY.batch()
    for hyps in beam_search(model, src, lengths, SearchOptions(beam=3, nbest=2, beta=0.5), MAX_LEN):
        for hyp in hyps:
            assert math.isfinite(hyp.score)
            assert hyp.score == pytest.approx(recomputed_score(hyp, 0.0, 0.5), abs=1e-9)


# --- min_len, max_len, small vocabularies ---------------------------------------------------------


def test_min_len_forbids_early_eos() -> None:
    case = Case("lstm", "concat", True, seed=4, scale=1.0, eos_bias=50.0, lengths=(4, 2))
    model = case.model()
    src, lengths = case.batch()
    assert [h[0].tokens for h in beam_search(model, src, lengths, SearchOptions(beam=3), 9)] == [
        [2],
        [2],
    ]
    for min_len in (1, 3, 8):
        options = SearchOptions(beam=3, nbest=3, min_len=min_len)
        for hyps in beam_search(model, src, lengths, options, 9):
            assert len(hyps) == 3
            for hyp in hyps:
                assert hyp.tokens[-1] == Vocab.eos_id  # EOS right after min_len tokens
                assert len(hyp.tokens) == min_len + 1


def test_open_beams_count_at_max_len() -> None:
    case = Case("gru", "dot", False, seed=5, scale=3.0, eos_bias=-100.0, lengths=(4, 2, 6))
    model = case.model()
    src, lengths = case.batch()
    for max_len in (1, 4):
        for hyps in beam_search(model, src, lengths, SearchOptions(beam=4, nbest=4), max_len):
            assert len(hyps) == 4
            assert all(len(h.tokens) == max_len and Vocab.eos_id not in h.tokens for h in hyps)
            assert len({tuple(h.tokens) for h in hyps}) == 4


def test_vocabulary_smaller_than_the_beam() -> None:
    model = small_model(0, SRC_SPACE, Vocab(["x"]), attention="dot")  # V = 5 < k = 8
    src, lengths = source_batch((3, 5), vocab=SRC_SPACE, eos=True)
    for hyps in beam_search(model, src, lengths, SearchOptions(beam=8, nbest=8), 3):
        assert 1 <= len(hyps) <= 8
        assert len({tuple(h.tokens) for h in hyps}) == len(hyps)
        assert all(math.isfinite(h.score) for h in hyps)


# --- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"beam": 0}, "beam: expected an int >= 1, got 0"),
        ({"beam": 2.0}, "beam: expected an int >= 1, got 2.0"),
        ({"beam": 2, "nbest": 3}, "nbest: expected at most beam = 2, got 3"),
        ({"nbest": 0}, "nbest: expected an int >= 1, got 0"),
        ({"max_len": 0}, "max_len: expected an int >= 1, got 0"),
        ({"alpha": -0.5}, "alpha: expected a finite number >= 0, got -0.5"),
        ({"beta": float("nan")}, "beta: expected a finite number >= 0, got nan"),
        ({"min_len": -1}, "min_len: expected an int >= 0, got -1"),
        ({"min_len": 5, "max_len": 5}, "min_len: expected < max_len = 5"),
    ],
)
def test_bad_options_name_the_value(options: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"beam": 3, "max_len": 5, **options}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SearchOptions(**arguments)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_len: expected an int >= 1, got 0"):
        beam_search(
            LIVELY.model(), *source_batch((3, 2), vocab=SRC_SPACE, eos=True), SearchOptions(), 0
        )


def test_bad_batch_is_rejected() -> None:
    model = LIVELY.model()
    src, lengths = source_batch((3, 2), vocab=SRC_SPACE, eos=True)
    with pytest.raises(ValueError, match="src_lengths: expected shape"):
        beam_search(model, src, lengths[:1], SearchOptions(beam=2), 5)


# --- text in, hypotheses out ----------------------------------------------------------------------


TEXTS = ["abc", "", "jihgfedcba", "   ", "a", "bad cab"]


def test_decode_keeps_order_and_gives_empty_inputs_no_hypotheses() -> None:
    model = LIVELY.model()
    options = SearchOptions(beam=3, nbest=2, max_len=10)
    lists = decode(model, TEXTS, options, batch_size=2)
    assert [len(h) for h in lists] == [0 if not t.strip() else 2 for t in TEXTS]
    for text, hyps in zip(TEXTS, lists, strict=True):
        if text.strip():
            (alone,) = decode(model, [text], options)
            assert [h.tokens for h in hyps] == [h.tokens for h in alone]
    greedy = decode(model, TEXTS, SearchOptions(max_len=10))
    one_beam = decode(model, TEXTS, SearchOptions(beam=1, alpha=0.5, max_len=10))  # no shortcut
    assert [[h.tokens for h in hyps] for hyps in greedy] == [
        [h.tokens for h in hyps] for hyps in one_beam
    ]
    with pytest.raises(TypeError, match="options: expected SearchOptions, got dict"):
        decode(model, TEXTS, {"nbest": 2})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size: expected an int >= 1, got 0"):
        decode(model, TEXTS, batch_size=0)


def test_decode_batches_in_windows_equal_decode() -> None:
    model = LIVELY.model()
    options = SearchOptions(beam=3, nbest=2, max_len=10)
    whole = decode(model, TEXTS, options)
    for window in (1, 2, 3):
        got: dict[int, list[Hypothesis]] = {}
        batches = decode_batches(
            model,
            TEXTS,
            options,
            batch_size=2,
            window=window,
            attention=False,
        )
        for indices, lists in batches:
            assert max(indices) < (min(indices) // window + 1) * window  # one window each
            got.update(zip(indices, lists, strict=True))
        assert sorted(got) == list(range(len(TEXTS)))
        for i, hyps in got.items():
            assert [h.tokens for h in hyps] == [h.tokens for h in whole[i]]
            assert [h.score for h in hyps] == pytest.approx([h.score for h in whole[i]])
            assert all(h.attention.shape == (len(h.tokens), 0) for h in hyps)
    with pytest.raises(ValueError, match="window: expected an int >= 1, got 0"):
        decode_batches(model, TEXTS, window=0)


def test_translate_with_beam_and_nbest() -> None:
    model = LIVELY.model()
    greedy = translate(model, TEXTS, SearchOptions(max_len=10))
    assert translate(model, TEXTS, SearchOptions(beam=1, alpha=0.5, max_len=10)) == greedy
    best = translate(model, TEXTS, SearchOptions(beam=4, alpha=0.6, max_len=10))
    options = SearchOptions(beam=4, nbest=3, alpha=0.6, max_len=10)
    nbest = translate_nbest(model, TEXTS, options)
    assert len(best) == len(nbest) == len(TEXTS)
    for text, one, many in zip(TEXTS, best, nbest, strict=True):
        if not text.strip():
            assert one == "" and many == []
        else:
            assert len(many) == 3 and many[0] == one
    lists = decode(model, TEXTS, options)
    assert [[hypothesis_text(model, h) for h in hyps] for hyps in lists] == nbest


# --- symbols and unknown-word replacement ---------------------------------------------------------


def test_replace_unknowns_copies_the_most_attended_source_token() -> None:
    attention = torch.tensor(
        [
            [0.1, 0.7, 0.1, 0.1],  # -> "b"
            [0.6, 0.2, 0.1, 0.1],  # not an unk: kept
            [0.0, 0.1, 0.3, 0.6],  # the last column (source EOS) is never copied -> "c"
        ]
    )
    symbols = ["<unk>", "y", "<unk>"]
    assert replace_unknowns(symbols, ["a", "b", "c"], attention) == ["b", "y", "c"]
    with pytest.raises(ValueError, match=r"attention: expected \[T >= 3, S\], got \(2, 4\)"):
        replace_unknowns(symbols, ["a", "b", "c"], attention[:2])


def test_hypothesis_text_with_replaced_unknowns_in_a_token_vocabulary() -> None:
    src_vocab = Vocab(["das", "ist", "gut"], tokens="space")
    tgt_vocab = Vocab(["this", "is", "good"], tokens="space")
    model = small_model(0, src_vocab, tgt_vocab, attention="dot")
    source = "das ist Kafka"
    assert source_symbols(model, source) == ["das", "ist", "Kafka", "</s>"]
    unk, this, is_ = Vocab.unk_id, tgt_vocab.id("this"), tgt_vocab.id("is")
    attention = torch.tensor(
        [[0.8, 0.1, 0.05, 0.05], [0.1, 0.8, 0.05, 0.05], [0.1, 0.1, 0.7, 0.1], [0, 0, 0, 1.0]]
    )
    hyp = Hypothesis([this, is_, unk, Vocab.eos_id], -1.0, [-0.25] * 4, attention)
    assert hypothesis_symbols(model, hyp) == ["this", "is", "<unk>", "</s>"]
    assert hypothesis_text(model, hyp) == "this is <unk>"
    assert hypothesis_text(model, hyp, source) == "this is Kafka"
    assert hypothesis_symbols(model, hyp, source) == ["this", "is", "Kafka", "</s>"]
    options = SearchOptions(beam=2, replace_unk=True, max_len=6)
    translated = translate(model, [source], options)
    assert "<unk>" not in translated[0]


@pytest.mark.parametrize("token", [Vocab.pad_id, Vocab.bos_id])
def test_pad_and_bos_are_never_emitted(token: int) -> None:
    model = LIVELY.model()
    with torch.no_grad():
        model.decoder.out.bias[token] += 100.0  # the model's favourite by far
    src, lengths = LIVELY.batch()
    outputs = [h.tokens for h in greedy_search(model, src, lengths, MAX_LEN)]
    outputs += [
        h.tokens
        for hs in beam_search(model, src, lengths, SearchOptions(beam=3, nbest=3), MAX_LEN)
        for h in hs
    ]
    assert outputs and all(token not in tokens for tokens in outputs)
    # The reported log-probabilities stay the model's own: with PAD or BOS taking nearly all
    # the mass, every chosen token is very improbable.
    greedy = greedy_search(model, src, lengths, MAX_LEN)
    assert all(lp < -50 for hyp in greedy for lp in hyp.log_probs)


def test_per_sentence_limits_make_outputs_independent_of_the_batch() -> None:
    """Without max_len each sentence gets its own limit (twice its length plus 10), so an
    output that never reaches EOS is cut at the same place alone and in any batch."""
    model = LIVELY.model()
    with torch.no_grad():
        model.decoder.out.bias[Vocab.eos_id] -= 100.0  # never ends
    short, long = "ab", "abcdefghijabcdefghij"
    for beam_size in (1, 3):
        options = SearchOptions(beam=beam_size)
        alone = decode(model, [short], options)[0][0]
        beside = decode(model, [short, long], options)[0][0]
        assert len(alone.tokens) == 2 * (len(short) + 1) + 10
        assert beside.tokens == alone.tokens
    src, lengths = source_batch((3, 7), vocab=SRC_SPACE, eos=True)
    limits = torch.tensor([4, 9])
    for hyps in (
        [[h] for h in greedy_search(model, src, lengths, limits)],
        beam_search(model, src, lengths, SearchOptions(beam=3, nbest=2), limits),
    ):
        assert [len(h[0].tokens) for h in hyps] == [4, 9]
    with pytest.raises(ValueError, match=r"max_len: expected an int >= 1 or integers >= 1"):
        greedy_search(model, src, lengths, torch.tensor([4]))


# -- the loop's strategy ----------------------------------------------------------------------


@dataclass(frozen=True)
class Without(TopK):
    """Plain beam search that never proposes ``token``: a ``Strategy`` of beam search's
    loop, as lexically constrained search is one."""

    token: int

    def propose(self, log_probs: torch.Tensor, live: torch.Tensor, k: int) -> Proposal:
        log_probs[:, self.token] = float("-inf")
        return super().propose(log_probs, live, k)


def test_a_strategy_chooses_the_candidates_of_the_loop() -> None:
    # Model 3 writes 3s all the way; kept from proposing them, it writes none.
    model = small_model(3)
    three = TGT.id("3")
    options = SearchOptions(beam=3, nbest=2, alpha=0.6)
    with torch.inference_mode():
        memory, state, lengths = encode_texts(model, ["abc", "jihgfe", "a", "cafe"])
        limits = default_max_len(lengths)
        plain = search_beams(model, memory, state, lengths, limits, options, [])
        top_k = search_beams(model, memory, state, lengths, limits, options, [], strategy=TopK())
        without = search_beams(
            model, memory, state, lengths, limits, options, [], strategy=Without(three)
        )
    assert [[h.tokens for h in hyps] for hyps in top_k] == [
        [h.tokens for h in hyps] for hyps in plain
    ]
    assert all(three in hyps[0].tokens for hyps in plain)
    assert all(len(hyps) == 2 and three not in h.tokens for hyps in without for h in hyps)
