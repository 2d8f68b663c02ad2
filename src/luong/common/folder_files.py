"""The names of the files in luong's folders, in one place: a model folder's (what
``Seq2Seq.save_pretrained`` writes, and ``luong average`` beside it), a run folder's (what
``luong train --out RUN`` writes around its model), a checkpoint's (``RUN/checkpoints/``),
and the lock any of them may hold. Every module that writes or reads such a file takes its
name from here, so that a name is spelled once and means one file.

Plain and alone: it imports nothing, so every floor may read it (``files``'s lock, the
model's files, the trainer's records, the command line's messages).
"""

from __future__ import annotations

__all__ = [
    "AVERAGED",
    "BEST",
    "CHECKPOINTS",
    "CHECKPOINT_PREFIX",
    "LATEST",
    "LOCK",
    "METRICS",
    "MODEL_CONFIG",
    "OPTIMIZER",
    "RECORDS",
    "RUN",
    "RUN_CONFIG",
    "SHORTLIST",
    "SRC_VOCAB",
    "STATE",
    "TENSORBOARD",
    "TGT_VOCAB",
    "TRAIN_LOG",
    "WEIGHTS",
]

# -- a model folder (Seq2Seq.save_pretrained; a run folder holds one too) ---------------------
WEIGHTS = "model.safetensors"  # the weights (safetensors)
MODEL_CONFIG = "config.json"  # Seq2SeqConfig as JSON, the version, vocabularies' SHA-256, pair
SRC_VOCAB = "src_vocab.json"  # the source vocabulary (a subword one: a .model beside it)
TGT_VOCAB = "tgt_vocab.json"  # the target vocabulary (a subword one: a .model beside it)
SHORTLIST = "shortlist.safetensors"  # the lexical shortlist (luong shortlist), optional
AVERAGED = "averaged.json"  # an average's record of the checkpoints in it (luong average)

# -- a run folder (luong train --out RUN) ------------------------------------------------------
RUN = "run.json"  # what a run folder's run was made of; a folder without it is no run
RUN_CONFIG = "config.toml"  # the run's settings, resolved: luong train --config RUN/config.toml
METRICS = "metrics.json"  # what the run gave: test and best dev scores, the dev curve
RECORDS = "log.jsonl"  # the run's records: one per logging interval, one per evaluation
TRAIN_LOG = "train.log"  # the messages of the run (the "luong" logger)
TENSORBOARD = "tensorboard"  # the run's TensorBoard event files (--tensorboard)
CHECKPOINTS = "checkpoints"  # the run's checkpoints: RUN/checkpoints/step-*

# -- RUN/checkpoints: a folder per checkpoint, each a model folder and the training state ------
CHECKPOINT_PREFIX = "step-"  # a checkpoint's folder: step-0000123 (its step, 7 digits)
LATEST = "latest"  # the name of the newest checkpoint's folder, a line of text
OPTIMIZER = "optimizer.safetensors"  # a checkpoint's optimizer tensors and generator states
STATE = "state.json"  # a checkpoint's progress, counters, hyper-parameters, loss scale
BEST = "best.safetensors"  # a checkpoint's copy of the best dev weights so far

# -- any folder ----------------------------------------------------------------------------
LOCK = ".lock"  # held while a process writes the folder (luong.common.files.locked), its pid in it
