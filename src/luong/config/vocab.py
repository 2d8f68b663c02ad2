"""``VocabConfig``: how the vocabularies are built from the training split, a checked
dataclass (the ``[vocab]`` table of a run's TOML): the data's own symbols or a sentencepiece
model, their number, and the language pair recorded in the model folder.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError
from luong.config.choices import SUBWORD_KINDS
from luong.config.fields import check_choice, setting

__all__ = ["VocabConfig"]


@dataclass(frozen=True)
class VocabConfig:
    """How the vocabularies are built from the training split."""

    subword: str = setting(
        "none",
        "none: the data's own symbols (characters or whitespace-separated tokens); unigram or "
        "bpe: a sentencepiece model learned from the training text (luong.data.subword)",
        choices=SUBWORD_KINDS,
    )
    vocab_size: int = setting(
        0,
        "the most symbols, the specials included (0: every symbol with subword none, 8000 "
        "pieces with a subword model)",
    )
    min_count: int = setting(
        1, "keep the symbols seen at least this often (1: all; subword none only)"
    )
    joint_vocab: bool = setting(
        False, "one vocabulary for the source and the target, learned from both"
    )
    # The language pair is not used in training: it is recorded in the model folder's
    # config.json (src_lang, tgt_lang) for luong serve's LibreTranslate API and luong po.
    src_lang: str = setting(
        "",
        "the source language, an ISO 639 code (en), recorded in the model folder "
        "(luong serve routes LibreTranslate requests by it; empty: unknown)",
        metavar="CODE",
    )
    tgt_lang: str = setting(
        "", "the target language, an ISO 639 code (de) (empty: unknown)", metavar="CODE"
    )

    def __post_init__(self) -> None:
        check_choice("subword", self.subword, SUBWORD_KINDS)
        value = self.vocab_size
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise LuongError(f"vocab_size: expected an int >= 0, got {value!r}")
        check_positive_int("min_count", self.min_count)
        if not isinstance(self.joint_vocab, bool):
            raise LuongTypeError(f"joint_vocab: expected a bool, got {self.joint_vocab!r}")
        for name in (
            "src_lang",
            "tgt_lang",
        ):  # the codes themselves: luong.common.languages (babel)
            if not isinstance(getattr(self, name), str):
                raise LuongTypeError(
                    f"{name}: expected a language code, got {getattr(self, name)!r}"
                )
        if self.subword != "none" and self.min_count != 1:
            raise LuongError(
                f"min_count: sentencepiece picks its pieces by vocab_size, got min_count "
                f"{self.min_count} with subword {self.subword!r}"
            )

    @property
    def size(self) -> int:
        """The vocabulary size to learn: ``vocab_size``, 8000 subwords when it is 0."""
        return self.vocab_size or (8000 if self.subword != "none" else 0)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
