"""What a run folder survives: stale resumes, foreign folders, two writers, signals, full
disks, broken files. One test per row of docs/robustness.md ("Runs" table).

Every CLI error is one line on stderr and a non-zero exit, no traceback.
"""

from __future__ import annotations

import torch

from luong import Seq2Seq, Seq2SeqConfig, Vocab
from luong.checkpoint import find_latest, write_checkpoint

TINY = Seq2SeqConfig(emb_dim=8, enc_hidden=8, enc_layers=1, dec_hidden=16)


def tiny_model() -> Seq2Seq:
    return Seq2Seq(TINY, Vocab(list("abcdef")), Vocab(list("0123")), seed=0)


def test_checkpoints_past_step_9999999_are_kept_by_step_number(tmp_path) -> None:
    model = tiny_model()
    optimizer = torch.optim.Adam(model.parameters())
    for step in (9_999_998, 9_999_999, 10_000_000, 10_000_001):
        write_checkpoint(tmp_path, step, model, optimizer, {}, keep=2)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["latest", "step-10000000", "step-10000001"]
    assert find_latest(tmp_path) == tmp_path / "step-10000001"
