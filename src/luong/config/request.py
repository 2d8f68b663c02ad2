"""What a caller asks of a translation beside how to search: ``RequestOptions``.

``SearchOptions`` says how to decode (beam, penalties, prefix, sampling); ``RequestOptions``
says what to do around the search and what each output carries: the source's placeholders
kept or not (``placeholders``), each output's word alignment (``align``), its attention
(``attention``), the terms its outputs hold (``glossary``: ``luong.memory.glossary``), and whether
the translator's translation memory is consulted (``memory``: the memory itself is the
translator's, read once from the files a face names, ``Translator.with_resources``). Both go
into one ``TranslationRequest`` (``luong.config.translation_request``), handed whole to
``luong.translation.translator.Translator.answer``, the one path from a request to its outputs,
which every face calls: ``luong translate``, ``luong eval``, ``luong po``,
the server's ``POST /api/translate`` and LibreTranslate's ``/translate``.

    Translator(model).translations(texts, SearchOptions(beam=5),
                                   RequestOptions(placeholders="constrain"))

**To add a request field**: a field here with its ``option(...)`` metadata
(its help text and bounds, checked on construction as ``SearchOptions``' are) and a rule
between fields in ``__post_init__``; read it in ``Translator.answer``. The server's
request body (``luong.server.api_requests.request_model``) and its JSON schema take every
field from here; the commands build the value from their flags
(``luong.cli.common.request_options``). A field of another type than ``SearchOptions``' (int,
float, bool, str) is checked by a function of its own here (``glossary``: ``GlossaryPairs``,
a list of pairs) and given its JSON type in the server's body
(``luong.server.api_requests.JSON_KINDS``). Plain data: imports only the plain floors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from luong.common.errors import LuongTypeError
from luong.common.lines import lone_surrogate
from luong.config.faces import PLACEHOLDER_MODES
from luong.config.search import (
    OptionError,
    OptionTypeError,
    SearchOptions,
    check_field,
    option,
    option_specs,
)

__all__ = ["GlossaryPairs", "RequestOptions"]

GlossaryPairs = tuple[tuple[str, str], ...]
"""A request's glossary: ``(source term, target term)`` pairs (``luong.memory.glossary``)."""


@dataclass(frozen=True)
class RequestOptions:
    """What a caller asks of a translation beside how to search, checked on construction
    (``OptionError``, as ``SearchOptions``: ``"align: not with placeholders='mask';
    expected 'off'"``)."""

    attention: bool = field(default=False, metadata=option("return each output's attention [T][S]"))
    align: bool = field(
        default=False, metadata=option("return each output's word alignment [[i, j], ...]")
    )
    placeholders: str = field(
        default="off",
        metadata=option(
            "the source's placeholders (printf, %(name)s, {name}, tags, --options, URLs, "
            "\\n): " + "; ".join(f"{name}: {text}" for name, text in PLACEHOLDER_MODES.items()),
            choices=tuple(PLACEHOLDER_MODES),
        ),
    )
    glossary: GlossaryPairs = field(
        default=(),
        metadata=option(
            "[source term, target term] pairs: where a source holds a term (whole words; a "
            "term in lower case matches in any case), each output holds its target term as "
            "listed (lexically constrained beam search; not with sampling)"
        ),
    )
    memory: bool = field(
        default=True,
        metadata=option(
            "consult the translation memory the face was given (--tm): a source it holds "
            "exactly takes the memory's translation, the others carry its fuzzy matches; "
            "false: the model translates every source"
        ),
    )

    def __post_init__(self) -> None:
        for f, kind, spec in option_specs(type(self)):
            if kind == GlossaryPairs:
                object.__setattr__(self, f.name, _pairs(f.name, getattr(self, f.name)))
                continue
            check_field(f.name, kind, spec, getattr(self, f.name))
        if self.align and self.placeholders != "off":
            # The links would be the masked source's and the output's before the spans are
            # put back: not what is written.
            raise OptionError(
                "align", f"not with placeholders={self.placeholders!r}; expected 'off'"
            )

    def check_search(self, search: SearchOptions) -> None:
        """Raise unless this request can be served with ``search``: what the two ask
        together, checked before anything is decoded (so that no output stops half-way).
        ``placeholders="constrain"`` searches again, with a wider beam, where an output
        missed a placeholder: by beam search, not sampling.

        Raises:
            OptionError: ``"sample: placeholders constrain keeps them by beam search, not
                sampling; ..."``; a glossary with sampling.
            LuongTypeError: ``search`` is not a ``SearchOptions``.
        """
        if not isinstance(search, SearchOptions):
            raise LuongTypeError(f"search: expected SearchOptions, got {type(search).__name__}")
        if self.placeholders == "constrain" and search.sample:
            raise OptionError(
                "sample",
                "placeholders constrain keeps them by beam search, not sampling; sample "
                "with placeholders mask or off",
            )
        if self.glossary and search.sample:
            raise OptionError(
                "sample", "a glossary's terms are held by constrained beam search, not sampling"
            )

    @property
    def keeps_attention(self) -> bool:
        """Whether the search must keep each hypothesis' attention for this request: it is
        returned, or the alignment or the masked placeholders are made from it."""
        return self.attention or self.align or self.placeholders == "mask"


def _pairs(name: str, value: object) -> GlossaryPairs:
    """``value`` (a list of ``[source term, target term]`` pairs of strings, lists or
    tuples) as a tuple of pairs, each string valid Unicode; the terms themselves are checked
    where they are matched (``luong.memory.glossary.Glossary``).

    Raises:
        OptionTypeError: not a list of pairs of strings.
        OptionError: a lone surrogate.
    """
    expected = "expected a list of [source term, target term] pairs of strings"
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise OptionTypeError(name, f"{expected}, got {type(value).__name__}")
    pairs = []
    for i, pair in enumerate(value):
        if (
            not isinstance(pair, list | tuple)
            or len(pair) != 2
            or not all(isinstance(term, str) for term in pair)
        ):
            raise OptionTypeError(name, f"{expected}, got {pair!r:.60} at {i}")
        for term in pair:
            surrogate = lone_surrogate(term)
            if surrogate is not None:
                raise OptionError(
                    name,
                    f"expected valid Unicode, got a lone surrogate at character {surrogate} "
                    f"of pair {i}",
                )
        pairs.append((pair[0], pair[1]))
    return tuple(pairs)
