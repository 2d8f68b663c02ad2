"""A model's decoding defaults: the search its training chose for its test split, which every
face uses for what a request does not say.

    decoding_defaults("runs/de")             # SearchOptions(beam=5, alpha=0.6): the preset's
    decoding_defaults("runs/dates")          # SearchOptions(): greedy
    with_defaults({"nbest": 3}, SearchOptions(beam=5, alpha=0.6))   # beam 5, alpha 0.6, nbest 3

A run folder (and what ``luong quantize`` and ``luong average`` derive from one) records its
training settings in ``config.toml``: its ``[train]`` table's ``test_beam``, ``test_alpha`` and
``max_decode_len`` are how ``luong train`` decoded the test split and reported its figures. So
``luong translate``, ``luong eval``, ``luong po``, ``luong plot``, ``/api/translate`` and
LibreTranslate's ``/translate`` decode a model the way its test figures were measured, unless
a flag or a request field says otherwise: the same input gives the same output on every face.
A folder without ``config.toml`` (``Seq2Seq.save_pretrained`` from Python) decodes greedily.

A folder's lexical shortlist (``luong shortlist``, ``shortlist.safetensors``) is no setting
here: it is data the model loads with its weights, and ``SearchOptions.shortlist``'s default
(None) decodes over it whole wherever the model is used, so every face follows it alike;
``--shortlist 0`` (a request's ``"shortlist": 0``) searches the full vocabulary.

Plain data: no torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from luong.common.errors import LuongError, LuongTypeError
from luong.common.folder_files import RUN_CONFIG
from luong.config.run import read_toml_tables
from luong.config.search import OptionError, SearchOptions
from luong.config.train import SEARCH_FIELDS

__all__ = ["SAMPLING_DROPS", "decoding_defaults", "with_defaults"]

SAMPLING_DROPS = ("beam", "alpha", "beta")
"""The fields of a model's defaults that a sampling request does not take: sampling draws one
token a step, and a length penalty ranks the hypotheses of a beam."""


def decoding_defaults(folder: str | Path) -> SearchOptions:
    """The search ``folder``'s training chose for its test split (``config.toml``'s
    ``[train]`` ``test_beam``, ``test_alpha``, ``max_decode_len``); greedy search
    (``SearchOptions()``) for a folder without ``config.toml``.

    Raises:
        ValueError: ``config.toml`` unreadable, or one of those settings out of bounds (the
            message names the file and the setting).
    """
    path = Path(folder) / RUN_CONFIG
    if not path.is_file():
        return SearchOptions()
    train = read_toml_tables(path).get("train") or {}
    values = {name: train[key] for name, key in SEARCH_FIELDS.items() if key in train}
    if values.get("max_len") == 0:  # max_decode_len 0: the model's own limit
        values["max_len"] = None
    try:
        return SearchOptions(**values)
    except OptionError as error:
        raise LuongError(f"{path}: [train] {SEARCH_FIELDS[error.name]}: {error.detail}") from None


def with_defaults(
    given: Mapping[str, Any],
    defaults: SearchOptions,
    cls: type[SearchOptions] = SearchOptions,
) -> SearchOptions:
    """The ``cls`` of the fields ``given`` (what a flag or a request said), each other field
    the model's default (``defaults``), but a sampling request takes none of the defaults'
    beam, alpha and beta (``SAMPLING_DROPS``).

    Raises:
        OptionError: the options together out of bounds (named as ``cls`` names them).
        TypeError: ``defaults`` not a SearchOptions.
    """
    if not isinstance(defaults, SearchOptions):
        raise LuongTypeError(f"defaults: expected SearchOptions, got {type(defaults).__name__}")
    dropped = SAMPLING_DROPS if given.get("sample") else ()
    fields = {
        f.name: getattr(defaults, f.name)
        for f in dataclasses.fields(SearchOptions)
        if f.name not in dropped and getattr(defaults, f.name) != f.default
    }
    return cls(**{**fields, **given})
