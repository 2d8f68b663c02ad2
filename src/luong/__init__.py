"""luong: attention-based RNN sequence-to-sequence models after Luong, Pham and Manning (2015).

import luong
model = luong.load("runs/dates")
model.translate(["3 May 1979", "Tuesday, March 6, 1979"])  # ['1979-05-03', '1979-03-06']
model.translate_nbest(["3 May 1979"], luong.SearchOptions(beam=5, nbest=3))  # [[3 best]]

The package's top floor: it gathers the public names of the modules below it
(``docs/architecture.md``); no module of the package imports it.
"""

from collections.abc import Sequence
from pathlib import Path

from luong.attention import (
    BahdanauAttention,
    LocalAttention,
    LuongAttention,
    length_mask,
    masked_softmax,
)
from luong.config import Seq2SeqConfig, TrainConfig
from luong.decoder import DecoderState, Memory
from luong.ensemble import Ensemble
from luong.evaluation import evaluate
from luong.model import Seq2Seq
from luong.run import RunConfig, TrainResult, configure, run, train
from luong.search import Hypothesis, beam_search, decode, greedy_search
from luong.search_options import SearchOptions
from luong.trainer import Trainer
from luong.translator import Translator, translate
from luong.version import __version__
from luong.vocab import Vocab

__all__ = [
    "BahdanauAttention",
    "DecoderState",
    "Ensemble",
    "Hypothesis",
    "LocalAttention",
    "LuongAttention",
    "Memory",
    "RunConfig",
    "Seq2Seq",
    "SearchOptions",
    "Seq2SeqConfig",
    "TrainConfig",
    "TrainResult",
    "Trainer",
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
]


def load(directory: str | Path | Sequence[str | Path], device: str = "cpu") -> Translator:
    """Load a saved model folder for translation, or a list of folders as an ensemble
    (``Translator.from_pretrained``): ``luong.load(["runs/a", "runs/b"]).translate(...)``."""
    return Translator.from_pretrained(directory, device=device)
