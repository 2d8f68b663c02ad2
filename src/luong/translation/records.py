"""What is written of a ``Translation`` (``luong.translation.translations``): the lines
``luong translate`` writes (``output_lines``: text or jsonl, a window of sources at a
time), and the JSON-ready records the jsonl lines and the server's answers are made of (a
hypothesis', a translation's, a memory's matches, a glossary's terms).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from luong.common.errors import LuongError, LuongTypeError
from luong.common.lines import json_line
from luong.config.faces import FORMATS
from luong.config.translation_request import TranslationRequest
from luong.model.ensemble import Decodable
from luong.search import Hypothesis, hypothesis_symbols, hypothesis_text
from luong.translation.alignment import hypothesis_alignment, pharaoh
from luong.translation.confidence import confidence
from luong.translation.translations import Translation
from luong.translation.translator import Translator

__all__ = [
    "hypothesis_record",
    "memory_record",
    "output_lines",
    "term_records",
    "translation_records",
]


def output_lines(
    model: Decodable | Translator,
    sources: Sequence[str],
    request: TranslationRequest | None = None,
    *,
    format: str = "text",
) -> Iterator[str]:
    """The lines ``luong translate`` writes, one per source, in order, handed out as they are
    done: memory holds one window of sources' outputs (``Translator.answer``), whatever the
    number of sources, and attention only where it is written (jsonl), used
    (``search.replace_unk``, ``align``, masked placeholders).

    Args:
        model: the model, an ``Ensemble``, or a ``Translator`` (with its translation memory,
            ``Translator.with_resources``: in text, a source it holds exactly gets the
            memory's translation; in jsonl, every record gets ``"origin"`` (``"memory"`` or
            ``"model"``) and ``"matches"``: ``memory_record``).
        sources: the inputs (``fit_sources``' ``sources``).
        request: the request (``TranslationRequest``; default: the model's decoding
            defaults); its ``window`` by default ``8 * batch_size``. With
            ``request.options.align`` each line holds after each output a tab and its
            Pharaoh links (``0-0 1-2``); in jsonl, each record's ``"alignment"``, a list of
            ``[i, j]`` pairs. jsonl writes the attention whatever ``options.attention``,
            and with a glossary each line's ``"glossary"``: the terms its outputs hold
            (``term_records``).
        format: ``"text"``: the n-best outputs, tab-separated (an empty line for an empty
            input); ``"jsonl"``: ``{"source", "hypotheses": [hypothesis_record, ...]}``.

    Returns:
        an iterator of lines, without their newline.

    Raises:
        TypeError: ``request`` is not a ``TranslationRequest``.
        ValueError: an unknown ``format``; as ``Translator.answer``, on the call itself.
    """
    if format not in FORMATS:
        raise LuongError(f"format: expected one of {', '.join(FORMATS)}, got {format!r}")
    request = TranslationRequest() if request is None else request
    if not isinstance(request, TranslationRequest):
        raise LuongTypeError(
            f"request: expected a TranslationRequest, got {type(request).__name__}"
        )
    translator = model if isinstance(model, Translator) else Translator(model)
    if request.window is None:
        request = replace(request, window=8 * request.batch_size)
    if format == "jsonl":  # each record holds its attention
        request = replace(request, options=replace(request.options, attention=True))
    translations = translator.answer(sources, request)
    search = translator.search if request.search is None else request.search
    replace_unk = search.replace_unk
    if format == "text":
        return (_text_line(t) for t in translations)
    asked = request.options
    return (
        _jsonl_line(translator.model, t, replace_unk, asked.align, bool(asked.glossary))
        for t in translations
    )


def _text_line(translation: Translation) -> str:
    """The n-best outputs, tab-separated, each followed by its Pharaoh links with ``align``."""
    fields = []
    for k, text in enumerate(translation.texts):
        fields.append(text)
        if translation.alignments is not None:
            fields.append(pharaoh(translation.alignments[k]))
    return "\t".join(fields)


def _jsonl_line(
    model: Decodable, translation: Translation, replace_unk: bool, align: bool, glossary: bool
) -> str:
    records = translation_records(model, translation, replace_unk, align)
    line: dict[str, Any] = {
        "source": translation.source,
        "hypotheses": records,
        **memory_record(translation),
    }
    if glossary:
        line["glossary"] = term_records(translation)
    # No NaN (hypothesis_record writes null for what is not finite; JSON parsers reject
    # NaN), and no raw U+2028 that a reader splitting lines would break the record at.
    return json_line(line)


def memory_record(translation: Translation) -> dict[str, Any]:
    """What a translation memory says of ``translation``, JSON-ready: ``{"origin":
    "memory" | "model", "matches": [{"source", "target", "score", "origin", "note"?}, ...]}``
    (``luong.memory.translation_memory.Match.record``, best first); ``{}`` when no memory was
    consulted."""
    if translation.matches is None:
        return {}
    return {
        "origin": translation.origin,
        "matches": [match.record() for match in translation.matches],
    }


def term_records(translation: Translation) -> list[dict[str, str]]:
    """The glossary's terms a ``Translation``'s outputs hold, as JSON-ready records
    ``{"source": term, "target": term}`` (as the glossary lists them), in the source's
    order: a jsonl line's and a server result's ``"glossary"``."""
    return [{"source": term.source, "target": term.target} for term in translation.terms]


def translation_records(
    model: Decodable, translation: Translation, replace_unk: bool = False, align: bool = False
) -> list[dict[str, Any]]:
    """A ``Translation``'s hypotheses as JSON-ready records (``hypothesis_record``), each
    with the text as written (placeholders put back or kept) and, for an output that came
    from a second search, ``"searched_again": true`` (its score, confidence and attention
    are the first search's). A translation from a memory (``origin`` ``"memory"``) has
    one record, ``{"text"}``: nothing was decoded."""
    if translation.origin == "memory":
        return [{"text": text} for text in translation.texts]
    records = []
    for k, hypothesis in enumerate(translation.hypotheses):
        # the links the translation holds already (request.align): not aligned a second time
        links = translation.alignments[k] if translation.alignments is not None else None
        again = align and links is None
        record = hypothesis_record(model, hypothesis, translation.source, replace_unk, again)
        if align and links is not None:
            record["alignment"] = [[i, j] for i, j in links]
        if translation.texts[k] != record["text"]:
            record["text"] = translation.texts[k]
            if translation.searched_again[k]:
                record["searched_again"] = True
        records.append(record)
    return records


def hypothesis_record(
    model: Decodable,
    hypothesis: Hypothesis,
    source: str,
    replace_unk: bool = False,
    align: bool = False,
) -> dict[str, Any]:
    """A hypothesis as JSON-ready data: ``text``, ``score``, ``confidence`` (the geometric
    mean of its tokens' probabilities, in [0, 1]: ``luong.translation.confidence``), ``tokens``
    (output symbols, EOS included) and ``attention`` ``[T][S]`` over the source symbols and its EOS;
    numbers rounded to 6 decimals, and None (JSON's null) for a number that is not finite,
    which JSON cannot hold. With ``align``, ``alignment``: the word links
    ``[[i, j], ...]``, source word ``i``, output word ``j``
    (``luong.translation.alignment.hypothesis_alignment``)."""
    copy_from = source if replace_unk else None
    record: dict[str, Any] = {
        "text": hypothesis_text(model, hypothesis, copy_from),
        "score": _json_number(hypothesis.score),
        "confidence": _json_number(confidence(hypothesis)),
        "tokens": hypothesis_symbols(model, hypothesis, copy_from),
        "attention": [[_json_number(w) for w in row] for row in hypothesis.attention.tolist()],
    }
    if align:
        links = hypothesis_alignment(hypothesis, source, model.src_vocab, model.tgt_vocab)
        record["alignment"] = [[i, j] for i, j in links]
    return record


def _json_number(value: float) -> float | None:
    return round(value, 6) if math.isfinite(value) else None
