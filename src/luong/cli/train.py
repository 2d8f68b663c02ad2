"""``luong train``: a built-in task or your own files -> a run folder (``luong.training.run``)."""

from __future__ import annotations

import argparse
from typing import Any

from luong.cli.common import UsageError, log_to_stderr, overrides
from luong.cli.language_flags import check_language_flags
from luong.common.folder_files import RUN_CONFIG
from luong.config.model import Seq2SeqConfig
from luong.config.presets import OWN_DATA, SPLITS
from luong.config.train import TrainConfig
from luong.config.vocab import VocabConfig
from luong.training.run import run
from luong.training.settings import configure

__all__ = ["main"]

OWN_DATA_FLAGS = (
    ("dev_file", "--dev"),
    ("test_file", "--test"),
    *((f"{split}_{side}", f"--{split}-{side}") for split in SPLITS for side in ("src", "tgt")),
    ("src_tokens", "--src-tokens"),
    ("tgt_tokens", "--tgt-tokens"),
    ("skip_bad_lines", "--skip-bad-lines"),
    ("mix", "--mix"),
    ("mix_ratio", "--mix-ratio"),
    ("preset", "--preset"),
    ("prepared", "--data"),
)
# What a prepared corpus fixed when it was written (luong prepare's flags).
PREPARED_FIXES = (("src_tokens", "--src-tokens"), ("tgt_tokens", "--tgt-tokens"))
LEARNED_VOCAB = ("subword", "vocab_size", "min_count", "joint_vocab")
DATES_FLAGS = (
    ("locales", "--locales"),
    ("n_train", "--n-train"),
    ("n_dev", "--n-dev"),
    ("n_test", "--n-test"),
)


def _given(args: argparse.Namespace, flags: tuple[tuple[str, str], ...]) -> list[str]:
    return [flag for dest, flag in flags if getattr(args, dest) not in (None, False)]


def _split(args: argparse.Namespace, split: str) -> str | list[str] | None:
    """A split of your own data: a TSV file, ``[source, target]`` files, or None."""
    tsv, src, tgt = (getattr(args, f"{split}_{kind}") for kind in ("file", "src", "tgt"))
    if tsv is not None and (src is not None or tgt is not None):
        raise UsageError(f"--{split}: either a TSV file or --{split}-src and --{split}-tgt")
    if (src is None) != (tgt is None):
        raise UsageError(f"--{split}-src and --{split}-tgt: expected both, got one")
    if src is not None:
        return [str(src), str(tgt)]
    return str(tsv) if tsv is not None else None


def _own_data(args: argparse.Namespace) -> bool:
    """Whether the flags name training data of the user's own (``--train``, ``--train-src``,
    ``--data``)."""
    return args.train_file is not None or args.train_src is not None or args.prepared is not None


def _task_and_options(args: argparse.Namespace) -> tuple[str | None, dict[str, Any]]:
    """The task and its data options, from the flags (which flags go with which task); no
    task (None) when only ``--config`` names one."""
    own = _own_data(args)
    if args.task is None and not own and args.config is not None:
        if _given(args, OWN_DATA_FLAGS):
            raise UsageError(f"{', '.join(_given(args, OWN_DATA_FLAGS))}: only with --train")
        return None, _data_options(args)
    if (args.task is None) == (not own):
        got = "both" if args.task is not None else "neither"
        raise UsageError(
            "expected a task (dates, g2p) or your own data (--train FILE.tsv --dev FILE.tsv, "
            f"or --train-src/--train-tgt ...) or a --config naming the task, got {got}"
        )
    if args.task != "dates" and _given(args, DATES_FLAGS):
        raise UsageError(f"{', '.join(_given(args, DATES_FLAGS))}: only for the dates task")
    if args.task is not None:
        if _given(args, OWN_DATA_FLAGS):
            raise UsageError(f"{', '.join(_given(args, OWN_DATA_FLAGS))}: only with --train")
        return args.task, _data_options(args)
    splits = {split: _split(args, split) for split in SPLITS}
    if args.prepared is not None:
        if splits["train"] is not None:
            raise UsageError("--data: a prepared corpus takes the place of --train, not both")
        if args.mix is not None:
            raise UsageError(
                "--mix: mixes general pairs into --train's, not into a prepared corpus"
            )
        if _given(args, PREPARED_FIXES):
            raise UsageError(
                f"{_given(args, PREPARED_FIXES)[0]}: a prepared corpus is read as luong "
                "prepare was told to read it"
            )
    if splits["dev"] is None:
        raise UsageError(
            "--train needs --dev FILE.tsv (or --dev-src/--dev-tgt): the pairs that pick the "
            "best weights"
        )
    if args.prepared is not None:
        return OWN_DATA, {
            "prepared": str(args.prepared),
            **{split: files for split, files in splits.items() if files is not None},
            "skip_bad_lines": args.skip_bad_lines,
        }
    if args.mix_ratio is not None and args.mix is None:
        raise UsageError("--mix-ratio: only with --mix FILE.tsv (the general pairs to mix in)")
    options = {
        **{split: files for split, files in splits.items() if files is not None},
        **({"mix": str(args.mix)} if args.mix is not None else {}),
        **({"mix_ratio": args.mix_ratio} if args.mix_ratio is not None else {}),
        # Not given: characters, or with --init-from the model's own
        # (luong.training.settings.configure).
        "src_tokens": args.src_tokens,
        "tgt_tokens": args.tgt_tokens,
        "skip_bad_lines": args.skip_bad_lines,
    }
    return OWN_DATA, options


def _data_options(args: argparse.Namespace) -> dict[str, Any]:
    """A built-in task's data options given as flags (they override the --config file's)."""
    options: dict[str, Any] = {}
    if args.data_seed is not None:
        options["seed"] = args.data_seed
    if args.locales:
        options["locales"] = tuple(args.locales)
    for split in ("train", "dev", "test"):
        if getattr(args, f"n_{split}") is not None:
            options[f"n_{split}"] = getattr(args, f"n_{split}")
    return options


def _with_saved_config(args: argparse.Namespace) -> argparse.Namespace:
    """``luong train --out RUN --resume`` with no task, data or ``--config``: the run's own
    resolved settings (``RUN/config.toml``) are the config, as ``--config RUN/config.toml``
    would give them (flags still override them); otherwise ``args`` as they are."""
    if not args.resume or args.task is not None or _own_data(args) or args.config is not None:
        return args
    saved = args.out / RUN_CONFIG
    return argparse.Namespace(**{**vars(args), "config": saved}) if saved.is_file() else args


def main(args: argparse.Namespace) -> int:
    args = _with_saved_config(args)
    task, options = _task_and_options(args)
    log_to_stderr(quiet=args.quiet, verbose=args.verbose)
    vocab = overrides(args, VocabConfig)
    learned = [name for name in LEARNED_VOCAB if name in vocab]
    if args.prepared is not None and learned:
        raise UsageError(
            f"--{learned[0].replace('_', '-')}: with --data the vocabularies are the prepared "
            "corpus's own (luong prepare learns them)"
        )
    train = overrides(args, TrainConfig)
    if args.quiet:
        train.setdefault("progress", False)
    config = configure(
        task,
        options,
        preset=args.preset,
        config_file=args.config,
        model=overrides(args, Seq2SeqConfig),
        train=train,
        vocab=vocab,
    )
    # before any data is read; the library checks again, naming the field
    check_language_flags(
        ("--src-lang", config.vocab.src_lang), ("--tgt-lang", config.vocab.tgt_lang)
    )
    result = run(config, args.out, resume=args.resume)
    if not result.main:
        return 0  # under torchrun, rank 0 alone reports
    m = result.metrics
    # The figures of the task: BLEU and chrF for translation (a run scored with them), WER
    # and PER for sources with references (G2P), exact match for pairs (dates).
    if m.get("test_bleu") is not None:
        beam = m["train_config"]["test_beam"]
        print(
            f"test BLEU {m['test_bleu']:.2f}  chrF {m['test_chrf']:.2f}  "
            f"({'greedy' if beam == 1 else f'beam {beam}'}; BLEU {m['test_bleu_signature']}; "
            f"chrF {m['test_chrf_signature']})"
        )
    elif "test_wer" in m:
        print(
            f"test WER {m['test_wer']:.2%}  PER {m['test_per']:.2%}  "
            f"(exact match {m['test_exact_match']:.4f} against any reference; "
            f"{m['test_sources']} sources, {m['test_pairs']} pairs)"
        )
    elif m["test_exact_match"] is not None:
        print(
            f"test exact match {m['test_exact_match']:.4f}  char accuracy "
            f"{m['test_char_accuracy']:.4f}  ({m['test_pairs']} pairs)"
        )
    if m.get("test_unknown_tokens"):
        print(
            f"test: {m['test_unknown_tokens']} unknown source symbols mapped to unk "
            f"in {m['test_sources_with_unknown']} sources"
        )
    reached = m["seconds_to_dev_0.99"]
    dev = f"dev BLEU {m['dev_bleu']:.2f}" if "dev_bleu" in m else ""
    dev = dev or f"dev exact match {m['dev_exact_match']:.4f}"
    print(
        f"{dev} (selected on {m['select']}); trained {m['steps']} steps in "
        f"{m['train_seconds']:.1f} s"
        + (f"; dev >= 0.99 after {reached:.1f} s" if reached is not None else "")
    )
    print(f"model and metrics.json written to {args.out}")
    return 0
