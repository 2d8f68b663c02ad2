"""A request's limits, with no transport: ``check_request`` checks sources and options
against a deployment's ``ServeLimits`` and the translator's own verdicts
(``Translator.admit``), and raises a ``LimitError`` that says whether the request is too
large (HTTP's 413) or invalid (422). A face maps it to its own shape of error: the HTTP API
to its status code, LibreTranslate's route to its 400 (``luong.server.app``); a new face (gRPC,
a queue) takes the same checks, and the same messages, by calling it."""

from __future__ import annotations

from collections.abc import Sequence

from luong.common.errors import LuongError
from luong.config.faces import ServeLimits
from luong.config.request import RequestOptions
from luong.config.search import SearchOptions
from luong.translation.admission import UNREADABLE
from luong.translation.translator import Translator

__all__ = ["LimitError", "check_request"]


class LimitError(LuongError):
    """A request above a deployment's limits, or that its model cannot take:
    ``too_large`` (too many sources, a source too long: HTTP's 413) or not (an option above
    its limit, a source that is not Unicode, a glossary term the model cannot write: 422).
    ``str(error)`` names the limit: ``"max_beam: beam 9, above the limit of 8"``."""

    def __init__(self, too_large: bool, message: str) -> None:
        super().__init__(message)
        self.too_large = too_large


def check_request(
    sources: Sequence[str],
    search: SearchOptions,
    translator: Translator,
    limits: ServeLimits,
    request: RequestOptions,
    names: Sequence[str] | None = None,
) -> None:
    """Raise a ``LimitError`` for the first limit the request passes (each source's verdict
    from ``Translator.admit``: unrepresentable, too long as the request decodes it);
    ``names`` name each source in the messages (default ``source I``).

    Raises:
        LimitError: as above.
    """
    if names is None:
        names = [f"source {i}" for i in range(len(sources))]
    if len(sources) > limits.max_sources:
        raise LimitError(
            True, f"max_sources: {len(sources)} sources, above the limit of {limits.max_sources}"
        )
    longest = min(limits.max_source_len, translator.max_src_len)
    verdicts = translator.admit(sources, request, max_src_len=longest)
    for name, verdict in zip(names, verdicts, strict=True):
        if verdict is not None and verdict.kind in UNREADABLE:
            raise LimitError(False, f"sources: {name} is {verdict.detail}")
    for name, verdict in zip(names, verdicts, strict=True):
        if verdict is not None and verdict.kind == "too_long":
            raise LimitError(
                True,
                f"max_source_len: {name} has {verdict.length} symbols, above the limit of "
                f"{longest}",
            )
    if search.beam > limits.max_beam:
        raise LimitError(
            False, f"max_beam: beam {search.beam}, above the limit of {limits.max_beam}"
        )
    if request.glossary:
        try:
            translator.check_glossary(request.glossary)
        except LuongError as error:
            raise LimitError(False, str(error)) from None
    if search.nbest > limits.max_nbest:
        raise LimitError(
            False, f"max_nbest: nbest {search.nbest}, above the limit of {limits.max_nbest}"
        )
    if len(search.prefix) > limits.max_prefix_len:
        raise LimitError(
            False,
            f"max_prefix_len: the prefix has {len(search.prefix)} characters, above the limit "
            f"of {limits.max_prefix_len}",
        )
    for name in ("max_len", "min_len"):
        value = getattr(search, name)
        if value is not None and value > limits.max_output_len:
            raise LimitError(
                False,
                f"max_output_len: {name} {value}, above the limit of {limits.max_output_len}",
            )
