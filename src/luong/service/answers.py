"""The answer of a translation request as plain data, apart from any transport: for each
source its tokens, the prefix's length, its hypotheses' records (``luong.translation.records``:
tokens, scores, confidence, attention and alignments where asked), what a memory gave and the
glossary's terms held. ``luong.server.app`` writes it as ``POST /api/translate``'s JSON."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from luong.config.request import RequestOptions
from luong.config.search import SearchOptions
from luong.translation.records import memory_record, term_records, translation_records
from luong.translation.translations import Translation
from luong.translation.translator import Translator

__all__ = ["translation_answer"]


def translation_answer(
    name: str,
    translator: Translator,
    translations: Sequence[Translation],
    search: SearchOptions,
    request: RequestOptions,
) -> dict[str, Any]:
    """``{"model": name, "results": [...]}``, a result per translation: what ``request``
    asked of it (attention, alignments, the glossary's terms) and no more."""
    prefix_tokens = translator.tgt_vocab.tokenize(search.prefix)
    results = []
    for translation in translations:
        if not (request.attention or request.align):  # no weights to turn into lists
            hyps = [
                dataclasses.replace(h, attention=h.attention[:, :0]) for h in translation.hypotheses
            ]
            translation = dataclasses.replace(translation, hypotheses=hyps)
        records = translation_records(
            translator.model, translation, search.replace_unk, request.align
        )
        if not request.attention:
            for record in records:
                record.pop("attention", None)  # a memory's record has none
        result = {
            "source": translation.source,
            "source_tokens": translator.source_symbols(translation.searched),
            "prefix_tokens": len(prefix_tokens),
            "hypotheses": records,
            **memory_record(translation),
        }
        if request.glossary:
            result["glossary"] = term_records(translation)
        results.append(result)
    return {"model": name, "results": results}
