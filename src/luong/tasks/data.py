"""What a task gives a run: its splits and how to cut its text into symbols."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from luong.data.vocab import Tokens

__all__ = ["Pair", "TaskData"]

Pair = tuple[str, str]


@dataclass(frozen=True)
class TaskData:
    """A task's splits and how to cut its text into symbols (its settings: ``task_configs``)."""

    train: list[Pair]
    dev: list[Pair]
    test: list[Pair]
    src_tokens: Tokens = "char"  # "char" or "space"
    tgt_tokens: Tokens = "char"
    lowercase: bool = False  # lowercase the source inside the vocabulary
    # Where the data came from and what reading it left out (files, skipped lines, ...).
    info: dict[str, Any] = field(default_factory=dict)
    # A source may come with several targets (references): the test figures then count each
    # unique source once, right when its output equals any of them.
    references: bool = False

    def sha256(self) -> dict[str, str]:
        """Each split's SHA-256 (hex) over its pairs in order: what a run was made of, kept
        in ``run.json`` so that a resumed run can tell its data changed."""
        splits = {"train": self.train, "dev": self.dev, "test": self.test}
        return {
            name: hashlib.sha256(json.dumps(pairs, ensure_ascii=False).encode()).hexdigest()
            for name, pairs in splits.items()
        }
