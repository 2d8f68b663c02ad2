"""Word alignments from attention (``luong.translation.alignment``): symbols merged into words for
each kind of vocabulary, each output word linked to the source word with the most attention mass,
Pharaoh lines."""

from __future__ import annotations

import pytest
import torch
from helpers import SRC_SPACE, TGT, small_model

from luong.config.search import SearchOptions
from luong.data.vocab import Vocab
from luong.search import decode
from luong.search.hypothesis import Hypothesis
from luong.search.symbols import hypothesis_text
from luong.translation.alignment import (
    align_words,
    hypothesis_alignment,
    parse_pharaoh,
    pharaoh,
    word_groups,
)

W = "\u2581"


@pytest.mark.parametrize(
    ("symbols", "tokens", "words"),
    [
        (list("ab c"), "char", [[0, 1], [3]]),
        (list(" ab  c "), "char", [[1, 2], [5]]),
        (["ab", "c", "<unk>"], "space", [[0], [1], [2]]),
        ([f"{W}Auth", "ent", "ication", f"{W}token"], "subword", [[0, 1, 2], [3]]),
        # a piece of spaces only separates; a piece with a space inside is in both words
        ([f"{W}a", W, f"{W}b", f"c{W}d"], "subword", [[0], [2, 3], [3]]),
        # byte pieces: the three bytes of one character, a line break's byte separates
        ([f"{W}5", "<0xE2>", "<0x82>", "<0xAC>", "<0x0A>", "x"], "subword", [[0, 1, 2, 3], [5]]),
        # specials spell nothing; <unk> is part of a word
        ([f"{W}a", "<unk>", "</s>", f"{W}b"], "subword", [[0, 1], [3]]),
        ([], "subword", []),
    ],
)
def test_symbols_merge_into_words(symbols: list[str], tokens: str, words: list[list[int]]) -> None:
    assert word_groups(symbols, tokens) == words


def test_diagonal_attention_gives_the_diagonal() -> None:
    # Space vocabularies: a symbol is a word, so diagonal attention links word i to word i.
    src = Vocab(["the", "red", "house", "now"], tokens="space")
    tgt = Vocab(["das", "rote", "Haus", "jetzt"], tokens="space")
    tokens = [4, 5, 6, 7, Vocab.eos_id]
    attention = torch.eye(5)  # the output's EOS attends to the source's EOS
    hyp = Hypothesis(tokens, 0.0, [0.0] * 5, attention)
    links = hypothesis_alignment(hyp, "the red house now", src, tgt)
    assert links == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert pharaoh(links) == "0-0 1-1 2-2 3-3"


def test_pieces_merge_before_the_argmax() -> None:
    # Source words [▁ab c] [▁d], target words [▁x] [▁y z]. Target piece 1 puts most on the
    # source piece ▁d (0.6), target piece 2 on c (0.5); summed over both words' pieces,
    # source word 0 wins (0.2 + 0.2 + 0.3 + 0.5 = 1.2 against 0.6 + 0.2), though the argmax of
    # target piece 1 alone, or of the source words' first pieces, picks ▁d.
    attention = torch.tensor(
        [[0.9, 0.1, 0.0], [0.2, 0.2, 0.6], [0.3, 0.5, 0.2]], dtype=torch.float32
    )
    links = align_words(attention, [[0, 1], [2]], [[0], [1, 2]])
    assert links == [(0, 0), (0, 1)]
    assert align_words(attention[:, 2:], [[0]], [[0], [1, 2]]) == [(0, 0), (0, 1)]
    assert align_words(attention, [], [[0]]) == []


def test_a_real_model_links_every_output_word_once() -> None:
    model = small_model(src=SRC_SPACE, tgt=Vocab(list("0123456789- ")))
    sources = ["ab cd", "abc  de fghij", "j", ""]
    lists = decode(model, sources, SearchOptions(beam=3, max_len=12))
    for source, hyps in zip(sources, lists, strict=True):
        for hyp in hyps:
            links = hypothesis_alignment(hyp, source, model.src_vocab, model.tgt_vocab)
            words = hypothesis_text(model, hyp).split()
            assert [j for _, j in sorted(links, key=lambda link: link[1])] == list(
                range(len(words) if source.split() else 0)
            )
            assert all(0 <= i < len(source.split()) for i, _ in links)


def test_attention_that_was_not_kept_is_refused() -> None:
    model = small_model(tgt=TGT)
    hyp = Hypothesis([4, 5, Vocab.eos_id], 0.0, [0.0] * 3, torch.zeros(3, 0))
    with pytest.raises(
        ValueError,
        match=r"expected \[len\(tokens\), source symbols \+ EOS\] = "
        r"\[3, 3\] \(decoded with attention kept\), got \[3, 0\]",
    ):
        hypothesis_alignment(hyp, "ab", model.src_vocab, model.tgt_vocab)
    with pytest.raises(TypeError, match="hypothesis: expected a Hypothesis, got list"):
        hypothesis_alignment([], "ab", model.src_vocab, model.tgt_vocab)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tgt_vocab: expected a Vocab, got str"):
        hypothesis_alignment(hyp, "ab", model.src_vocab, "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tokens: expected one of char, space, subword, got 'bpe'"):
        word_groups(["a"], "bpe")
    with pytest.raises(ValueError, match=r"source_words\[0\]: expected positions in \[0, 2\)"):
        align_words(torch.zeros(1, 2), [[2]], [[0]])


def test_pharaoh_round_trips() -> None:
    links = [(0, 0), (2, 1), (10, 12)]
    assert pharaoh(links) == "0-0 2-1 10-12"
    assert parse_pharaoh(pharaoh(links)) == links
    assert pharaoh([]) == "" and parse_pharaoh("") == []
    with pytest.raises(
        ValueError, match=r"links\[0\]: expected a pair of ints >= 0, got \(-1, 0\)"
    ):
        pharaoh([(-1, 0)])
    with pytest.raises(ValueError, match="text: expected i-j pairs, got '1:2'"):
        parse_pharaoh("0-0 1:2")
