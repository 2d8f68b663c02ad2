"""Attention after Luong, Pham and Manning (2015) and Bahdanau, Cho and Bengio (2015).

Shapes, in the notation used throughout the project:

    B  batch            S  source length       d  query (decoder) width
    T  target steps     K  key width (encoder output width, ``key_dim``; K = d unless given)

A mask is a bool tensor ``[B, S]``, True at real source positions. Source positions s and
target positions t count from 0.

Equations are numbered as in Luong et al., "Effective Approaches to Attention-based
Neural Machine Translation" (EMNLP 2015):

    eq. 5   h~_t = tanh(W_c [c_t ; h_t])                     the attentional state
    eq. 7   a_t(s) = softmax_s(score(h_t, k_s))               the alignment weights
    eq. 8   score(h, k) = h . k                 (dot)
                        = h . (W_a k)           (general)
                        = v . tanh(W_a [h ; k]) (concat)
            a_t = softmax(W_a h_t)              (location: from the query alone)
    eq. 9   p_t = S * sigmoid(v_p . tanh(W_p h_t))            local-p's aligned position
    eq. 10  a_t(s) = align(h_t, k_s) exp(-(s - p_t)^2 / (2 sigma^2)), sigma = D / 2

``scaled_dot``, h . k / sqrt(d), is not in the paper: it is the transformer's score (Vaswani
et al. 2017), here to compare with the unscaled dot. Global attention (section 3.1) reads
every source position: ``LuongAttention``. Local attention (section 3.2) reads a window
[p_t - D, p_t + D]: ``LocalAttention``, in ``luong.model.local_attention``, monotonic
(local-m, p_t = t) or predictive (local-p, eq. 9 and 10).

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

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError
from luong.config.choices import GLOBAL_SCORES, LOCAL_MODES, LOCAL_SCORES, SAME_WIDTH_SCORES, SCORES
from luong.model.int8 import Int8Linear

__all__ = [
    "GLOBAL_SCORES",
    "LOCAL_MODES",
    "LOCAL_SCORES",
    "SAME_WIDTH_SCORES",
    "SCORES",
    "BahdanauAttention",
    "LuongAttention",
    "length_mask",
    "make_generator",
    "masked_softmax",
]

# The Literal aliases are read by the type checker only (no mutation can change behaviour).
# The names as tuples (SCORES, GLOBAL_SCORES, ...) are plain data in luong.config.choices, where the
# configs check them and the command line reads them without importing torch.
Score = Literal["dot", "general", "concat"]  # pragma: no mutate
GlobalScore = Literal["dot", "general", "concat", "location", "scaled_dot"]  # pragma: no mutate
LocalScore = Literal["dot", "general", "concat", "scaled_dot"]  # pragma: no mutate
LocalMode = Literal["monotonic", "predictive"]  # pragma: no mutate


def make_generator(rng: int | torch.Generator | None) -> torch.Generator | None:
    """Turn ``rng`` (None, an int seed or a ``torch.Generator``) into a generator or None.

    Raises:
        TypeError: ``rng`` is of another type.
    """
    if rng is None or isinstance(rng, torch.Generator):
        return rng
    if isinstance(rng, int) and not isinstance(rng, bool):
        return torch.Generator().manual_seed(rng)
    raise LuongTypeError(
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
        raise LuongTypeError(
            f"lengths: expected an integer tensor [B], got {type(lengths).__name__}"
        )
    if lengths.dtype.is_floating_point or lengths.dtype.is_complex or lengths.dtype == torch.bool:
        raise LuongTypeError(f"lengths: expected an integer tensor [B], got dtype {lengths.dtype}")
    if lengths.dim() != 1:
        raise LuongError(f"lengths: expected a 1-D tensor [B], got shape {tuple(lengths.shape)}")
    # Validation reads the values once, at the boundary; the mask itself needs no sync.
    if lengths.numel() and int(lengths.min()) < 0:
        raise LuongError(f"lengths: expected non-negative lengths, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    if max_len is None:
        max_len = longest
    elif not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 0:
        raise LuongError(f"max_len: expected a non-negative int, got {max_len!r}")
    elif longest > max_len:
        raise LuongError(f"lengths: expected every length <= max_len={max_len}, got {longest}")
    positions = torch.arange(max_len, device=lengths.device)
    return positions.unsqueeze(0) < lengths.unsqueeze(1)  # [B, S]


def masked_softmax(scores: Tensor, mask: Tensor) -> Tensor:
    """Softmax over the last axis of ``scores`` ``[B, S]`` restricted to ``mask`` (eq. 7).

    Padded scores become -inf before the softmax, so padded weights are exactly 0 and the
    real ones sum to 1 whatever the scores' magnitude. A row with no real position gets all-zero
    weights; its scores are replaced by zeros first, so no NaN appears in forward or backward.
    No value is read on the host. Under autocast the weights are float32.
    """
    filled = scores.masked_fill(~mask, float("-inf"))
    empty = ~mask.any(dim=-1, keepdim=True)  # [B, 1]
    filled = filled.masked_fill(empty, 0.0)  # an all -inf row would give 0/0
    # Under autocast the weights are float32, as CUDA's autocast makes every softmax (the
    # CPU's leaves it in bfloat16): weights of 8 bits would not sum to 1.
    device = scores.device.type
    autocast = torch.amp.is_autocast_available(device) and torch.is_autocast_enabled(device)
    wide = torch.promote_types(scores.dtype, torch.float32) if autocast else scores.dtype
    return filled.softmax(dim=-1, dtype=wide).masked_fill(~mask, 0.0)


def read(weights: Tensor, keys: Tensor) -> Tensor:
    """Context c = sum_s a(s) k_s: weights ``[B, S]``, keys ``[B, S, K]`` -> ``[B, K]``.

    Weights ``[B, T, S]`` (T queries at once) give contexts ``[B, T, K]``.
    """
    if weights.dim() == 3:
        return torch.bmm(weights, keys)  # [B, T, K]
    if torch.is_grad_enabled():
        # Training: autograd's backward of the row-vector bmm below forms outer products as
        # [B, S, 1] x [B, 1, K] matrix products, slower on the CPU than this broadcast
        # product's backward (timings in the message of commit a3b8e16).
        return (weights.unsqueeze(2) * keys).sum(1)  # [B, K]
    return torch.bmm(weights.unsqueeze(1), keys).squeeze(1)  # [B, K]


class _Attention(nn.Module):
    """What every attention here shares: validation, the masked read and eq. 5."""

    query_from: ClassVar[str]
    d: int
    key_dim: int
    combine: nn.Linear | Int8Linear  # Int8Linear in an int8 model (luong.model.seq2seq)

    @property
    def proj_dim(self) -> int:
        """The width of ``project_keys``' output: d (0 for the location score)."""
        return self.d

    def project_keys(self, keys: Tensor) -> Tensor:
        """Per-sentence part of the score, computed once: keys ``[B, S, K]`` -> ``[B, S, d]``."""
        self._check_keys(keys)
        return self.project_keys_unchecked(keys)

    def scores(self, query: Tensor, keys: Tensor, proj: Tensor | None = None) -> Tensor:
        """Unmasked scores ``[B, S]`` of query ``[B, d]`` against keys ``[B, S, K]``.

        ``proj`` is ``project_keys(keys)`` when the caller has it; it is computed otherwise.
        """
        self.check_query_keys(query, keys)
        if proj is None:
            proj = self.project_keys_unchecked(keys)
        else:
            self.check_proj(proj, keys)
        return self.scores_unchecked(query, keys, proj)

    def forward(
        self, query: Tensor, keys: Tensor, mask: Tensor, proj: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Attend: query ``[B, d]``, keys ``[B, S, K]``, mask ``[B, S]`` (bool) ->
        (context ``[B, K]``, weights ``[B, S]``).

        Padded positions get weight exactly 0 and pass no gradient to their keys; a row
        without real positions gets zero weights and a zero context.
        """
        self.check_query_keys(query, keys)
        self.check_mask(mask, keys)
        if proj is None:
            proj = self.project_keys_unchecked(keys)
        else:
            self.check_proj(proj, keys)
        return self.attend_unchecked(query, keys, mask, proj)

    def attentional(self, query: Tensor, context: Tensor) -> Tensor:
        """Attentional state h~ = tanh(W_c [c ; h]) (eq. 5), context first.

        query ``[B, d]``, context ``[B, K]`` -> ``[B, d]``.
        """
        check_tensor("query", query, 2, self.d)
        check_tensor("context", context, 2, self.key_dim)
        if query.shape[0] != context.shape[0]:
            raise LuongError(
                f"context: expected batch {query.shape[0]} (the query's), got {context.shape[0]}"
            )
        return self.attentional_unchecked(query, context)

    # The unchecked interface, for callers that validated their shapes once (the decoder
    # checks a batch at its boundary and then steps T times). The attend and attentional
    # methods also take T queries at once, query [B, T, d], for the decoder's fast path,
    # which attends every target step in one batched operation.

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
        """``forward`` without its checks: query ``[B, d]`` (or ``[B, T, d]``), keys
        ``[B, S, K]``, mask ``[B, S]``, proj ``project_keys_unchecked(keys)`` -> context
        ``[B, K]`` and weights ``[B, S]`` (or ``[B, T, K]``, ``[B, T, S]``). ``step`` is the
        target position t of the (first) query; only local-m reads it. The T queries of a
        sentence are T consecutive steps, or with ``beams`` T beams at the same step."""
        if query.dim() == 3:
            mask = mask.unsqueeze(1)  # [B, 1, S], the same mask for every step
        weights = masked_softmax(self.scores_unchecked(query, keys, proj), mask)
        return read(weights, keys), weights

    def attentional_unchecked(self, query: Tensor, context: Tensor) -> Tensor:
        """``attentional`` without its checks: ``[B, d]``, ``[B, K]`` -> ``[B, d]`` (or with a
        T axis)."""
        return torch.tanh(self.combine(torch.cat([context, query], dim=-1)))

    def project_keys_unchecked(self, keys: Tensor) -> Tensor:
        """``project_keys`` without its checks: keys ``[B, S, K]`` -> ``[B, S, proj_dim]``."""
        raise NotImplementedError

    def scores_unchecked(self, query: Tensor, keys: Tensor, proj: Tensor) -> Tensor:
        """``scores`` without its checks: query ``[B, d]`` (or ``[B, T, d]``), keys
        ``[B, S, K]``, proj ``project_keys_unchecked(keys)`` -> ``[B, S]`` (or ``[B, T, S]``)."""
        raise NotImplementedError

    def _check_keys(self, keys: Tensor) -> None:
        check_tensor("keys", keys, 3, self.key_dim)

    def check_query_keys(self, query: Tensor, keys: Tensor) -> None:
        """Raise unless query ``[B, d]`` and keys ``[B, S, K]`` fit this attention and agree."""
        check_tensor("query", query, 2, self.d)
        self._check_keys(keys)
        if query.shape[0] != keys.shape[0]:
            raise LuongError(
                f"keys: expected batch {query.shape[0]} (the query's), got {keys.shape[0]}"
            )

    def check_mask(self, mask: Tensor, keys: Tensor) -> None:
        """Raise unless ``mask`` is a bool tensor ``[B, S]`` of the keys' batch and length."""
        if not isinstance(mask, Tensor):
            raise LuongTypeError(f"mask: expected a bool tensor [B, S], got {type(mask).__name__}")
        if mask.dtype != torch.bool:
            raise LuongError(f"mask: expected dtype torch.bool, got {mask.dtype}")
        if tuple(mask.shape) != tuple(keys.shape[:2]):
            raise LuongError(
                f"mask: expected shape [B, S] = {tuple(keys.shape[:2])}, got {tuple(mask.shape)}"
            )

    def check_proj(self, proj: Tensor, keys: Tensor) -> None:
        """Raise unless ``proj`` has the shape of ``project_keys(keys)``: ``[B, S, proj_dim]``."""
        expected = (keys.shape[0], keys.shape[1], self.proj_dim)
        if not isinstance(proj, Tensor) or tuple(proj.shape) != expected:
            got = tuple(proj.shape) if isinstance(proj, Tensor) else type(proj).__name__
            width = "d" if self.proj_dim == self.d else str(self.proj_dim)
            raise LuongError(f"proj: expected shape [B, S, {width}] = {expected}, got {got}")


def check_tensor(name: str, value: object, dims: int, width: int) -> None:
    """Raise unless ``value`` is a floating tensor with ``dims`` axes and last axis ``width``."""
    layout = {2: "[B, {w}]", 3: "[B, S, {w}]"}[dims].format(w=width)
    if not isinstance(value, Tensor):
        raise LuongTypeError(f"{name}: expected a tensor {layout}, got {type(value).__name__}")
    if not value.dtype.is_floating_point:
        raise LuongTypeError(f"{name}: expected a floating-point tensor, got dtype {value.dtype}")
    if value.dim() != dims or value.shape[-1] != width:
        raise LuongError(f"{name}: expected shape {layout}, got {tuple(value.shape)}")


def _additive(v: nn.Linear, proj: Tensor, query_part: Tensor) -> Tensor:
    """v . tanh(query_part + proj_s): proj ``[B, S, d]``, query_part ``[B, d]`` -> ``[B, S]``,
    or query_part ``[B, T, d]`` -> ``[B, T, S]``."""
    if query_part.dim() == 3:
        hidden = torch.tanh(proj.unsqueeze(1) + query_part.unsqueeze(2))  # [B, T, S, d]
    else:
        hidden = torch.tanh(proj + query_part.unsqueeze(1))  # [B, S, d]
    return v(hidden).squeeze(-1)


class LuongAttention(_Attention):
    """Luong's global attention (section 3.1) with the dot, general, concat or location score
    (eq. 8), or the scaled dot.

    The decoder steps its RNN first and attends with the new state h_t
    (``query_from = "current"``), then forms h~_t = tanh(W_c [c_t ; h_t]) (eq. 5).

    Parameters (no biases), registered in this order:

    ==========  =================================================  =========================
    score       ``state_dict()`` keys                               shapes
    ==========  =================================================  =========================
    dot         ``combine.weight``                                  W_c [d, K + d]
    scaled_dot  ``combine.weight``                                  W_c [d, K + d]
    general     ``score_proj.weight``, ``combine.weight``           W_a [d, K], W_c
    concat      ``score_proj.weight``, ``v.weight``,                W_a [d, d + K] (the query
                ``combine.weight``                                  half is the first d
                                                                    columns), v [1, d], W_c
    location    ``score_proj.weight``, ``combine.weight``           W_a [max_len, d], W_c
    ==========  =================================================  =========================

    The dot score is not scaled by 1/sqrt(d); ``scaled_dot`` is h . k / sqrt(d). general is
    h . (W_a k), never W_a^T. location gives source position s the score (W_a h_t)_s, from
    the query alone, over a fixed maximum source length ``max_len`` (rows of W_a past the
    source length S are not read; the softmax covers the real positions only). It reads the
    keys only for the context, so its ``project_keys`` is ``[B, S, 0]``.

    Args:
        d: query width (the decoder's hidden size).
        score: ``"dot"``, ``"general"``, ``"concat"``, ``"location"`` or ``"scaled_dot"``.
        rng: None, an int seed or a ``torch.Generator`` for the initial weights.
        key_dim: K, the key width; defaults to ``d``. dot and scaled_dot need ``key_dim == d``.
        max_len: the location score's maximum source length S_max: required for it, and
            refused with the other scores. A longer source raises ``ValueError``.

    Raises:
        ValueError: unknown score, non-positive widths, dot or scaled_dot with
            ``key_dim != d``, ``max_len`` missing for location or given for another score.
    """

    query_from: ClassVar[str] = "current"

    def __init__(
        self,
        d: int,
        score: GlobalScore,
        rng: int | torch.Generator | None = None,
        *,
        key_dim: int | None = None,
        max_len: int | None = None,
    ) -> None:
        super().__init__()
        if score not in GLOBAL_SCORES:
            raise LuongError(f"score: expected one of {', '.join(GLOBAL_SCORES)}, got {score!r}")
        self.d = check_positive_int("d", d)
        self.key_dim = d if key_dim is None else check_positive_int("key_dim", key_dim)
        self.score = score
        if score in SAME_WIDTH_SCORES and self.key_dim != self.d:
            raise LuongError(
                f"key_dim: the {score} score needs key_dim == d = {d}, got {self.key_dim}; "
                "use general or concat for keys of another width"
            )
        self.max_len: int | None = None
        if score == "location":
            if max_len is None:
                raise LuongError(
                    "max_len: the location score needs the maximum source length, got None"
                )
            self.max_len = check_positive_int("max_len", max_len)
            self.score_proj = nn.Linear(d, self.max_len, bias=False)  # W_a [max_len, d]
        elif max_len is not None:
            raise LuongError(
                f"max_len: only the location score takes a maximum source length, got "
                f"max_len={max_len!r} with the {score} score"
            )
        if score == "general":
            self.score_proj = nn.Linear(self.key_dim, d, bias=False)  # W_a [d, K]
        elif score == "concat":
            self.score_proj = nn.Linear(d + self.key_dim, d, bias=False)  # W_a [d, d + K]
            self.v = nn.Linear(d, 1, bias=False)  # v [1, d]
        self.combine = nn.Linear(self.key_dim + d, d, bias=False)  # W_c [d, K + d]
        init_uniform_(self, make_generator(rng))

    def extra_repr(self) -> str:
        text = f"d={self.d}, score={self.score!r}, key_dim={self.key_dim}"
        return text if self.max_len is None else f"{text}, max_len={self.max_len}"

    @property
    def proj_dim(self) -> int:
        """The width of ``project_keys``' output: d (0 for the location score)."""
        return 0 if self.score == "location" else self.d

    def _check_keys(self, keys: Tensor) -> None:
        super()._check_keys(keys)
        self._check_source_length(keys.shape[1])

    def _check_source_length(self, source_len: int) -> None:
        if self.max_len is not None and source_len > self.max_len:
            raise LuongError(
                f"keys: the location score reads at most max_len = {self.max_len} source "
                f"positions, got S = {source_len}"
            )

    def project_keys_unchecked(self, keys: Tensor) -> Tensor:
        if self.score == "dot":
            return keys  # [B, S, d]
        if self.score == "general":
            return self.score_proj(keys)  # W_a k_s: [B, S, d]
        if self.score == "scaled_dot":
            return keys * (1.0 / math.sqrt(self.d))  # h . (k_s / sqrt(d)): [B, S, d]
        if self.score == "location":
            self._check_source_length(keys.shape[1])  # the decoder's path checks here
            return keys[..., :0]  # the score reads no key: [B, S, 0]
        # concat: W_a [h ; k] = W_h h + W_k k with W_k the last K columns of W_a.
        return F.linear(keys, self.score_proj.weight[:, self.d :])  # [B, S, d]

    def scores_unchecked(self, query: Tensor, keys: Tensor, proj: Tensor) -> Tensor:
        if self.score == "concat":
            query_part = F.linear(query, self.score_proj.weight[:, : self.d])  # W_h h
            return _additive(self.v, proj, query_part)
        if self.score == "location":
            # Row s of W_a h_t scores position s: [B, S], or [B, T, S] for T queries.
            return F.linear(query, self.score_proj.weight[: keys.shape[1]])
        # dot, scaled_dot and general: h . proj_s. Without gradients, one batched matrix
        # product with the query as the left factor (on the CPU a row vector times proj^T
        # runs several times faster than proj times a column vector). With gradients, a
        # broadcast product, whose backward is the cheaper one (see read).
        if query.dim() == 3:
            return torch.bmm(query, proj.transpose(1, 2))  # [B, T, S]
        if torch.is_grad_enabled():
            return (proj * query.unsqueeze(1)).sum(2)  # [B, S]
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
        self.d = check_positive_int("d", d)
        self.key_dim = d if key_dim is None else check_positive_int("key_dim", key_dim)
        self.score = "bahdanau"
        self.query_proj = nn.Linear(d, d, bias=False)
        self.key_proj = nn.Linear(self.key_dim, d, bias=False)
        self.v = nn.Linear(d, 1, bias=False)
        self.combine = nn.Linear(self.key_dim + d, d, bias=False)
        init_uniform_(self, make_generator(rng))

    def extra_repr(self) -> str:
        return f"d={self.d}, key_dim={self.key_dim}"

    def project_keys_unchecked(self, keys: Tensor) -> Tensor:
        return self.key_proj(keys)  # W_k k_s: [B, S, d]

    def scores_unchecked(self, query: Tensor, keys: Tensor, proj: Tensor) -> Tensor:
        return _additive(self.v, proj, self.query_proj(query))
