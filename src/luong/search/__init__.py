"""Decoding a trained model: greedy search, beam search and sampling, batched over sentences
(x beams), from raw strings or from tensors, for a ``Seq2Seq`` or an ``Ensemble``.

How to decode is one ``SearchOptions`` (``luong.config.search``); the package reads it. A
module per idea, each building on the ones before it:

- ``hypothesis``: the ``Hypothesis`` a search returns, output limits, next-token
  log-probabilities, dense rows cut into hypotheses.
- ``penalties``: GNMT's length and coverage penalties, the score of a whole output.
- ``rules``: the rules every search loop applies to a step's log-probabilities (a minimum
  length, no repeated n-grams), in one place.
- ``greedy``: greedy search (no rules: a search with one goes through the beam loop).
- ``prefix``: a target prefix teacher-forced before the search goes on.
- ``beam``: beam search (its loop's state is one ``Beams`` value), n-best lists, the greedy
  bound that prunes it.
- ``sampling``: outputs drawn with a temperature and top-k, from a seeded generator.
- ``constrained``: lexically constrained beam search (phrases every output must hold,
  dynamic beam allocation).
- ``symbols``: source and output symbols, unknown-word replacement, an output's text.
- ``text``: ``decode`` and ``decode_batches``, strings in (windows, search calls, the
  search the options ask for), hypotheses out.

A sentence's n-best list is never empty; an empty input gets none.
"""

from luong.search.beam import beam_search, search_beams
from luong.search.greedy import greedy_search, greedy_steps
from luong.search.hypothesis import Hypothesis, default_max_len
from luong.search.penalties import coverage_penalty, hypothesis_score, length_penalty
from luong.search.sampling import sample_search
from luong.search.symbols import (
    hypothesis_symbols,
    hypothesis_text,
    replace_unknowns,
    source_symbols,
)
from luong.search.text import SEARCH_ROWS, decode, decode_batches, run_search

__all__ = [
    "SEARCH_ROWS",
    "Hypothesis",
    "beam_search",
    "coverage_penalty",
    "decode",
    "decode_batches",
    "default_max_len",
    "greedy_search",
    "greedy_steps",
    "hypothesis_score",
    "hypothesis_symbols",
    "hypothesis_text",
    "length_penalty",
    "replace_unknowns",
    "run_search",
    "sample_search",
    "search_beams",
    "source_symbols",
]
