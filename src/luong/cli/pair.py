"""``luong pair``: show or record a model folder's language pair (its flags:
``luong.cli.folder_parsers.add_pair``)."""

from __future__ import annotations

import argparse

from luong.cli.common import UsageError
from luong.cli.language_flags import check_language_flags
from luong.common.folder_files import MODEL_CONFIG
from luong.model.folder import language_pair, read_model_config, record_language_pair

__all__ = ["main"]


def main(args: argparse.Namespace) -> int:
    given = (args.src_lang, args.tgt_lang)
    if (given[0] is None) != (given[1] is None):
        raise UsageError("--src-lang and --tgt-lang: give both (a pair), or neither to show it")
    path = args.model / MODEL_CONFIG
    if not path.is_file():
        raise UsageError(f"{path}: missing (is {args.model} a luong model folder?)")
    if given[0] is not None and given[1] is not None:
        check_language_flags(("--src-lang", given[0]), ("--tgt-lang", given[1]))
        if given[0] == given[1]:
            raise UsageError(
                f"--src-lang and --tgt-lang: expected two languages, got {given[0]!r} for both"
            )
        record_language_pair(args.model, given[0], given[1])
        print(f"{args.model}: {given[0]}-{given[1]} recorded in {path}")
        return 0
    _, _, raw = read_model_config(args.model)
    src_lang, tgt_lang = language_pair(raw, path)
    if src_lang is None and tgt_lang is None:
        print(f"{args.model}: no language pair recorded (record one with --src-lang, --tgt-lang)")
    else:
        print(f"{src_lang or '?'}-{tgt_lang or '?'}")
    return 0
