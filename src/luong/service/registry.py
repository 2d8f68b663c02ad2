"""The models a server decodes with, and what its routes share, with no transport in it:
``ServedModel`` (a name, its ``Translator``, its run's figures), ``TranslationService``
(the models by name, the language pairs LibreTranslate routes by, the deployment's limits,
its keys, its default glossary, and the batcher that decodes requests of the same
``BatchKey`` together on its worker thread, each batch as one ``TranslationRequest``), and
``model_list``, what ``GET /api/models`` answers.

``luong.server.app`` builds one ``TranslationService`` per app and maps what it refuses to
HTTP; another face (gRPC, a queue) would build the same and map it to its own errors.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from luong.common.errors import LuongError, LuongTypeError
from luong.config.faces import ServeLimits
from luong.config.request import GlossaryPairs, RequestOptions
from luong.config.search import OptionError, SearchOptions
from luong.config.translation_request import TranslationRequest
from luong.service.batcher import Batcher
from luong.translation.translations import Translation
from luong.translation.translator import Translator

__all__ = ["BatchKey", "ServedModel", "TranslationService", "model_list"]


@dataclass(frozen=True)
class ServedModel:
    """A model the server decodes with: its name in requests, the translator (with the
    translation memory its requests consult, ``Translator.with_resources``), and the
    metrics of its run folder (``metrics.json``; None when there is none)."""

    name: str
    translator: Translator
    metrics: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise LuongError(f"name: expected a non-empty str, got {self.name!r}")
        if not isinstance(self.translator, Translator):
            raise LuongTypeError(
                f"translator: expected a Translator, got {type(self.translator).__name__}"
            )


@dataclass(frozen=True)
class BatchKey:
    """What the requests of one batch share: the model, the decoding options and what is
    asked beside them. A sampling request carries its own ``ticket``, so it is decoded alone
    and a seed reproduces it."""

    model: str
    search: SearchOptions
    request: RequestOptions = RequestOptions()
    ticket: int = 0


@dataclass(frozen=True)
class TranslationService:
    """What the faces of one server share: the models (by name, the first the default),
    the limits, the options class requests may give, the keys of the translating routes,
    LibreTranslate's routing, the batcher that decodes on its worker thread, the sampling
    requests' tickets and the default glossary (after each request's own pairs)."""

    models: list[ServedModel]
    by_name: dict[str, ServedModel]
    limits: ServeLimits
    options: type[SearchOptions]
    api_keys: frozenset[str] | None
    pairs: dict[tuple[str, str], str]  # LibreTranslate's routing: the first model wins
    batcher: Batcher[BatchKey, str, Translation]
    tickets: Iterator[int]
    glossary: GlossaryPairs

    @staticmethod
    def of(
        models: Sequence[ServedModel],
        *,
        max_batch: int = 64,
        max_wait_ms: float = 2.0,
        limits: ServeLimits | None = None,
        options: type[SearchOptions] = SearchOptions,
        api_keys: Collection[str] | None = None,
        glossary: GlossaryPairs = (),
    ) -> TranslationService:
        """The service over ``models`` (``luong.server.app.create_app`` says what each
        argument is), every argument checked.

        Raises:
            ValueError: no models, two with one name, a bad ``max_batch`` / ``max_wait_ms``,
                an empty ``api_keys``, a glossary term a model's vocabulary cannot write.
            TypeError: a model that is not a ``ServedModel``, ``limits`` not
                ``ServeLimits``, ``options`` not ``SearchOptions`` or a subclass, a glossary
                that is not a list of pairs of strings.
        """
        models = list(models)
        by_name = _models_by_name(models)
        limits = limits if limits is not None else ServeLimits()
        if not isinstance(limits, ServeLimits):
            raise LuongTypeError(f"limits: expected ServeLimits, got {type(limits).__name__}")
        if (
            isinstance(max_wait_ms, bool)
            or not isinstance(max_wait_ms, int | float)
            or not 0 <= max_wait_ms < float("inf")
        ):
            raise LuongError(f"max_wait_ms: expected a finite number >= 0, got {max_wait_ms!r}")
        if not (isinstance(options, type) and issubclass(options, SearchOptions)):
            raise LuongTypeError(f"options: expected SearchOptions or a subclass, got {options!r}")
        try:
            default = RequestOptions(glossary=glossary).glossary
        except OptionError as error:
            raise LuongTypeError(str(error)) from None
        for served in models:
            if default:
                served.translator.check_glossary(default)
        keys = None
        if api_keys is not None:
            keys = frozenset(api_keys)
            if not keys or not all(isinstance(key, str) and key for key in keys):
                raise LuongError("api_keys: expected non-empty strings, at least one, or None")
        pairs: dict[tuple[str, str], str] = {}
        for served in models:
            src_lang, tgt_lang = served.translator.src_lang, served.translator.tgt_lang
            if src_lang is not None and tgt_lang is not None:
                pairs.setdefault((src_lang, tgt_lang), served.name)

        def run(key: BatchKey, sources: list[str]) -> list[Translation]:
            """A batch of requests that share ``key``, on the batcher's worker thread."""
            request = TranslationRequest(key.search, key.request, batch_size=max_batch)
            return list(by_name[key.model].translator.answer(sources, request))

        batcher: Batcher[BatchKey, str, Translation] = Batcher(
            run, max_batch=max_batch, max_wait=max_wait_ms / 1000.0
        )
        return TranslationService(
            models, by_name, limits, options, keys, pairs, batcher, itertools.count(1), default
        )

    def with_glossary(self, request: RequestOptions) -> RequestOptions:
        """``request`` with the default glossary after its own pairs."""
        if not self.glossary:
            return request
        return dataclasses.replace(request, glossary=request.glossary + self.glossary)


def _models_by_name(models: list[ServedModel]) -> dict[str, ServedModel]:
    """The models by name, checked: at least one, each a ``ServedModel``, no name twice."""
    if not models:
        raise LuongError("models: expected at least one model, got none")
    for served in models:
        if not isinstance(served, ServedModel):
            raise LuongTypeError(f"models: expected ServedModel items, got {type(served).__name__}")
    by_name = {served.name: served for served in models}
    if len(by_name) != len(models):
        names = [served.name for served in models]
        twice = sorted({name for name in names if names.count(name) > 1})
        raise LuongError(f"models: expected distinct names, got {', '.join(twice)} twice")
    return by_name


def model_list(service: TranslationService) -> dict[str, Any]:
    """What a client needs of the served models: each one's name, language pair (None
    where its folder records none), architecture (``config.json``'s sizes and its longest
    source), vocabulary sizes, decoding defaults and its run's figures (``_run_figures``);
    the limits, and whether a translating request needs a key. Nothing of the host: no
    path, command line or version."""
    return {
        "models": [
            {
                "name": served.name,
                "src_lang": served.translator.src_lang,
                "tgt_lang": served.translator.tgt_lang,
                "config": served.translator.config.to_json(),
                "src_vocab_size": len(served.translator.src_vocab),
                "tgt_vocab_size": len(served.translator.tgt_vocab),
                "decoding": served.translator.search.to_json(),
                "metrics": _run_figures(served.metrics),
            }
            for served in service.models
        ],
        "limits": dataclasses.asdict(service.limits),
        "key_required": service.api_keys is not None,
    }


def _run_figures(metrics: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The figures of a run's ``metrics.json`` that ``model_list`` shows: its top-level
    numbers (scores, steps, pairs, parameters, seconds; a number that is not finite as
    None). Nothing else: the file also records the command line, the data's paths and the
    versions of the host's software, which are no client's business."""
    if metrics is None:
        return None
    return {
        key: None if isinstance(value, float) and not math.isfinite(value) else value
        for key, value in metrics.items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }
