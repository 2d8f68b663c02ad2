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
import sys
import types
from typing import TYPE_CHECKING, Any

from luong.version import __version__

if TYPE_CHECKING:  # the names of PUBLIC, for type checkers (tests/test_architecture.py)
    from luong.attention import (
        BahdanauAttention,
        LocalAttention,
        LuongAttention,
        length_mask,
        masked_softmax,
    )
    from luong.config import RunConfig, Seq2SeqConfig, TrainConfig
    from luong.decoder import DecoderState, Memory
    from luong.devices import use_threads
    from luong.ensemble import Ensemble
    from luong.errors import LuongError, LuongTypeError
    from luong.evaluation import evaluate
    from luong.model import Seq2Seq
    from luong.request_options import RequestOptions
    from luong.run import TrainResult, configure, run, train
    from luong.search import Hypothesis, beam_search, decode, greedy_search
    from luong.search_options import SearchOptions
    from luong.trainer import Trainer
    from luong.translator import Translation, Translator, load, translate
    from luong.vocab import Vocab

PUBLIC: dict[str, tuple[str, ...]] = {
    "luong.attention": (
        "BahdanauAttention",
        "LocalAttention",
        "LuongAttention",
        "length_mask",
        "masked_softmax",
    ),
    "luong.config": ("RunConfig", "Seq2SeqConfig", "TrainConfig"),
    "luong.decoder": ("DecoderState", "Memory"),
    "luong.devices": ("use_threads",),
    "luong.ensemble": ("Ensemble",),
    "luong.errors": ("LuongError", "LuongTypeError"),
    "luong.evaluation": ("evaluate",),
    "luong.model": ("Seq2Seq",),
    "luong.request_options": ("RequestOptions",),
    "luong.run": ("TrainResult", "configure", "run", "train"),
    "luong.search": ("Hypothesis", "beam_search", "decode", "greedy_search"),
    "luong.search_options": ("SearchOptions",),
    "luong.trainer": ("Trainer",),
    "luong.translator": ("Translation", "Translator", "load", "translate"),
    "luong.vocab": ("Vocab",),
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


class _Package(types.ModuleType):
    """The package, whose public names win over its submodules of the same name: importing
    the module ``luong.run`` (as ``luong train`` does) binds it on the package, where
    ``luong.run`` is the function ``run`` (``PUBLIC``), whichever is imported first."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in MODULE_OF and isinstance(value, types.ModuleType):
            return  # the submodule stays sys.modules["luong.run"]
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
