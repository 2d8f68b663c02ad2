"""The rules a search applies to every step's next-token log-probabilities, in one place.

Each loop of ``luong.search`` (beam search, with plain or constrained candidates, and
sampling) computes a step's log-probabilities, then calls ``StepRules.apply`` once, before
it chooses: a token a rule forbids is set to -inf there, and the loop never sees it. A new
rule is a field of ``SearchOptions`` and a few lines here; no loop, face or flag changes.

- **Minimum length**: EOS is forbidden until an output has ``min_len`` tokens (up to its
  limit minus one, so every output can still end).
- **No repeated n-grams** (``no_repeat_ngram`` = n): a token that would complete an n-gram
  the output already holds is forbidden, the prefix counted as part of the output (as
  fairseq's ``--no-repeat-ngram-size``; n = 1 forbids every token already written). EOS is
  never in an output's tokens, so it is never forbidden by this rule and an output can
  always end.

The prefix is not a rule: its tokens are teacher-forced before the loop starts
(``luong.search.prefix``). Constrained search's own bans (EOS before every constraint is
met, a phrase once too often) are its strategy's, applied after these.

Plain greedy search (``greedy_steps``) applies none: ``SearchOptions.greedy`` is False
whenever a rule is set, and such a search goes through the beam loop with one beam.

Shapes: ``B`` sentences, ``R`` rows of a step, ``V`` the target vocabulary (or the columns
of a shortlist: the tokens are then columns too), ``L`` the tokens of each row so far.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from luong.config.search import SearchOptions
from luong.data.vocab import Vocab

__all__ = ["StepRules", "ban_repeats"]


@dataclass(frozen=True)
class StepRules:
    """The rules of one search call: ``min_lens`` ``[B]``, EOS forbidden while an output has
    fewer tokens; ``no_repeat`` (n), no n-gram twice in an output (0: off)."""

    min_lens: Tensor
    no_repeat: int

    @staticmethod
    def start(options: SearchOptions, limits: Tensor) -> StepRules:
        """The rules ``options`` ask for, for sentences whose outputs have at most
        ``limits`` ``[B]`` tokens (EOS included)."""
        return StepRules(limits.clamp(max=options.min_len + 1) - 1, options.no_repeat_ngram)

    @property
    def reads_outputs(self) -> bool:
        """Whether ``apply`` needs each row's tokens so far (``outputs``)."""
        return self.no_repeat > 0

    def select(self, keep: Tensor) -> StepRules:
        """The rules of the sentences ``keep`` ``[B']``, in that order."""
        return StepRules(self.min_lens[keep], self.no_repeat)

    def apply(
        self, log_probs: Tensor, t: int, sentence: Tensor, outputs: Tensor | None = None
    ) -> None:
        """Forbid (in place, -inf) the tokens the rules forbid as the ``t + 1``-th token of
        each row's output: ``log_probs`` ``[R, V]``, ``sentence`` ``[R]`` each row's
        sentence, ``outputs`` ``[R, L]`` its tokens so far (needed when
        ``reads_outputs``)."""
        early = t < self.min_lens[sentence]  # [R]
        log_probs[:, Vocab.eos_id] = log_probs[:, Vocab.eos_id].masked_fill(early, float("-inf"))
        if self.no_repeat:
            assert outputs is not None, "no_repeat_ngram reads the outputs so far"
            ban_repeats(log_probs, outputs, self.no_repeat)


def ban_repeats(log_probs: Tensor, outputs: Tensor, n: int) -> None:
    """Set to -inf (in place) each row's tokens that would complete an ``n``-gram its
    ``outputs`` ``[R, L]`` already hold: wherever the output's last ``n - 1`` tokens occur
    earlier, the token that followed them there."""
    length = outputs.shape[1]
    if length < n:  # no whole n-gram yet
        return
    grams = outputs.unfold(1, n, 1)  # [R, L - n + 1, n]
    context = outputs[:, length - n + 1 :]  # [R, n - 1], empty for n = 1
    seen = (grams[:, :, : n - 1] == context[:, None, :]).all(dim=2)  # [R, L - n + 1]
    hits = torch.zeros_like(log_probs, dtype=torch.int32)
    hits.scatter_add_(1, grams[:, :, n - 1], seen.to(torch.int32))
    log_probs.masked_fill_(hits > 0, float("-inf"))
