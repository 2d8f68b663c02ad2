"""Prefix-constrained decoding and sampling (``luong.search.constrained_search`` and the
``prefix`` / ``sample`` options of ``decode``)."""

from __future__ import annotations

import pytest
import torch
from helpers import SRC_SPACE, TGT, small_model, source_batch

from luong import Vocab
from luong.ensemble import Ensemble
from luong.search import (
    beam_search,
    constrained_search,
    decode,
    greedy_search,
    hypothesis_text,
    length_penalty,
)
from luong.translator import Translator, translate


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
            found = constrained_search(
                model, src[b : b + 1], lengths[b : b + 1], 12, prefix=ordinary[:k]
            )
            assert found[0][0].tokens == hyp.tokens
            assert found[0][0].score == pytest.approx(hyp.score, abs=1e-5)
            assert torch.allclose(found[0][0].attention, hyp.attention, atol=1e-6)


def test_a_forced_prefix_starts_every_output_and_is_scored_as_teacher_forcing() -> None:
    model = small_model(seed=3)
    src, lengths = source_batch([6, 4], seed=3, eos=True)
    prefix = [TGT.encode("7-", eos=False)[0], TGT.encode("-", eos=False)[0]]
    for beam in (1, 4):
        lists = constrained_search(
            model, src, lengths, 10, prefix=prefix, beam_size=beam, n_best=beam
        )
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
    plain = beam_search(model, src, lengths, 4, 12, n_best=3)
    found = constrained_search(model, src, lengths, 12, beam_size=4, n_best=3)
    assert [[h.tokens for h in hyps] for hyps in found] == [
        [h.tokens for h in hyps] for hyps in plain
    ]


def test_sampling_is_reproducible_with_a_seed_and_top_k_1_is_greedy() -> None:
    model = small_model(seed=0, src=SRC_SPACE)
    texts = ["abc", "de fg", "hij a", "j"]
    greedy = decode(model, texts)
    first = decode(model, texts, sample=True, n_best=3, seed=5, temperature=1.5)
    again = decode(model, texts, sample=True, n_best=3, seed=5, temperature=1.5)
    assert [[h.tokens for h in hyps] for hyps in first] == [
        [h.tokens for h in hyps] for hyps in again
    ]
    assert all(len(hyps) == 3 for hyps in first)
    assert len({tuple(h.tokens) for hyps in first for h in hyps}) > len(texts)  # they vary
    top1 = decode(model, texts, sample=True, n_best=2, top_k=1, seed=0)
    assert [[h.tokens for h in hyps] for hyps in top1] == [[g[0].tokens] * 2 for g in greedy]
    assert decode(model, ["", "abc"], sample=True, seed=1)[0] == []


def test_a_text_prefix_is_read_with_the_target_vocabulary() -> None:
    model = small_model(seed=2, src=SRC_SPACE)
    lists = decode(model, ["abc de", "f"], prefix="12-", beam_size=2, n_best=2)
    for hyps in lists:
        for h in hyps:
            assert model.tgt_vocab.symbols_of(h.tokens[:3]) == ["1", "2", "-"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"sample": True, "beam_size": 2},
            "beam_size: sampling draws one token a step, expected 1, got 2",
        ),
        ({"sample": True, "temperature": 0}, "temperature: expected a finite number > 0, got 0"),
        ({"sample": True, "temperature": 101.0}, "temperature: expected at most 100, got 101.0"),
        ({"sample": True, "top_k": 0}, "top_k: expected an int >= 1, got 0"),
        ({"sample": True, "seed": -1}, "seed: expected an int >= 0, got -1"),
        ({"prefix": "1x"}, "prefix: expected symbols of the target vocabulary, got unknown ['x']"),
        ({"prefix": "1", "min_len": 2}, "min_len: not with a prefix or sampling, got 2"),
        ({"prefix": "1", "n_best": 2}, "n_best: expected <= beam_size = 1, got 2"),
    ],
)
def test_bad_options_are_named(options: dict[str, object], message: str) -> None:
    model = small_model(src=SRC_SPACE)
    with pytest.raises(ValueError) as error:
        decode(model, ["abc"], **options)  # type: ignore[arg-type]
    assert str(error.value) == message


def test_bad_prefix_ids_are_named() -> None:
    model = small_model()
    src, lengths = source_batch([3], eos=True)
    with pytest.raises(ValueError, match=r"prefix: expected target ids below 15, not PAD, BOS"):
        constrained_search(model, src, lengths, 5, prefix=[Vocab.eos_id])
    with pytest.raises(TypeError, match="prefix: expected a str, got list"):
        decode(model, ["abc"], prefix=[5])  # type: ignore[arg-type]


def test_prefix_and_sampling_decode_an_ensemble() -> None:
    """An ensemble of one member decodes as the member does; of two, every output still
    starts with the prefix and the draws repeat with their seed."""
    one = small_model(seed=6, src=SRC_SPACE)
    two = small_model(seed=7, src=SRC_SPACE)
    texts = ["abc de", "fgh", "ij a"]
    for options in (
        {"prefix": "3-"},
        {"prefix": "3-", "beam_size": 3, "n_best": 2},
        {"sample": True, "seed": 4, "n_best": 2, "top_k": 3},
    ):
        alone = decode(one, texts, **options)  # type: ignore[arg-type]
        solo = decode(Ensemble([one]), texts, **options)  # type: ignore[arg-type]
        assert [[h.tokens for h in hyps] for hyps in solo] == [
            [h.tokens for h in hyps] for hyps in alone
        ]
        both = decode(Ensemble([one, two]), texts, **options)  # type: ignore[arg-type]
        again = decode(Ensemble([one, two]), texts, **options)  # type: ignore[arg-type]
        assert [[h.tokens for h in hyps] for hyps in both] == [
            [h.tokens for h in hyps] for hyps in again
        ]
        for hyps in both:
            for h in hyps:
                assert len(h.tokens) == len(h.log_probs) == h.attention.shape[0]
                if "prefix" in options:
                    assert one.tgt_vocab.symbols_of(h.tokens[:2]) == ["3", "-"]


def test_translate_and_the_translator_take_the_prefix_and_sampling_options() -> None:
    model = small_model(3, src=SRC_SPACE)
    texts = ["abc", "", "jihg"]
    continued = translate(model, texts, prefix="1-", beam_size=2)
    expected = [
        hypothesis_text(model, hyps[0]) if hyps else ""
        for hyps in decode(model, texts, prefix="1-", beam_size=2)
    ]
    assert continued == expected and all(out.startswith("1-") for out in continued if out)
    drawn = Translator(model).translate(texts, sample=True, n_best=3, seed=5, top_k=4)
    again = translate(model, texts, sample=True, n_best=3, seed=5, top_k=4)
    assert drawn == again and [len(d) for d in drawn] == [3, 0, 3]
