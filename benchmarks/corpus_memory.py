"""Where a training process's memory goes, stage by stage, on a prepared corpus: the resident
set (VmRSS), its peak (VmHWM), and its anonymous and file-backed parts (RssAnon, RssFile) from
Linux's /proc/self/status after the imports, opening the corpus, building the model, building
the trainer (the batches of every epoch) and STEPS steps, with the child of
``benchmarks/large_corpus.py``'s model and settings.

    python benchmarks/corpus_memory.py /tmp/large-corpus/prepared-2000000-w1 [--steps 200]

(``benchmarks/large_corpus.py`` leaves its prepared corpora and their ``dev.tsv`` in its
``--work`` folder.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path

from luong import Seq2Seq, Seq2SeqConfig, TrainConfig
from luong.data.prepared import PreparedData
from luong.tasks.tsv import read_pairs
from luong.training.trainer import Trainer

FIELDS = ("VmRSS", "VmHWM", "RssAnon", "RssFile")


def memory() -> dict[str, int]:
    """This process's FIELDS, in MB."""
    found = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in FIELDS:
            found[key] = int(value.split()[0]) // 1024
    return found


class Stop(Exception):
    """Raised at the first dev evaluation, after ``--steps`` steps."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="a prepared corpus (luong prepare)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--dev", type=Path, help="dev pairs (default: dev.tsv beside the corpus)")
    args = parser.parse_args()
    stages = {"imports": memory()}
    data = PreparedData(args.corpus)
    stages["corpus opened"] = memory()
    model = Seq2Seq(
        Seq2SeqConfig(emb_dim=64, enc_hidden=64, enc_layers=1, dec_hidden=128, max_src_len=64),
        data.src_vocab,
        data.tgt_vocab,
        seed=0,
    )
    stages["model built"] = memory()
    config = TrainConfig(
        epochs=1, batch_tokens=3000, warmup_steps=0, eval_every=args.steps, progress=False,
        device="cpu", eval_batch_size=32,
    )  # fmt: skip
    start = time.perf_counter()
    dev = read_pairs(args.dev or args.corpus.parent / "dev.tsv").pairs
    trainer = Trainer(model, data, dev, config, log=lambda message: None)
    stages["trainer built"] = {**memory(), "seconds": round(time.perf_counter() - start, 1)}

    def stop(point: object) -> None:
        raise Stop()

    with contextlib.suppress(Stop):
        trainer.run(on_eval=stop)
    stages[f"{trainer.progress.step} steps"] = memory()
    print(json.dumps({"corpus": str(args.corpus), "pairs": len(data), "stages": stages}, indent=1))


if __name__ == "__main__":
    main()
