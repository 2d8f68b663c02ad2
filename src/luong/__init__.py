"""luong: attention-based RNN sequence-to-sequence models after Luong, Pham and Manning (2015).

import luong
model = luong.load("runs/dates")
model.translate(["3 May 1979", "Tuesday, March 6, 1979"])  # ['1979-05-03', '1979-03-06']
model.translate_nbest(["3 May 1979"], luong.SearchOptions(beam=5, nbest=3))  # [[3 best]]

The package's top floor: it gathers the public names of the modules below it
(``docs/architecture.md``); no module of the package imports it. Each name is imported from
its module when first used (``PUBLIC``, PEP 562's module ``__getattr__``), so ``import
luong`` imports no torch: ``luong --help`` (``luong.cli``, a module of this package) answers
at once, and a program pays for torch when it first touches a name that needs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from luong.version import __version__

if TYPE_CHECKING:  # the names of PUBLIC, for type checkers (tests/test_architecture.py)
    from luong.common.devices import use_threads
    from luong.common.errors import LuongError, LuongTypeError
    from luong.config import RunConfig, Seq2SeqConfig, TrainConfig
    from luong.config.request import RequestOptions
    from luong.config.search import SearchOptions
    from luong.config.translation_request import TranslationRequest
    from luong.data.vocab import Vocab
    from luong.evaluation.evaluate import evaluate
    from luong.model.attention import (
        BahdanauAttention,
        LuongAttention,
        length_mask,
        masked_softmax,
    )
    from luong.model.decoder import DecoderState, Memory
    from luong.model.ensemble import Ensemble
    from luong.model.local_attention import LocalAttention
    from luong.model.seq2seq import Seq2Seq
    from luong.search import Hypothesis, beam_search, decode, greedy_search
    from luong.training.run import TrainResult, run, train
    from luong.training.settings import configure
    from luong.training.trainer import Trainer
    from luong.translation.translations import Translation
    from luong.translation.translator import Translator, load, translate

PUBLIC: dict[str, tuple[str, ...]] = {
    "luong.model.attention": (
        "BahdanauAttention",
        "LuongAttention",
        "length_mask",
        "masked_softmax",
    ),
    "luong.config": ("RunConfig", "Seq2SeqConfig", "TrainConfig"),
    "luong.model.decoder": ("DecoderState", "Memory"),
    "luong.common.devices": ("use_threads",),
    "luong.model.ensemble": ("Ensemble",),
    "luong.model.local_attention": ("LocalAttention",),
    "luong.common.errors": ("LuongError", "LuongTypeError"),
    "luong.evaluation.evaluate": ("evaluate",),
    "luong.model.seq2seq": ("Seq2Seq",),
    "luong.config.request": ("RequestOptions",),
    "luong.training.run": ("TrainResult", "run", "train"),
    "luong.training.settings": ("configure",),
    "luong.search": ("Hypothesis", "beam_search", "decode", "greedy_search"),
    "luong.config.search": ("SearchOptions",),
    "luong.config.translation_request": ("TranslationRequest",),
    "luong.training.trainer": ("Trainer",),
    "luong.translation.translations": ("Translation",),
    "luong.translation.translator": ("Translator", "load", "translate"),
    "luong.data.vocab": ("Vocab",),
}
"""The package's public names, by the module each comes from (``luong.NAME`` is
``luong.module.NAME``, imported on first use)."""

MODULE_OF = {name: module for module, names in PUBLIC.items() for name in names}
"""``PUBLIC`` the other way round: the module of each public name."""

__all__ = [
    "BahdanauAttention",
    "DecoderState",
    "Ensemble",
    "Hypothesis",
    "LocalAttention",
    "LuongAttention",
    "LuongError",
    "LuongTypeError",
    "Memory",
    "RequestOptions",
    "RunConfig",
    "Seq2Seq",
    "SearchOptions",
    "Seq2SeqConfig",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "Translation",
    "TranslationRequest",
    "Translator",
    "Vocab",
    "__version__",
    "beam_search",
    "configure",
    "decode",
    "evaluate",
    "greedy_search",
    "length_mask",
    "load",
    "masked_softmax",
    "run",
    "train",
    "translate",
    "use_threads",
]


def __getattr__(name: str) -> Any:
    """``luong.NAME``: the name imported from its module (``PUBLIC``) the first time; Python
    calls this only for a name not yet in the package, and the value is kept there."""
    if name not in MODULE_OF:
        raise AttributeError(f"module 'luong' has no attribute {name!r}")
    value = getattr(importlib.import_module(MODULE_OF[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *MODULE_OF})
