"""Output and source symbols: what each attention row and column stands for, and
unknown-word replacement (an output's ``<unk>`` copied from the source word it attended to).
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from luong.common.errors import LuongError
from luong.data.vocab import Vocab
from luong.model.ensemble import Decodable
from luong.search.hypothesis import Hypothesis

__all__ = ["hypothesis_symbols", "hypothesis_text", "replace_unknowns", "source_symbols"]


def source_symbols(model: Decodable, text: str) -> list[str]:
    """The symbols the model reads for ``text``, one per attention column ``S_real``: its
    tokens as written after the vocabulary's normalisation (unknown ones included) and
    ``"</s>"``."""
    tokens = model.src_vocab.tokenize(text)
    surface = model.src_vocab.surface_tokens(text)
    return [*(surface if len(surface) == len(tokens) else tokens), Vocab.EOS]


def replace_unknowns(
    symbols: Sequence[str], sources: Sequence[str], attention: Tensor, unk: str = Vocab.UNK
) -> list[str]:
    """Copy the most attended source symbol in place of each ``unk`` (Luong et al. 2015,
    "Addressing the Rare Word Problem in Neural Machine Translation", the copy model).

    Args:
        symbols: output symbols ``[T']``, one per row of ``attention`` (T' <= T).
        sources: the source symbols to copy from ``[S']``: the first S' columns; the columns
            after them (the source's EOS) are never copied.
        attention: ``[T, S_real]`` with S' <= S_real.
        unk: the unknown symbol.

    Returns:
        ``symbols`` with each ``unk`` replaced.

    Raises:
        ValueError: shapes that do not fit.
    """
    if attention.dim() != 2 or attention.shape[0] < len(symbols):
        raise LuongError(
            f"attention: expected [T >= {len(symbols)}, S], got {tuple(attention.shape)}"
        )
    if not 0 < len(sources) <= attention.shape[1]:
        return list(symbols)
    best = attention[:, : len(sources)].argmax(dim=1).tolist()
    return [sources[best[t]] if s == unk else s for t, s in enumerate(symbols)]


def hypothesis_symbols(
    model: Decodable, hypothesis: Hypothesis, source: str | None = None
) -> list[str]:
    """The output symbols of ``hypothesis``, one per token and attention row (EOS as
    ``"</s>"``). With ``source`` (the input text), each ``<unk>`` becomes the source token it
    attended to most (``replace_unknowns``)."""
    symbols = model.tgt_vocab.symbols_of(hypothesis.tokens, strip=False)
    if source is None:
        return symbols
    sources = source_symbols(model, source)[:-1]
    return replace_unknowns(symbols, sources, hypothesis.attention)


def hypothesis_text(model: Decodable, hypothesis: Hypothesis, source: str | None = None) -> str:
    """The output text of ``hypothesis`` as ``Vocab.decode`` writes it (up to EOS, without PAD
    and BOS); with ``source`` given, unknowns replaced (``hypothesis_symbols``)."""
    symbols = hypothesis_symbols(model, hypothesis, source)
    kept = []
    for token, symbol in zip(hypothesis.tokens, symbols, strict=True):
        if token == Vocab.eos_id:
            break
        if token not in (Vocab.pad_id, Vocab.bos_id):
            kept.append(symbol)
    return model.tgt_vocab.join(kept)
