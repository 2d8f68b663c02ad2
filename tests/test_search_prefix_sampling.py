"""Prefix-constrained decoding and sampling (the ``prefix`` and ``sample`` options of
``SearchOptions``, read by ``beam_search``, ``sample_search`` and ``decode``)."""

from __future__ import annotations

import pytest
import torch
from helpers import SRC_SPACE, TGT, small_model, source_batch

from luong import Vocab
from luong.config.search import SearchOptions
from luong.data.batching import encode_sources
from luong.model.ensemble import Ensemble
from luong.search import (
    beam_search,
    decode,
    greedy_search,
    hypothesis_text,
    length_penalty,
    sample_search,
)
from luong.translation.translator import Translator, translate, translate_nbest


def as_text(ids: list[int]) -> str:
    """The target text of ids (the test vocabulary's characters)."""
    return "".join(TGT.symbols_of(ids))


def _forced_log_probs(model, src, lengths, tokens: list[int]) -> list[float]:
    """The model's log-probability of each of ``tokens`` for sentence 0, teacher-forced
    through ``Seq2Seq.forward`` (an independent path: the fast decoder)."""
    tgt_in = torch.tensor([[Vocab.bos_id, *tokens[:-1]]])
    with torch.inference_mode():
        logits = model(src[:1], lengths[:1], tgt_in)
    log_probs = torch.log_softmax(logits.float(), dim=-1)[0]
    return [float(log_probs[t, token]) for t, token in enumerate(tokens)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_prefix_that_greedy_would_take_gives_greedys_output(seed: int) -> None:
    model = small_model(seed=seed)
    src, lengths = source_batch([5, 3, 7, 2], seed=seed, eos=True)
    greedy = greedy_search(model, src, lengths, 12)
    for b, hyp in enumerate(greedy):
        # Every prefix shorter than the output (an output always goes on after its prefix).
        ordinary = [t for t in hyp.tokens if t != Vocab.eos_id][: len(hyp.tokens) - 1]
        for k in range(len(ordinary) + 1):
            options = SearchOptions(prefix=as_text(ordinary[:k]))
            found = beam_search(model, src[b : b + 1], lengths[b : b + 1], options, 12)
            assert found[0][0].tokens == hyp.tokens
            assert found[0][0].score == pytest.approx(hyp.score, abs=1e-5)
            assert torch.allclose(found[0][0].attention, hyp.attention, atol=1e-6)


def test_a_forced_prefix_starts_every_output_and_is_scored_as_teacher_forcing() -> None:
    model = small_model(seed=3)
    src, lengths = source_batch([6, 4], seed=3, eos=True)
    prefix = [TGT.encode("7-", eos=False)[0], TGT.encode("-", eos=False)[0]]
    for beam in (1, 4):
        options = SearchOptions(beam=beam, nbest=beam, prefix=as_text(prefix))
        lists = beam_search(model, src, lengths, options, 10)
        for b, hyps in enumerate(lists):
            assert len(hyps) == beam
            assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
            for h in hyps:
                assert h.tokens[:2] == prefix
                assert len(h.log_probs) == len(h.tokens) == h.attention.shape[0]
                assert h.attention.shape[1] == int(lengths[b])
                assert torch.allclose(h.attention.sum(1), torch.ones(len(h.tokens)), atol=1e-5)
                assert h.score == pytest.approx(
                    sum(h.log_probs) / length_penalty(len(h.tokens), 0.0), abs=1e-5
                )
        expected = _forced_log_probs(model, src, lengths, lists[0][0].tokens)
        assert lists[0][0].log_probs == pytest.approx(expected, abs=1e-5)


def test_beam_search_from_an_empty_prefix_is_beam_search() -> None:
    model = small_model(seed=1)
    src, lengths = source_batch([5, 3, 7], seed=1, eos=True)
    plain = beam_search(model, src, lengths, SearchOptions(beam=4, nbest=3), 12)
    found = beam_search(model, src, lengths, SearchOptions(beam=4, nbest=3, prefix=""), 12)
    assert [[h.tokens for h in hyps] for hyps in found] == [
        [h.tokens for h in hyps] for hyps in plain
    ]


def test_sampling_is_reproducible_with_a_seed_and_top_k_1_is_greedy() -> None:
    model = small_model(seed=0, src=SRC_SPACE)
    texts = ["abc", "de fg", "hij a", "j"]
    greedy = decode(model, texts)
    drawing = SearchOptions(sample=True, nbest=3, seed=5, temperature=1.5)
    first = decode(model, texts, drawing)
    again = decode(model, texts, drawing)
    assert [[h.tokens for h in hyps] for hyps in first] == [
        [h.tokens for h in hyps] for hyps in again
    ]
    assert all(len(hyps) == 3 for hyps in first)
    assert len({tuple(h.tokens) for hyps in first for h in hyps}) > len(texts)  # they vary
    top1 = decode(model, texts, SearchOptions(sample=True, nbest=2, top_k=1, seed=0))
    assert [[h.tokens for h in hyps] for hyps in top1] == [[g[0].tokens] * 2 for g in greedy]
    assert decode(model, ["", "abc"], SearchOptions(sample=True, seed=1))[0] == []


def test_a_text_prefix_is_read_with_the_target_vocabulary() -> None:
    model = small_model(seed=2, src=SRC_SPACE)
    lists = decode(model, ["abc de", "f"], SearchOptions(prefix="12-", beam=2, nbest=2))
    for hyps in lists:
        for h in hyps:
            assert model.tgt_vocab.symbols_of(h.tokens[:3]) == ["1", "2", "-"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sample": True, "beam": 2}, "beam: sampling draws one token a step, expected 1, got 2"),
        ({"sample": True, "temperature": 0}, "temperature: expected a finite number > 0, got 0"),
        ({"sample": True, "temperature": 101.0}, "temperature: expected at most 100, got 101.0"),
        ({"sample": True, "top_k": 0}, "top_k: expected an int >= 1, got 0"),
        ({"sample": True, "seed": -1}, "seed: expected an int >= 0, got -1"),
        ({"prefix": "1", "min_len": 2}, "min_len: not with a prefix or sampling, got 2"),
        ({"prefix": "1", "nbest": 2}, "nbest: expected at most beam = 1, got 2"),
    ],
)
def test_bad_options_are_named(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as error:
        SearchOptions(**options)  # type: ignore[arg-type]
    assert str(error.value) == message


def test_a_prefix_outside_the_target_vocabulary_is_named() -> None:
    model = small_model(src=SRC_SPACE)
    message = "prefix: expected symbols of the target vocabulary, got unknown ['x']"
    with pytest.raises(ValueError) as error:
        decode(model, ["abc"], SearchOptions(prefix="1x"))
    assert str(error.value) == message
    src, lengths = source_batch([3], eos=True)
    with pytest.raises(ValueError, match=r"prefix: expected symbols of the target vocabulary"):
        beam_search(small_model(), src, lengths, SearchOptions(prefix="<s>"), 5)
    with pytest.raises(TypeError, match="prefix: expected a string, got list"):
        SearchOptions(prefix=[5])  # type: ignore[arg-type]


def test_prefix_and_sampling_decode_an_ensemble() -> None:
    """An ensemble of one member decodes as the member does; of two, every output still
    starts with the prefix and the draws repeat with their seed."""
    one = small_model(seed=6, src=SRC_SPACE)
    two = small_model(seed=7, src=SRC_SPACE)
    texts = ["abc de", "fgh", "ij a"]
    for options in (
        SearchOptions(prefix="3-"),
        SearchOptions(prefix="3-", beam=3, nbest=2),
        SearchOptions(sample=True, seed=4, nbest=2, top_k=3),
    ):
        alone = decode(one, texts, options)
        solo = decode(Ensemble([one]), texts, options)
        assert [[h.tokens for h in hyps] for hyps in solo] == [
            [h.tokens for h in hyps] for hyps in alone
        ]
        both = decode(Ensemble([one, two]), texts, options)
        again = decode(Ensemble([one, two]), texts, options)
        assert [[h.tokens for h in hyps] for hyps in both] == [
            [h.tokens for h in hyps] for hyps in again
        ]
        for hyps in both:
            for h in hyps:
                assert len(h.tokens) == len(h.log_probs) == h.attention.shape[0]
                if options.prefix:
                    assert one.tgt_vocab.symbols_of(h.tokens[:2]) == ["3", "-"]


def test_translate_and_the_translator_take_the_prefix_and_sampling_options() -> None:
    model = small_model(3, src=SRC_SPACE)
    texts = ["abc", "", "jihg"]
    continuing = SearchOptions(prefix="1-", beam=2)
    continued = translate(model, texts, continuing)
    expected = [
        hypothesis_text(model, hyps[0]) if hyps else "" for hyps in decode(model, texts, continuing)
    ]
    assert continued == expected and all(out.startswith("1-") for out in continued if out)
    drawing = SearchOptions(sample=True, nbest=3, seed=5, top_k=4)
    drawn = Translator(model).translate_nbest(texts, drawing)
    again = translate_nbest(model, texts, drawing)
    assert drawn == again and [len(d) for d in drawn] == [3, 0, 3]


def test_sample_search_over_tensors_draws_as_decode_does() -> None:
    """The same sources, in the same order, with the same seed: the same draws as ``decode``
    (which encodes the texts and samples in input order)."""
    model = small_model(seed=5, src=SRC_SPACE)
    texts = ["abc", "de fg", "hij a"]
    drawing = SearchOptions(sample=True, nbest=2, seed=11, temperature=1.3, prefix="1")
    src, lengths = encode_sources(model.src_vocab, texts, model.device)
    tensor = sample_search(model, src, lengths, drawing)
    assert [[h.tokens for h in hs] for hs in tensor] == [
        [h.tokens for h in hs] for hs in decode(model, texts, drawing)
    ]
    assert all(h.tokens[0] == TGT.id("1") for hs in tensor for h in hs)
    with pytest.raises(ValueError, match="^sample: expected true; use beam_search$"):
        sample_search(model, src, lengths, SearchOptions())
    with pytest.raises(ValueError, match="^sample: expected false; use sample_search$"):
        beam_search(model, src, lengths, drawing)
    with pytest.raises(TypeError, match="options: expected SearchOptions, got NoneType"):
        beam_search(model, src, lengths, None)  # type: ignore[arg-type]
