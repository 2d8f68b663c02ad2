"""The translation preset (``luong train --preset translation``) under the names it had before
the presets became plain data in ``luong.config.presets`` (``luong.config.presets.TRANSLATION``,
where its settings and their reasons are)."""

from __future__ import annotations

from luong.config.presets import TRANSLATION

__all__ = ["MODEL_CONFIG", "TRAIN_CONFIG", "VOCAB_CONFIG"]

MODEL_CONFIG, TRAIN_CONFIG, VOCAB_CONFIG = TRANSLATION
"""The translation model, how it trains, its vocabulary (``luong.config.presets.TRANSLATION``)."""
