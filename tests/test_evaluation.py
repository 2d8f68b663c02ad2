"""Tests of ``luong.evaluation.evaluate``: what ``evaluate`` scores (BLEU and chrF on the
detokenized outputs against the raw references, normalised alike, several references per source) and
``dev_loss``.

Oracles: sacreBLEU itself, called here on the texts; a model that writes given outputs, so
the right score is known (outputs equal to the references score 100); and
``torch.nn.functional.cross_entropy`` with ``ignore_index`` on one padded batch.

The model that writes given outputs is a real ``Seq2Seq`` whose weights are set by hand
(``scripted_model``), not a stand-in for ``translate``: greedy search, the batching of the
sources, the subword vocabulary's detokenization and the scoring are all the product's own, so
a fault in any of them (BLEU on the pieces, references shifted by one, references not
normalised, a multi-reference list cut to one) changes the scores these tests know. Its
weights go through ``load_state_dict``: the names and shapes a saved model has.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping

import pytest
import sacrebleu
import torch
import torch.nn.functional as F
from helpers import small_model, toy_pairs
from torch.nn.utils.rnn import pad_sequence

from luong import Seq2Seq, Seq2SeqConfig, Vocab
from luong.config.train import TrainConfig
from luong.data.subword import SubwordVocab, train_subword
from luong.evaluation.evaluate import dev_loss, evaluate
from luong.training.trainer import Trainer
from luong.translation.translator import translate

# German sources, each starting with its own character (the scripted model tells them apart
# by it), and their English references: punctuation, digits, quotes, accents, and words that
# sentencepiece cuts into several pieces.
PAIRS = [
    ("Die Katze saß auf der Matte.", "The cat sat on the mat."),
    ("Ein Café in Zürich, nahe am See.", "A café in Zürich, near the lake."),
    ("Preise stiegen 2021 um 3,5 %.", "Prices rose by 3.5% in 2021."),
    ("Sie sagte: „Geh nicht!“", 'She said: "Don\'t go!"'),
    ("Wo ist der Bahnhof?", "Where is the station?"),
    ("Kein Problem.", "No problem."),
]
SOURCES = [source for source, _ in PAIRS]
REFERENCES = [reference for _, reference in PAIRS]
# Outputs of which two differ from their references.
MIXED = {
    **dict(PAIRS),
    "Preise stiegen 2021 um 3,5 %.": "Prices rose in 2021.",
    "Wo ist der Bahnhof?": "Where was the train?",
}

# Several references per source, in the order a data file might hold them: interleaved, a
# pair repeated, two or three references a source.
MULTI = {
    "Danke schön!": ["Thank you very much!", "Thanks a lot!", "Many thanks!"],
    "Guten Morgen.": ["Good morning.", "Morning!"],
    "Ich weiß es nicht.": ["I don't know.", "I do not know it."],
    "Bis bald!": ["See you soon!", "Bye for now!", "Until soon!"],
}
MULTI_PAIRS = [
    ("Danke schön!", "Thank you very much!"),
    ("Guten Morgen.", "Good morning."),
    ("Danke schön!", "Thanks a lot!"),
    ("Ich weiß es nicht.", "I don't know."),
    ("Guten Morgen.", "Morning!"),
    ("Bis bald!", "See you soon!"),
    ("Ich weiß es nicht.", "I do not know it."),
    ("Danke schön!", "Many thanks!"),
    ("Bis bald!", "Bye for now!"),
    ("Guten Morgen.", "Morning!"),  # a repeated pair: one reference
    ("Bis bald!", "Until soon!"),
]

TEXT = REFERENCES + [r for refs in MULTI.values() for r in refs] + ["Where was the train?"]
PIECES = train_subword(TEXT * 10, "unigram", 330)


def scripted_model(outputs: Mapping[str, str], tgt_vocab: Vocab) -> Seq2Seq:
    """A real model whose greedy output for each source of ``outputs`` is its text there.

    The sources must start with different characters. The encoder keeps the unit of the
    first source character (its GRU's update gate holds the state once one is set); the bridge
    turns it into the first state of that source's chain; each decoder step moves the state
    one unit along the chain (the state is +1 at one unit, -1 at every other: the cells
    saturate, so nothing drifts), and the output layer gives the unit's token a logit of 20,
    every other token 0. The attention is there, and reads nothing.
    """
    sources = list(outputs)
    if len({source[0] for source in sources}) != len(sources):
        raise ValueError("sources: expected each to start with its own character")
    src_vocab = Vocab(sorted({char for source in sources for char in source}))
    starts: list[int] = []  # each source's first unit, which writes nothing
    writes: list[int | None] = []  # the token each unit writes
    for source in sources:
        starts.append(len(writes))
        writes += [None, *tgt_vocab.encode(outputs[source])]  # EOS last
    d, h, e = len(writes), len(sources), len(src_vocab)
    config = Seq2SeqConfig(
        emb_dim=e,
        enc_hidden=h,
        enc_layers=1,
        bidirectional=False,
        dec_hidden=d,
        attention="general",
        input_feed=False,
        max_src_len=64,
    )
    model = Seq2Seq(config, src_vocab, tgt_vocab, seed=0)
    big, c, logit = 30.0, 10.0, 20.0  # a saturated gate, a saturated tanh, a sure token
    w = {name: torch.zeros_like(tensor) for name, tensor in model.state_dict().items()}
    # nn.GRU's rows: r, z, n gates, each as wide as the state.
    w["encoder.embedding.weight"][1:] = torch.eye(e)[1:]  # one-hot symbols, PAD zero
    for unit, source in enumerate(sources):
        w["encoder.rnn.weight_ih_l0"][2 * h + unit, src_vocab.id(source[0])] = c
    w["encoder.rnn.bias_ih_l0"][h : 2 * h] = -big  # z = 0 while the state is 0 ...
    w["encoder.rnn.weight_hh_l0"][h : 2 * h] = 2 * big  # ... and 1 once a unit is set
    w["bridge.hidden.bias"][:] = -c
    for unit, start in enumerate(starts):
        w["bridge.hidden.weight"][start, unit] = 2 * c
    w["decoder.rnn.bias_ih_l0"][:d] = big  # r = 1
    w["decoder.rnn.bias_ih_l0"][d : 2 * d] = -big  # z = 0: the state is n
    chain, chain_bias = w["decoder.rnn.weight_hh_l0"][2 * d :], w["decoder.rnn.bias_ih_l0"][2 * d :]
    last = {start - 1 for start in starts[1:]} | {d - 1}  # each chain's EOS unit stays on
    for unit in range(d):
        if unit in starts:
            chain_bias[unit] = -c
        else:
            chain[unit, unit - 1] = c
        if unit in last:
            chain[unit, unit] = c
            chain_bias[unit] = c
    w["decoder.attention.combine.weight"][:, h:] = c * torch.eye(d)  # h~ = tanh(c h_t)
    for unit, token in enumerate(writes):
        if token is not None:  # (logit / 2) (h~_unit + 1): logit at the unit, 0 elsewhere
            w["decoder.out.weight"][token, unit] = logit / 2
            w["decoder.out.bias"][token] += logit / 2
    model.load_state_dict(w)
    return model.eval()


def test_the_scripted_model_writes_its_outputs() -> None:
    model = scripted_model(dict(PAIRS), PIECES)
    assert isinstance(model.tgt_vocab, SubwordVocab)
    assert translate(model, SOURCES[::-1]) == REFERENCES[::-1]
    # Each reference is more pieces than words: the outputs' pieces are not the text.
    assert all(len(PIECES.tokenize(ref)) > len(ref.split()) for ref in REFERENCES)


# --- BLEU and chrF -------------------------------------------------------------------------------


@pytest.mark.parametrize("references", [False, True], ids=["pairs", "references"])
def test_outputs_equal_to_the_references_score_100_as_sacrebleu_scores_them(
    references: bool,
) -> None:
    model = scripted_model(dict(PAIRS), PIECES)
    # Batches of 4: the last is smaller, and greedy search drops rows as they end.
    scores = evaluate(model, PAIRS, references=references, bleu=True, batch_size=4)
    assert scores["bleu"] == pytest.approx(100.0, abs=1e-9)
    assert scores["chrf"] == pytest.approx(100.0, abs=1e-9)
    assert scores["bleu"] == sacrebleu.corpus_bleu(REFERENCES, [REFERENCES]).score
    assert scores["chrf"] == sacrebleu.corpus_chrf(REFERENCES, [REFERENCES]).score
    assert scores["exact_match"] == 1.0 and scores["pairs"] == 6
    assert "nrefs:1|" in scores["bleu_signature"] and "tok:13a" in scores["bleu_signature"]


@pytest.mark.parametrize("references", [False, True], ids=["pairs", "references"])
def test_bleu_and_chrf_equal_sacrebleu_of_the_outputs_on_the_raw_references(
    references: bool,
) -> None:
    # Two outputs differ from their references: the scores are between 0 and 100, and any
    # misalignment of outputs and references (a shift by one, another order) changes them.
    model = scripted_model(MIXED, PIECES)
    written = [MIXED[source] for source in SOURCES]
    scores = evaluate(model, PAIRS, references=references, bleu=True, batch_size=4)
    bleu = sacrebleu.corpus_bleu(written, [REFERENCES]).score
    chrf = sacrebleu.corpus_chrf(written, [REFERENCES]).score
    assert 50 < bleu < 90 and 70 < chrf < 95
    assert scores["bleu"] == pytest.approx(bleu, abs=1e-9)
    assert scores["chrf"] == pytest.approx(chrf, abs=1e-9)
    assert scores["exact_match"] == pytest.approx(4 / 6)


@pytest.mark.parametrize("references", [False, True], ids=["pairs", "references"])
def test_references_are_normalised_as_the_outputs_are(references: bool) -> None:
    # The references written decomposed (e + U+0301, as macOS writes them); the model writes
    # the composed é and ü it learned: the same text, so 100.
    decomposed = [(s, unicodedata.normalize("NFD", t)) for s, t in PAIRS]
    assert sum(t != r for (_, t), r in zip(decomposed, REFERENCES, strict=True)) == 1
    model = scripted_model(dict(PAIRS), PIECES)
    scores = evaluate(model, decomposed, references=references, bleu=True, batch_size=4)
    assert scores["bleu"] == pytest.approx(100.0, abs=1e-9)
    assert scores["chrf"] == pytest.approx(100.0, abs=1e-9)
    assert scores["exact_match"] == 1.0
    # Against the raw decomposed references, sacreBLEU finds the accented words different.
    raw = [t for _, t in decomposed]
    assert sacrebleu.corpus_bleu(REFERENCES, [raw]).score < 90


@pytest.mark.parametrize("references", [False, True], ids=["pairs", "references"])
def test_references_are_put_on_one_line_as_the_outputs_are(references: bool) -> None:
    # A reference with a line separator (U+2028) and a tab where the output, which can never
    # hold them (luong.data.vocab.one_line), has spaces: the same text, so 100.
    broken = [(s, t.replace(" ", "\u2028", 1).replace(" ", "\t", 1)) for s, t in PAIRS]
    assert sum(t != r for (_, t), r in zip(broken, REFERENCES, strict=True)) >= 5
    model = scripted_model(dict(PAIRS), PIECES)
    scores = evaluate(model, broken, references=references, bleu=True, batch_size=4)
    assert scores["exact_match"] == 1.0
    assert scores["bleu"] == pytest.approx(100.0, abs=1e-9)


def test_multi_reference_bleu_with_each_output_its_items_second_reference() -> None:
    second = {source: refs[1] for source, refs in MULTI.items()}
    model = scripted_model(second, PIECES)
    scores = evaluate(model, MULTI_PAIRS, references=True, bleu=True, batch_size=3)
    # Each source once, all its references: every output is one of them.
    assert scores["bleu"] == pytest.approx(100.0, abs=1e-9)
    assert scores["chrf"] == pytest.approx(100.0, abs=1e-9)
    assert scores["exact_match"] == 1.0 and scores["sources"] == 4 and scores["pairs"] == 11
    assert "nrefs:var|" in scores["bleu_signature"]
    # sacreBLEU's reference streams, built by hand: the first, second and third references.
    outputs = list(second.values())
    streams = [[refs[k] if k < len(refs) else None for refs in MULTI.values()] for k in range(3)]
    assert scores["bleu"] == sacrebleu.corpus_bleu(outputs, streams).score  # type: ignore[arg-type]
    # With the first reference alone, the same outputs score far lower.
    assert sacrebleu.corpus_bleu(outputs, streams[:1]).score < 20


def test_pairs_count_each_pair_once_against_its_own_target() -> None:
    second = {source: refs[1] for source, refs in MULTI.items()}
    model = scripted_model(second, PIECES)
    scores = evaluate(model, MULTI_PAIRS, references=False, bleu=True, batch_size=3)
    hits = [target == second[source] for source, target in MULTI_PAIRS]
    assert sum(hits) == 5 and scores["pairs"] == 11
    assert scores["exact_match"] == pytest.approx(5 / 11)
    outputs = [second[source] for source, _ in MULTI_PAIRS]
    bleu = sacrebleu.corpus_bleu(outputs, [[target for _, target in MULTI_PAIRS]]).score
    assert scores["bleu"] == pytest.approx(bleu, abs=1e-9) and 0 < bleu < 100


def test_dev_bleu_of_a_run_is_that_of_its_detokenized_outputs() -> None:
    # One training step with a learning rate too small to change an output, then the dev
    # evaluation at the end of the epoch: the trainer's own dev BLEU and chrF (two outputs
    # wrong, so the two differ), and its choice of BLEU for a subword target vocabulary.
    model = scripted_model(MIXED, PIECES)
    config = TrainConfig(epochs=1, batch_size=len(PAIRS), lr=1e-12, warmup_steps=0, progress=False)
    trainer = Trainer(model, PAIRS, PAIRS, config, log=lambda message: None)
    assert trainer.select == "bleu"
    metrics = trainer.run()
    [point] = trainer.progress.curve
    written = [MIXED[source] for source in SOURCES]
    bleu = sacrebleu.corpus_bleu(written, [REFERENCES]).score
    chrf = sacrebleu.corpus_chrf(written, [REFERENCES]).score
    assert (point["dev_bleu"], point["dev_chrf"]) == (round(bleu, 4), round(chrf, 4))
    assert point["dev_exact_match"] == pytest.approx(4 / 6)
    assert metrics["dev_bleu"] == round(bleu, 4)


# --- dev_loss ------------------------------------------------------------------------------------


def test_dev_loss_is_the_cross_entropy_of_every_target_token_padding_ignored() -> None:
    # Pairs of 1 to 8 symbols in batches of 3 (3, 3 and 1 pairs): a mean of the batches'
    # means, padding counted, or the targets shifted would each give another number.
    pairs = toy_pairs(7, seed=3)
    lengths = sorted(len(target) for _, target in pairs)
    assert lengths[0] <= 2 and lengths[-1] >= 6
    model = small_model(seed=1)
    src = pad_sequence(
        [torch.tensor(model.src_vocab.encode(s)) for s, _ in pairs],
        batch_first=True,
        padding_value=Vocab.pad_id,
    )
    src_lengths = torch.tensor([len(model.src_vocab.encode(s)) for s, _ in pairs])
    tgt = pad_sequence(
        [torch.tensor(model.tgt_vocab.encode(t, bos=True)) for _, t in pairs],
        batch_first=True,
        padding_value=Vocab.pad_id,
    )
    with torch.no_grad():
        logits = model(src, src_lengths, tgt[:, :-1])  # all pairs in one batch
    expected = F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1), ignore_index=Vocab.pad_id
    )
    assert int((tgt[:, 1:] != Vocab.pad_id).sum()) == sum(len(t) + 1 for _, t in pairs)
    for batch_size in (3, 1, 500):
        assert dev_loss(model, pairs, batch_size) == pytest.approx(float(expected), rel=1e-6)
    assert model.training is False  # evaluated in eval mode, left as it was


def test_dev_loss_names_bad_arguments() -> None:
    model = small_model()
    with pytest.raises(ValueError, match=r"^pairs: expected at least one \(source, target\) pair"):
        dev_loss(model, [])
    for bad in (0, True, 2.0):
        with pytest.raises(ValueError) as raised:
            dev_loss(model, [("ab", "1")], bad)  # type: ignore[arg-type]
        assert str(raised.value) == f"batch_size: expected an int >= 1, got {bad!r}"
