"""luong: attention-based RNN sequence-to-sequence models after Luong, Pham and Manning (2015).

import luong
model = luong.load("runs/dates")
model.translate(["3 May 1979", "Tuesday, March 6, 1979"])  # ['1979-05-03', '1979-03-06']
"""

__version__ = "0.1.0"

from luong.attention import (
    BahdanauAttention,
    LocalAttention,
    LuongAttention,
    length_mask,
    masked_softmax,
)
from luong.decoder import DecoderState, Memory
from luong.model import Seq2Seq, Seq2SeqConfig
from luong.search import Hypothesis, beam_search, decode, greedy_search
from luong.trainer import TrainConfig, Trainer, TrainResult, evaluate, train
from luong.vocab import Vocab

__all__ = [
    "BahdanauAttention",
    "DecoderState",
    "Hypothesis",
    "LocalAttention",
    "LuongAttention",
    "Memory",
    "Seq2Seq",
    "Seq2SeqConfig",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "Vocab",
    "beam_search",
    "decode",
    "evaluate",
    "greedy_search",
    "length_mask",
    "load",
    "masked_softmax",
    "train",
]


def load(directory: str, device: str = "cpu") -> Seq2Seq:
    """Load a saved model folder (``Seq2Seq.from_pretrained``)."""
    return Seq2Seq.from_pretrained(directory, device=device)
