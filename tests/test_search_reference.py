"""``luong.search``'s beam search against a reference written from its definition: one
sentence at a time, a Python list of beams, no batching, no pruning, no compaction, no early
stop. The real search (batched rows, a top-k per row, finished sentences leaving the loop,
the greedy bound) must give the same n-best lists: the same tokens, scores within 1e-6, in
float64, for every attention kind, with and without input feeding, with the penalties,
n-best lists, a minimum length, no repeated n-grams, a prefix, and ensembles (combined
either way).

Why the reference may run to the limit where the real search stops early: an open beam with
log P = L ends at best at L / lp(limit) (log P only falls, lp grows, cp <= 0), so once n
ended hypotheses beat that bound, nothing found later enters the n-best list. And the greedy
bound drops only beams that cannot beat greedy search's hypothesis, so the best hypothesis
(n = 1) is the same with and without it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pytest
import torch
from helpers import SRC_SPACE, small_model

from luong import Vocab
from luong.config.search import SearchOptions
from luong.model.ensemble import Decodable, Ensemble, decoder_step, encode_texts
from luong.search import decode, hypothesis_score

TEXTS = ["abc de", "j", "hij a bc", "ff gg hh ii", "gif", "a b c d e", "jjj"]


@dataclass(frozen=True)
class Beam:
    tokens: list[int]
    log_probs: list[float]
    attention: list[torch.Tensor]  # a row [S] per token
    state: object  # the decoder's state after the last token
    greedy: bool = False  # greedy search's path: its argmax extension is always kept

    def then(self, token: int, log_probs: torch.Tensor, state: object, row: torch.Tensor,
             greedy: bool = False) -> Beam:  # fmt: skip
        lp = float(log_probs[token])
        return Beam(
            [*self.tokens, token], [*self.log_probs, lp], [*self.attention, row], state, greedy
        )


@torch.no_grad()
def reference(model: Decodable, text: str, o: SearchOptions) -> list[tuple[list[int], float]]:
    """Beam search on one sentence, from the definition (``luong.search.beam``)."""
    memory, state, lengths = encode_texts(model, [text])
    prefix = model.tgt_vocab.encode(o.prefix, eos=False)
    limit = max(o.max_len or 2 * int(lengths[0]) + 10, len(prefix) + 1)

    def step(beam: Beam) -> tuple[torch.Tensor, object, torch.Tensor]:
        token = torch.tensor([beam.tokens[-1] if beam.tokens else Vocab.bos_id])
        logits, after, weights = decoder_step(model, token, beam.state, memory, o.combine)
        log_probs = torch.log_softmax(logits[0].double(), -1)
        log_probs[[Vocab.pad_id, Vocab.bos_id]] = -math.inf
        return log_probs, after, weights[0]

    beam = Beam([], [], [], state, greedy=True)
    for token in prefix:  # teacher-forced
        beam = beam.then(token, *step(beam), greedy=True)
    beams, ended = [beam], []
    for t in range(len(prefix), limit):
        candidates, greedy = [], None
        for beam in beams:
            log_probs, after, row = step(beam)
            if t < min(o.min_len, limit - 1):
                log_probs[Vocab.eos_id] = -math.inf
            n, tokens = o.no_repeat_ngram, beam.tokens
            for i in range(len(tokens) - n + 1 if n else 0):  # n-grams held: their ends banned
                if tokens[i : i + n - 1] == tokens[len(tokens) - n + 1 :]:
                    log_probs[tokens[i + n - 1]] = -math.inf
            ours = [(beam.log_probs, float(lp), beam, v, log_probs, after, row)
                    for v, lp in enumerate(log_probs)]  # fmt: skip
            candidates += ours
            greedy = ours[int(log_probs.argmax())] if beam.greedy else greedy
        top = sorted(candidates, key=lambda c: -(sum(c[0]) + c[1]))[: o.beam]
        if greedy is not None and not any(c is greedy for c in top):
            top[-1] = greedy  # the greedy path takes the last place
        beams = []
        for c in top:
            if math.isfinite(sum(c[0]) + c[1]):
                new = c[2].then(c[3], *c[4:], greedy=c is greedy)
                (ended if c[3] == Vocab.eos_id or t + 1 == limit else beams).append(new)
        if not beams:
            break
    scored = [(b.tokens, hypothesis_score(b.log_probs, torch.stack(b.attention), o.alpha, o.beta))
              for b in ended]  # fmt: skip
    return sorted(scored, key=lambda h: -h[1])[: o.nbest]


def lively(seed: int, **fields: object) -> torch.nn.Module:
    """A float64 model with peaked distributions, so beams differ and some end early."""
    model = small_model(seed, SRC_SPACE, **fields).double()
    with torch.no_grad():
        for param in model.parameters():
            param.mul_(2.5)
        model.decoder.out.bias[Vocab.eos_id] += 1.0
    return model


def assert_matches(model: Decodable, options: SearchOptions) -> None:
    got = decode(model, TEXTS, options, batch_size=len(TEXTS))
    for text, hyps in zip(TEXTS, got, strict=True):
        expected = reference(model, text, options)
        assert [h.tokens for h in hyps] == [tokens for tokens, _ in expected], text
        assert [h.score for h in hyps] == pytest.approx([s for _, s in expected], abs=1e-6)


KINDS = [
    {"attention": "dot"},
    {"attention": "scaled_dot"},
    {"attention": "general"},
    {"attention": "concat"},
    {"attention": "location"},
    {"attention": "bahdanau"},
    {"attention": "general", "local": "monotonic", "window": 2},
    {"attention": "dot", "local": "predictive", "window": 2},
    {"attention": "general", "cell": "lstm", "dec_layers": 2},
]
SEARCHES = [
    SearchOptions(beam=3),
    SearchOptions(beam=4, nbest=4),
    SearchOptions(beam=3, nbest=2, alpha=0.8, beta=0.4),
    SearchOptions(beam=2, min_len=3),
    SearchOptions(beam=3, nbest=2, prefix="7-"),
    SearchOptions(beam=4, alpha=0.6, beta=0.2, max_len=6),
    SearchOptions(beam=3, nbest=2, no_repeat_ngram=2),
]


# Every attention kind with feeding on and off, each with two of the searches in turn, so that
# every search meets five or six of the model kinds (the whole grid is 126 cases and takes
# minutes). A count of searches that is odd reaches every search with feeding on and off.
CASES = [
    (fields, feed, SEARCHES[(2 * i + j) % len(SEARCHES)])
    for i, (fields, feed) in enumerate((f, feed) for f in KINDS for feed in (True, False))
    for j in (0, 1)
]


@pytest.mark.parametrize(
    ("fields", "input_feed", "options"),
    CASES,
    ids=["-".join([*map(str, f.values()), f"feed{int(feed)}", str(i)]) for i, (f, feed, _) in
         enumerate(CASES)],
)  # fmt: skip
def test_beam_search_equals_the_reference(
    fields: dict[str, object], input_feed: bool, options: SearchOptions
) -> None:
    assert_matches(lively(7, input_feed=input_feed, **fields), options)


def test_the_cases_cover_every_search_with_every_feed() -> None:
    assert {(feed, o) for _, feed, o in CASES} == {(f, o) for f in (True, False) for o in SEARCHES}
    assert {str(f) for f, _, _ in CASES} == {str(f) for f in KINDS}


@pytest.mark.parametrize("combine", ["logprob", "prob"])
@pytest.mark.parametrize("options", [SEARCHES[2], SEARCHES[4]], ids=["penalties", "prefix"])
def test_an_ensembles_beam_search_equals_the_reference(
    combine: str, options: SearchOptions
) -> None:
    """Different members (scores, cells, feeding); the coverage penalty reads their mean
    attention."""
    members = [lively(3), lively(4, attention="concat", cell="lstm"), lively(5, input_feed=False)]
    ensemble = Ensemble(members)  # type: ignore[list-item]
    assert_matches(ensemble, replace(options, combine=combine))


def test_the_reference_is_not_trivially_met() -> None:
    """The cases above are not all greedy: beam search finds other outputs than greedy
    search for some sentences, and n-best lists hold distinct outputs."""
    model = lively(7, attention="general")
    greedy = decode(model, TEXTS)
    beams = decode(model, TEXTS, SearchOptions(beam=4, nbest=4))
    assert any(g[0].tokens != b[0].tokens for g, b in zip(greedy, beams, strict=True))
    assert all(len({tuple(h.tokens) for h in hyps}) == 4 for hyps in beams)
    ended_early = [h for hyps in beams for h in hyps if len(h.tokens) < 6]
    assert ended_early  # some sentences finish early (their lists are collected first)
