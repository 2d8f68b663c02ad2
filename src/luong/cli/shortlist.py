"""``luong shortlist``: learn a model folder's lexical shortlist from training pairs and write
it there (its flags: ``luong.cli.folder_parsers.add_shortlist``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from luong.cli.common import UsageError, say
from luong.common.folder_files import RUN_CONFIG, SHORTLIST
from luong.config.presets import OWN_DATA
from luong.tasks import load_task
from luong.tasks.tsv import read_split
from luong.training.settings import configure
from luong.translation.lexicon import shortlist_folder

__all__ = ["main"]

Pair = tuple[str, str]


def main(args: argparse.Namespace) -> int:
    for flag, value, low in (
        ("--per-source", args.per_source, 1),
        ("--frequent", args.frequent, 0),
        ("--batch-size", args.batch_size, 1),
    ):
        if value < low:
            raise UsageError(f"{flag}: expected >= {low}, got {value}")
    pairs, name = _pairs(args.model, args.train, args.skip_bad_lines)
    table = shortlist_folder(args.model, pairs, args.per_source, args.frequent, args.batch_size)
    print(
        f"wrote {Path(args.model) / SHORTLIST}: {table.k} target pieces per source piece and "
        f"the {len(table.frequent)} most frequent, from {len(pairs)} pairs of {name}"
    )
    return 0


def _pairs(folder: Path, train: Path | None, skip_bad_lines: bool) -> tuple[list[Pair], str]:
    """The training pairs: ``train``'s, or the run's own (its ``config.toml``); with
    ``skip_bad_lines`` their bad lines are left out, each file's count said on stderr."""
    if train is not None:
        read = read_split(train, skip_bad_lines=skip_bad_lines)
        if read.skipped:
            _say_skipped(len(read.skipped), read.name)
        return read.pairs, read.name
    config_file = folder / RUN_CONFIG
    if not config_file.is_file():
        raise UsageError(
            f"expected --train FILE.tsv (and {folder} has no {RUN_CONFIG} to read its run's "
            "training data from)"
        )
    config = configure(config_file=config_file)
    if config.task == OWN_DATA and "prepared" in config.data:
        raise UsageError(f"{folder} was trained on a prepared corpus: pass --train FILE.tsv")
    settings = dict(config.data)
    if skip_bad_lines and config.task == OWN_DATA:
        settings["skip_bad_lines"] = True
    data = load_task(config.task, **settings)
    for name, count in data.info.get("skipped_lines", {}).items():
        _say_skipped(count, name)
    return data.train, f"the training split of {config_file}"


def _say_skipped(count: int, name: str) -> None:
    say(f"skipped {count} bad line{'s' * (count != 1)} in {name}")
