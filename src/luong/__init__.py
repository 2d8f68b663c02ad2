"""luong: attention-based RNN sequence-to-sequence models after Luong, Pham and Manning (2015)."""

from luong.attention import BahdanauAttention, LuongAttention, length_mask, masked_softmax

__all__ = ["BahdanauAttention", "LuongAttention", "length_mask", "masked_softmax"]
__version__ = "0.1.0"
