"""Luong's local attention (section 3.2 of Luong, Pham and Manning, 2015): a score of eq. 8
inside a window [p_t - D, p_t + D] around an aligned source position p_t, monotonic
(local-m, p_t = t) or predictive (local-p, eq. 9 and 10).

The shapes, the equations' numbers, the masks and the initialisation are those of
``luong.model.attention``, whose global attention (``LuongAttention``) this extends.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from luong.common.errors import LuongError, LuongTypeError
from luong.config.choices import LOCAL_MODES, LOCAL_SCORES
from luong.model.attention import (
    LocalMode,
    LocalScore,
    LuongAttention,
    check_tensor,
    init_uniform_,
    make_generator,
    masked_softmax,
    read,
)

__all__ = ["LocalAttention"]


class LocalAttention(LuongAttention):
    """Luong's local attention (section 3.2): a score of eq. 8 inside a window
    [p_t - D, p_t + D] around an aligned source position p_t.

    - ``mode="monotonic"`` (local-m): p_t = t, the target position of the query, which the
      caller passes as ``step`` (the decoder does). The weights are the softmax of the scores
      over the window clipped to the sentence (eq. 7 restricted to the window): they sum to 1.
    - ``mode="predictive"`` (local-p): p_t = S_b * sigmoid(v_p . tanh(W_p h_t)) (eq. 9), with
      S_b the real length of sentence b, a real number in (0, S_b). The window holds the
      positions s with |s - p_t| <= D (2D + 1 of them when p_t is an integer, 2D otherwise),
      and the weights are the window's softmax times a Gaussian centred at p_t (eq. 10):

          a_t(s) = softmax_window(score(h_t, k))_s * exp(-(s - p_t)^2 / (2 sigma^2)),
          sigma = D / 2.

      As in the paper, these weights need not sum to 1 (the sum is at most 1). With
      ``renormalize=True`` they are divided by their sum: a softmax over the window of
      score(h_t, k_s) - (s - p_t)^2 / (2 sigma^2). Gradients reach W_p and v_p through p_t
      in the Gaussian; the window's edges are a step function of p_t and pass none.

    Positions outside the window or in padding get weight exactly 0 and pass no gradient to
    their keys. A window with no real position (local-m once t - D is past the sentence's
    end; an empty sentence) reads nothing: zero weights, a zero context, no NaN in forward
    or backward.

    The scores are computed at every source position, batched over sentences (and steps),
    and masked outside the window: the paper's function, without its saving in cost, which
    would matter only for sources much longer than the window.

    Parameters: those of ``LuongAttention`` with the same score, under the same names (a
    global model's weights load into local-m), then for local-p ``position_proj.weight``
    W_p [d, d] and ``position_v.weight`` v_p [1, d]; drawn from ``rng`` in this order.

    Args:
        d: query width (the decoder's hidden size).
        score: ``"dot"``, ``"general"``, ``"concat"`` or ``"scaled_dot"``, inside the window.
        mode: ``"monotonic"`` (local-m) or ``"predictive"`` (local-p).
        window: D >= 1, the window's half-width (the paper's D is 10).
        rng: None, an int seed or a ``torch.Generator`` for the initial weights.
        key_dim: K, the key width; defaults to ``d``. dot and scaled_dot need ``key_dim == d``.
        renormalize: local-p only: divide the weights by their sum.

    Raises:
        ValueError: unknown score or mode, a window below 1, ``renormalize`` with local-m,
            the widths as in ``LuongAttention``.
        TypeError: ``renormalize`` is not a bool.
    """

    def __init__(
        self,
        d: int,
        score: LocalScore,
        mode: LocalMode = "monotonic",
        window: int = 10,
        rng: int | torch.Generator | None = None,
        *,
        key_dim: int | None = None,
        renormalize: bool = False,
    ) -> None:
        if score not in LOCAL_SCORES:
            raise LuongError(
                f"score: expected one of {', '.join(LOCAL_SCORES)} inside a local window, "
                f"got {score!r}"
            )
        if mode not in LOCAL_MODES:
            raise LuongError(f"mode: expected one of {', '.join(LOCAL_MODES)}, got {mode!r}")
        if not isinstance(window, int) or isinstance(window, bool) or window < 1:
            raise LuongError(f"window: expected an int D >= 1, got {window!r}")
        if not isinstance(renormalize, bool):
            raise LuongTypeError(f"renormalize: expected a bool, got {renormalize!r}")
        if renormalize and mode == "monotonic":
            raise LuongError(
                "renormalize: only local-p's weights need it (local-m's sum to 1), "
                "got renormalize=True with mode 'monotonic'"
            )
        # One generator for every draw, so the position parameters follow the score's.
        generator = make_generator(rng)
        super().__init__(d, score, generator, key_dim=key_dim)
        self.mode = mode
        self.window = window
        self.renormalize = renormalize
        if mode == "predictive":
            self.position_proj = nn.Linear(d, d, bias=False)  # W_p [d, d]
            self.position_v = nn.Linear(d, 1, bias=False)  # v_p [1, d]
            init_uniform_(self.position_proj, generator)
            init_uniform_(self.position_v, generator)

    def extra_repr(self) -> str:
        text = f"{super().extra_repr()}, mode={self.mode!r}, window={self.window}"
        return f"{text}, renormalize=True" if self.renormalize else text

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        mask: Tensor,
        proj: Tensor | None = None,
        step: int | None = None,
    ) -> tuple[Tensor, Tensor]:
        """Attend inside the window: query ``[B, d]``, keys ``[B, S, K]``, mask ``[B, S]``
        (bool) -> (context ``[B, K]``, weights ``[B, S]``).

        Args:
            query: h_t ``[B, d]``.
            keys: ``[B, S, K]``.
            mask: True at real positions ``[B, S]``.
            proj: ``project_keys(keys)`` when the caller has it.
            step: t, the target position of the query (0 for the first output token):
                required by local-m, unused by local-p.

        Raises:
            ValueError: local-m without ``step``, a negative ``step``, shapes that do not
                fit (as in ``LuongAttention.forward``).
        """
        self.check_query_keys(query, keys)
        self.check_mask(mask, keys)
        t = self._check_step(step)
        if proj is None:
            proj = self.project_keys_unchecked(keys)
        else:
            self.check_proj(proj, keys)
        return self.attend_unchecked(query, keys, mask, proj, t)

    def position(self, query: Tensor, mask: Tensor, step: int | None = None) -> Tensor:
        """The aligned position p_t ``[B]`` in the query's dtype: t for local-m, eq. 9 for
        local-p (query ``[B, d]``, mask ``[B, S]`` gives each sentence's real length).

        Raises:
            ValueError: as ``forward``.
        """
        check_tensor("query", query, 2, self.d)
        if not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.dim() != 2:
            got = f"{mask.dtype} {tuple(mask.shape)}" if isinstance(mask, Tensor) else mask
            raise LuongError(f"mask: expected a bool tensor [B, S], got {got!r}")
        if mask.shape[0] != query.shape[0]:
            raise LuongError(
                f"mask: expected batch {query.shape[0]} (the query's), got {mask.shape[0]}"
            )
        t = self._check_step(step)
        if self.mode == "monotonic":
            return query.new_full(query.shape[:1], float(t))
        return self._predict(query, mask)

    def _check_step(self, step: int | None) -> int:
        if step is None:
            if self.mode == "monotonic":
                raise LuongError(
                    "step: local-m attention needs the target position t of the query "
                    "(an int >= 0), got None"
                )
            return 0
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise LuongError(f"step: expected an int >= 0, got {step!r}")
        return step

    def _predict(self, query: Tensor, mask: Tensor) -> Tensor:
        """p_t = S_b * sigmoid(v_p . tanh(W_p h_t)) (eq. 9): query ``[B, d]`` with mask
        ``[B, S]`` -> ``[B]``, or query ``[B, T, d]`` with mask ``[B, 1, S]`` -> ``[B, T]``."""
        lengths = mask.sum(dim=-1, dtype=query.dtype)  # S_b: [B] or [B, 1]
        gate = self.position_v(torch.tanh(self.position_proj(query))).squeeze(-1)
        return lengths * torch.sigmoid(gate)

    def attend_unchecked(
        self,
        query: Tensor,
        keys: Tensor,
        mask: Tensor,
        proj: Tensor,
        step: int = 0,
        *,
        beams: bool = False,
    ) -> tuple[Tensor, Tensor]:
        scores = self.scores_unchecked(query, keys, proj)  # [B, S], or [B, T, S] for T queries
        source_len = keys.shape[1]
        if query.dim() == 3:
            mask = mask.unsqueeze(1)  # [B, 1, S], the same mask for every step
        if self.mode == "monotonic":
            # s - t, exact small integers: [S], or [T, S] for the steps step .. step + T - 1.
            distance = torch.arange(-step, source_len - step, device=keys.device)
            if query.dim() == 3 and not beams:
                steps = torch.arange(query.shape[1], device=keys.device)
                distance = distance - steps.unsqueeze(1)
            weights = masked_softmax(scores, mask & (distance.abs() <= self.window))
            return read(weights, keys), weights
        centre = self._predict(query, mask)  # p_t: [B] or [B, T]
        source = torch.arange(source_len, device=keys.device, dtype=centre.dtype)
        distance = source - centre.unsqueeze(-1)  # s - p_t: [B, S] or [B, T, S]
        window = mask & (distance.abs() <= self.window)
        # -(s - p_t)^2 / (2 sigma^2) with sigma = D / 2 (eq. 10).
        log_gaussian = distance.square() * (-2.0 / self.window**2)
        if self.renormalize:
            weights = masked_softmax(scores + log_gaussian, window)
        else:
            weights = masked_softmax(scores, window) * log_gaussian.exp()
        return read(weights, keys), weights
