"""Global attention after Luong, Pham and Manning (2015) and Bahdanau, Cho and Bengio (2015).

Shapes, in the notation used throughout the project:

    B  batch            S  source length       d  query (decoder) width
    K  key width (encoder output width, ``key_dim``; K = d unless given)

A mask is a bool tensor ``[B, S]``, True at real source positions.

Equations are numbered as in Luong et al., "Effective Approaches to Attention-based
Neural Machine Translation" (EMNLP 2015):

    eq. 5   h~_t = tanh(W_c [c_t ; h_t])                     the attentional state
    eq. 7   a_t(s) = softmax_s(score(h_t, k_s))               the alignment weights
    eq. 8   score(h, k) = h . k                 (dot)
                        = h . (W_a k)           (general)
                        = v . tanh(W_a [h ; k]) (concat)

Every module here holds parameters only. Per-sentence values (the projected keys, the mask)
are computed by the caller once and passed in, so calls never depend on each other.

Initialisation: every weight is drawn from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), the bound
``nn.Linear`` uses, in the order the parameters are registered, from ``rng`` (a seed or a
``torch.Generator``; ``None`` uses torch's global generator). The same seed gives the same
weights.
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = [
    "SCORES",
    "BahdanauAttention",
    "LuongAttention",
    "length_mask",
    "make_generator",
    "masked_softmax",
]

Score = Literal["dot", "general", "concat"]
SCORES: tuple[str, ...] = ("dot", "general", "concat")


def make_generator(rng: int | torch.Generator | None) -> torch.Generator | None:
    """Turn ``rng`` (None, an int seed or a ``torch.Generator``) into a generator or None.

    Raises:
        TypeError: ``rng`` is of another type.
    """
    if rng is None or isinstance(rng, torch.Generator):
        return rng
    if isinstance(rng, int) and not isinstance(rng, bool):
        return torch.Generator().manual_seed(rng)
    raise TypeError(
        f"rng: expected None, an int seed or a torch.Generator, got {type(rng).__name__}"
    )


def init_uniform_(module: nn.Module, generator: torch.Generator | None) -> None:
    """Draw every parameter of ``module`` from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), in
    registration order, from ``generator`` (torch's global generator when None)."""
    with torch.no_grad():
        for param in module.parameters():
            fan_in = param.shape[1] if param.dim() > 1 else param.shape[0]
            bound = 1.0 / math.sqrt(fan_in)
            # Draw on the CPU in float32 so a seed gives the same weights on every device.
            values = torch.empty(param.shape, dtype=torch.float32)
            values.uniform_(-bound, bound, generator=generator)
            param.copy_(values)


def length_mask(lengths: Tensor, max_len: int | None = None) -> Tensor:
    """Bool mask ``[B, S]``, True at the first ``lengths[b]`` positions of row b.

    Args:
        lengths: integer tensor ``[B]`` of real lengths.
        max_len: S; defaults to ``max(lengths)`` (0 for an empty batch).

    Raises:
        TypeError: ``lengths`` is not an integer tensor.
        ValueError: ``lengths`` is not 1-D, a length is negative or above ``max_len``.
    """
    if not isinstance(lengths, Tensor):
        raise TypeError(f"lengths: expected an integer tensor [B], got {type(lengths).__name__}")
    if lengths.dtype.is_floating_point or lengths.dtype.is_complex or lengths.dtype == torch.bool:
        raise TypeError(f"lengths: expected an integer tensor [B], got dtype {lengths.dtype}")
    if lengths.dim() != 1:
        raise ValueError(f"lengths: expected a 1-D tensor [B], got shape {tuple(lengths.shape)}")
    # Validation reads the values once, at the boundary; the mask itself needs no sync.
    if lengths.numel() and int(lengths.min()) < 0:
        raise ValueError(f"lengths: expected non-negative lengths, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    if max_len is None:
        max_len = longest
    elif not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 0:
        raise ValueError(f"max_len: expected a non-negative int, got {max_len!r}")
    elif longest > max_len:
        raise ValueError(f"lengths: expected every length <= max_len={max_len}, got {longest}")
    positions = torch.arange(max_len, device=lengths.device)
    return positions.unsqueeze(0) < lengths.unsqueeze(1)  # [B, S]


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Softmax over the last axis of ``scores`` ``[B, S]`` restricted to ``mask`` (eq. 7).

    Padded scores become -inf before the softmax, so padded weights are exactly 0 and the
    real ones sum to 1 whatever the scores' magnitude. A row with no real position gets all-zero
    weights; its scores are replaced by zeros first, so no NaN appears in forward or backward.
    No value is read on the host.
    """
    filled = scores.masked_fill(~mask, float("-inf"))
    empty = ~mask.any(dim=-1, keepdim=True)  # [B, 1]
    filled = filled.masked_fill(empty, 0.0)  # an all -inf row would give 0/0
    return filled.softmax(dim=-1).masked_fill(~mask, 0.0)


def read(weights: Tensor, keys: Tensor) -> Tensor:
    """Context c = sum_s a(s) k_s: weights ``[B, S]``, keys ``[B, S, K]`` -> ``[B, K]``.

    Weights ``[B, T, S]`` (T queries at once) give contexts ``[B, T, K]``.
    """
    if weights.dim() == 3:
        return torch.bmm(weights, keys)  # [B, T, K]
    return torch.bmm(weights.unsqueeze(1), keys).squeeze(1)  # [B, K]


class _Attention(nn.Module):
    """What every attention here shares: validation, the masked read and eq. 5."""

    query_from: ClassVar[str]
    d: int
    key_dim: int
    combine: nn.Linear

    def project_keys(self, keys: Tensor) -> Tensor:
        """Per-sentence part of the score, computed once: keys ``[B, S, K]`` -> ``[B, S, d]``."""
        self._check_keys(keys)
        return self._project_keys(keys)

    def scores(self, query: Tensor, keys: Tensor, proj: Tensor | None = None) -> Tensor:
        """Unmasked scores ``[B, S]`` of query ``[B, d]`` against keys ``[B, S, K]``.

        ``proj`` is ``project_keys(keys)`` when the caller has it; it is computed otherwise.
        """
        self._check_query_keys(query, keys)
        if proj is None:
            proj = self._project_keys(keys)
        else:
            self._check_proj(proj, keys)
        return self._scores(query, keys, proj)

    def forward(
        self, query: Tensor, keys: Tensor, mask: Tensor, proj: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Attend: query ``[B, d]``, keys ``[B, S, K]``, mask ``[B, S]`` (bool) ->
        (context ``[B, K]``, weights ``[B, S]``).

        Padded positions get weight exactly 0 and pass no gradient to their keys; a row
        without real positions gets zero weights and a zero context.
        """
        self._check_query_keys(query, keys)
        self._check_mask(mask, keys)
        if proj is None:
            proj = self._project_keys(keys)
        else:
            self._check_proj(proj, keys)
        return self._attend(query, keys, mask, proj)

    def attentional(self, query: Tensor, context: Tensor) -> Tensor:
        """Attentional state h~ = tanh(W_c [c ; h]) (eq. 5), context first.

        query ``[B, d]``, context ``[B, K]`` -> ``[B, d]``.
        """
        _check_tensor("query", query, 2, self.d)
        _check_tensor("context", context, 2, self.key_dim)
        if query.shape[0] != context.shape[0]:
            raise ValueError(
                f"context: expected batch {query.shape[0]} (the query's), got {context.shape[0]}"
            )
        return self._attentional(query, context)

    # Unchecked versions for callers that validated once (the decoder). They also take T
    # queries at once, query [B, T, d] -> context [B, T, K], weights [B, T, S], for the
    # decoder's fast path, which attends every target step in one batched operation.
    def _attend(
        self, query: Tensor, keys: Tensor, mask: Tensor, proj: Tensor
    ) -> tuple[Tensor, Tensor]:
        if query.dim() == 3:
            mask = mask.unsqueeze(1)  # [B, 1, S], the same mask for every step
        weights = masked_softmax(self._scores(query, keys, proj), mask)
        return read(weights, keys), weights

    def _attentional(self, query: Tensor, context: Tensor) -> Tensor:
        return torch.tanh(self.combine(torch.cat([context, query], dim=-1)))

    def _project_keys(self, keys: Tensor) -> Tensor:
        raise NotImplementedError

    def _scores(self, query: Tensor, keys: Tensor, proj: Tensor) -> Tensor:
        raise NotImplementedError

    def _check_keys(self, keys: Tensor) -> None:
        _check_tensor("keys", keys, 3, self.key_dim)

    def _check_query_keys(self, query: Tensor, keys: Tensor) -> None:
        _check_tensor("query", query, 2, self.d)
        self._check_keys(keys)
        if query.shape[0] != keys.shape[0]:
            raise ValueError(
                f"keys: expected batch {query.shape[0]} (the query's), got {keys.shape[0]}"
            )

    def _check_mask(self, mask: Tensor, keys: Tensor) -> None:
        if not isinstance(mask, Tensor):
            raise TypeError(f"mask: expected a bool tensor [B, S], got {type(mask).__name__}")
        if mask.dtype != torch.bool:
            raise ValueError(f"mask: expected dtype torch.bool, got {mask.dtype}")
        if tuple(mask.shape) != tuple(keys.shape[:2]):
            raise ValueError(
                f"mask: expected shape [B, S] = {tuple(keys.shape[:2])}, got {tuple(mask.shape)}"
            )

    def _check_proj(self, proj: Tensor, keys: Tensor) -> None:
        expected = (keys.shape[0], keys.shape[1], self.d)
        if not isinstance(proj, Tensor) or tuple(proj.shape) != expected:
            got = tuple(proj.shape) if isinstance(proj, Tensor) else type(proj).__name__
            raise ValueError(f"proj: expected shape [B, S, d] = {expected}, got {got}")


def _check_tensor(name: str, value: object, dims: int, width: int) -> None:
    """Raise unless ``value`` is a floating tensor with ``dims`` axes and last axis ``width``."""
    layout = {2: "[B, {w}]", 3: "[B, S, {w}]"}[dims].format(w=width)
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}: expected a tensor {layout}, got {type(value).__name__}")
    if not value.dtype.is_floating_point:
        raise TypeError(f"{name}: expected a floating-point tensor, got dtype {value.dtype}")
    if value.dim() != dims or value.shape[-1] != width:
        raise ValueError(f"{name}: expected shape {layout}, got {tuple(value.shape)}")


def _additive(v: nn.Linear, proj: Tensor, query_part: Tensor) -> Tensor:
    """v . tanh(query_part + proj_s): proj ``[B, S, d]``, query_part ``[B, d]`` -> ``[B, S]``,
    or query_part ``[B, T, d]`` -> ``[B, T, S]``."""
    if query_part.dim() == 3:
        hidden = torch.tanh(proj.unsqueeze(1) + query_part.unsqueeze(2))  # [B, T, S, d]
    else:
        hidden = torch.tanh(proj + query_part.unsqueeze(1))  # [B, S, d]
    return v(hidden).squeeze(-1)


def _check_width(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name}: expected a positive int, got {value!r}")
    return value


class LuongAttention(_Attention):
    """Luong's global attention with the dot, general or concat score (eq. 8).

    The decoder steps its RNN first and attends with the new state h_t
    (``query_from = "current"``), then forms h~_t = tanh(W_c [c_t ; h_t]) (eq. 5).

    Parameters (no biases), registered in this order:

    ==========  =================================================  =========================
    score       ``state_dict()`` keys                               shapes
    ==========  =================================================  =========================
    dot         ``combine.weight``                                  W_c [d, K + d]
    general     ``score_proj.weight``, ``combine.weight``           W_a [d, K], W_c
    concat      ``score_proj.weight``, ``v.weight``,                W_a [d, d + K] (the query
                ``combine.weight``                                  half is the first d
                                                                    columns), v [1, d], W_c
    ==========  =================================================  =========================

    The dot score is not scaled by 1/sqrt(d). general is h . (W_a k), never W_a^T.

    Args:
        d: query width (the decoder's hidden size).
        score: ``"dot"``, ``"general"`` or ``"concat"``.
        rng: None, an int seed or a ``torch.Generator`` for the initial weights.
        key_dim: K, the key width; defaults to ``d``. dot needs ``key_dim == d``.

    Raises:
        ValueError: unknown score, non-positive widths, dot with ``key_dim != d``.
    """

    query_from: ClassVar[str] = "current"

    def __init__(
        self,
        d: int,
        score: Score,
        rng: int | torch.Generator | None = None,
        *,
        key_dim: int | None = None,
    ) -> None:
        super().__init__()
        if score not in SCORES:
            raise ValueError(f"score: expected one of {', '.join(SCORES)}, got {score!r}")
        self.d = _check_width("d", d)
        self.key_dim = d if key_dim is None else _check_width("key_dim", key_dim)
        self.score = score
        if score == "dot" and self.key_dim != self.d:
            raise ValueError(
                f"key_dim: the dot score needs key_dim == d = {d}, got {self.key_dim}; "
                "use general or concat for keys of another width"
            )
        if score == "general":
            self.score_proj = nn.Linear(self.key_dim, d, bias=False)  # W_a [d, K]
        elif score == "concat":
            self.score_proj = nn.Linear(d + self.key_dim, d, bias=False)  # W_a [d, d + K]
            self.v = nn.Linear(d, 1, bias=False)  # v [1, d]
        self.combine = nn.Linear(self.key_dim + d, d, bias=False)  # W_c [d, K + d]
        init_uniform_(self, make_generator(rng))

    def extra_repr(self) -> str:
        return f"d={self.d}, score={self.score!r}, key_dim={self.key_dim}"

    def _project_keys(self, keys: Tensor) -> Tensor:
        if self.score == "dot":
            return keys  # [B, S, d]
        if self.score == "general":
            return self.score_proj(keys)  # W_a k_s: [B, S, d]
        # concat: W_a [h ; k] = W_h h + W_k k with W_k the last K columns of W_a.
        return F.linear(keys, self.score_proj.weight[:, self.d :])  # [B, S, d]

    def _scores(self, query: Tensor, keys: Tensor, proj: Tensor) -> Tensor:
        if self.score == "concat":
            query_part = F.linear(query, self.score_proj.weight[:, : self.d])  # W_h h
            return _additive(self.v, proj, query_part)
        # dot and general: h . proj_s, one batched matrix product. The query is the left
        # factor: on the CPU a row vector times proj^T runs several times faster than
        # proj times a column vector.
        if query.dim() == 3:
            return torch.bmm(query, proj.transpose(1, 2))  # [B, T, S]
        return torch.bmm(query.unsqueeze(1), proj.transpose(1, 2)).squeeze(1)  # [B, S]


class BahdanauAttention(_Attention):
    """Additive attention of Bahdanau, Cho and Bengio (2015): score = v . tanh(W_q q + W_k k_s).

    The decoder attends with the state from before its step (``query_from = "previous"``)
    and feeds the context into the cell. The output layer reads the same attentional state
    as Luong's, tanh(W_c [c ; h]) with h the state after the step.

    Parameters (no biases), registered in this order:
        ``query_proj.weight`` W_q [d, d], applied to the query each step;
        ``key_proj.weight``   W_k [d, K], applied to the keys once per sentence (``project_keys``);
        ``v.weight``          v [1, d];
        ``combine.weight``    W_c [d, K + d].

    Args:
        d: query width.
        rng: None, an int seed or a ``torch.Generator`` for the initial weights.
        key_dim: K, the key width; defaults to ``d``.
    """

    query_from: ClassVar[str] = "previous"

    def __init__(
        self, d: int, rng: int | torch.Generator | None = None, *, key_dim: int | None = None
    ) -> None:
        super().__init__()
        self.d = _check_width("d", d)
        self.key_dim = d if key_dim is None else _check_width("key_dim", key_dim)
        self.score = "bahdanau"
        self.query_proj = nn.Linear(d, d, bias=False)
        self.key_proj = nn.Linear(self.key_dim, d, bias=False)
        self.v = nn.Linear(d, 1, bias=False)
        self.combine = nn.Linear(self.key_dim + d, d, bias=False)
        init_uniform_(self, make_generator(rng))

    def extra_repr(self) -> str:
        return f"d={self.d}, key_dim={self.key_dim}"

    def _project_keys(self, keys: Tensor) -> Tensor:
        return self.key_proj(keys)  # W_k k_s: [B, S, d]

    def _scores(self, query: Tensor, keys: Tensor, proj: Tensor) -> Tensor:
        return _additive(self.v, proj, self.query_proj(query))
