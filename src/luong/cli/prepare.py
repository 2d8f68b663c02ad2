"""``luong prepare``: a training corpus segmented once into a folder that ``luong train
--data`` reads from disk (``luong.data.prepared``)."""

from __future__ import annotations

import argparse

from luong.cli.common import UsageError, overrides, say
from luong.cli.language_flags import check_language_flags
from luong.config.vocab import VocabConfig
from luong.data.prepare import prepare_corpus

__all__ = ["main"]


def main(args: argparse.Namespace) -> int:
    if args.train_file is not None and (args.train_src is not None or args.train_tgt is not None):
        raise UsageError("--train: either a TSV file or --train-src and --train-tgt")
    if (args.train_src is None) != (args.train_tgt is None):
        raise UsageError("--train-src and --train-tgt: expected both, got one")
    if args.train_file is None and args.train_src is None:
        raise UsageError("expected --train FILE.tsv or --train-src F --train-tgt F")
    train = str(args.train_file) if args.train_file else [str(args.train_src), str(args.train_tgt)]
    vocab = overrides(args, VocabConfig)
    check_language_flags(
        ("--src-lang", vocab.get("src_lang")), ("--tgt-lang", vocab.get("tgt_lang"))
    )
    if args.spm_model is not None:
        # --subword stays: it says what the model was trained as (unigram or bpe)
        learned = sorted(set(vocab) & {"vocab_size", "min_count", "joint_vocab"})
        if learned:
            raise UsageError(
                f"--{learned[0].replace('_', '-')}: the vocabulary of --spm-model is the model's"
            )
    manifest = prepare_corpus(
        train,
        args.out,
        src_tokens=args.src_tokens,
        tgt_tokens=args.tgt_tokens,
        vocab=VocabConfig(**vocab),
        spm_model=args.spm_model,
        max_src_len=args.max_src_len,
        max_tgt_len=args.max_tgt_len,
        skip_bad_lines=args.skip_bad_lines,
        workers=args.workers,
        shard_pairs=args.shard_pairs,
        log=say,
    )
    dropped = ", ".join(f"{n} {why}" for why, n in manifest["dropped"].items() if n) or "none"
    seconds = manifest["seconds"]
    rate = manifest["read"] / seconds if seconds > 0 else 0.0
    print(
        f"{manifest['pairs']} pairs written to {args.out} in {len(manifest['shards'])} "
        f"shard{'s' * (len(manifest['shards']) != 1)} ({manifest['dtype']}); dropped: "
        f"{dropped}; {seconds:.1f} s, {rate:.0f} lines/s"
    )
    return 0
