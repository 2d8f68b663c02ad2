"""A model adapted to a catalog's own translations (``luong po MODEL CATALOG --adapt DIR``):
the general model fine-tuned (``--preset adapt``, ``luong.training.fine_tuning``) on the entries the
project's translators have already translated, before it fills the others.

    adapted = adapt_to_catalog("po/de.po", "runs/general", "runs/de-adapted")
    adapted.folder      # a run folder: luong po runs/de-adapted po/de.po next time

1. The catalog's pairs, as ``luong corpus`` harvests them (``luong.catalogs.corpus``): translated
   entries only (fuzzy, untranslated and obsolete ones left out), plural entries as two pairs,
   the context dropped, the keyboard accelerator taken out, whitespace collapsed, each source
   once.
2. A small dev split, by a hash of the source: the ``DEV_SHARE`` of the pairs (at least
   ``MIN_DEV``) whose sources' SHA-256 come first, so that a catalog that gains entries keeps
   most of its dev; the rest train. Fewer than ``MIN_PAIRS`` pairs is refused.
3. With general pairs (``mix``: ``luong po --adapt RUN --mix FILE``), ``mix_ratio`` of them
   per training pair mixed into the training split (``luong.tasks.tsv.mix_pairs``, as
   ``luong train --mix`` does): they keep what the general model knows.
4. The run: ``--preset adapt`` from the model, on those splits, written to the run folder
   (with the pairs as ``catalog-train.tsv`` and ``catalog-dev.tsv``, which its
   ``config.toml`` names). A run killed on the way resumes when the same command runs again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from luong.catalogs.corpus import MAX_CATALOG_BYTES, NoPairs, build_corpus
from luong.catalogs.header import catalog_language, check_language
from luong.catalogs.po_file import decode_catalog
from luong.common.errors import LuongError
from luong.common.files import read_bounded, read_json, write_text
from luong.common.folder_files import RUN
from luong.config.faces import CorpusOptions
from luong.tasks import OWN_DATA, TaskData
from luong.tasks.tsv import check_mix_ratio, mix_pairs, read_split
from luong.training.fine_tuning import find_init_model
from luong.training.run import TrainResult, run
from luong.training.settings import configure

__all__ = ["DEV_FILE", "MIN_PAIRS", "TRAIN_FILE", "Adapted", "adapt_to_catalog", "catalog_splits"]

MIN_PAIRS = 20
"""The fewest translated pairs a catalog must hold to adapt a model to it: some to learn from,
some to check on."""
DEV_SHARE = 0.1  # the share of the pairs held out as dev
MIN_DEV = 2
TRAIN_FILE = "catalog-train.tsv"
DEV_FILE = "catalog-dev.tsv"
# Translated entries only; plural entries as two pairs (more of the project's own words).
OPTIONS = CorpusOptions(plurals=True, split_by="hash", dev=0.0, devtest=0.0)

Pair = tuple[str, str]


@dataclass(frozen=True)
class Adapted:
    """An adapted model: its run folder, the run's result, and the pairs it learned from (the
    catalog's, and the general ones mixed in) and was checked on."""

    folder: Path
    result: TrainResult
    train_pairs: int
    dev_pairs: int
    mixed_pairs: int = 0  # general pairs mixed into the training pairs (``mix``)


def catalog_splits(catalog: str | os.PathLike[str], tgt_lang: str) -> tuple[list[Pair], list[Pair]]:
    """The translated pairs of ``catalog`` into ``tgt_lang``, split into train and dev (the
    module's docstring, steps 1 and 2), each in the catalog's order.

    Raises:
        ValueError: the catalog does not read, its Language is another, or it holds fewer
            than ``MIN_PAIRS`` translated pairs (the message names the catalog and counts).
    """
    path = Path(catalog)
    text = decode_catalog(read_bounded(path, MAX_CATALOG_BYTES))
    try:
        check_language(catalog_language(text), tgt_lang)
    except LuongError as error:
        raise LuongError(f"{path}: {error}") from None
    try:
        pairs = build_corpus([path], OPTIONS, tgt_lang).splits["train"]
    except NoPairs as error:  # no pairs at all: none translated, or the catalog not read
        if error.skipped:
            raise LuongError(f"{path}: {error.skipped[0]['reason']}") from None
        pairs = []
    if len(pairs) < MIN_PAIRS:
        raise LuongError(
            f"{path}: {len(pairs)} translated entries (fuzzy and untranslated ones not "
            f"counted); adapting a model needs at least {MIN_PAIRS}, some to learn from and "
            "some to check on"
        )
    ranked = sorted(pairs, key=lambda pair: hashlib.sha256(pair[0].encode("utf-8")).digest())
    count = max(MIN_DEV, round(DEV_SHARE * len(pairs)))
    held = {source for source, _ in ranked[:count]}
    return [p for p in pairs if p[0] not in held], [p for p in pairs if p[0] in held]


def adapt_to_catalog(
    catalog: str | os.PathLike[str],
    model: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    tgt_lang: str | None = None,
    train: Mapping[str, Any] | None = None,
    mix: str | os.PathLike[str] | None = None,
    mix_ratio: float = 1.0,
    log: Callable[[str], None] | None = None,
) -> Adapted:
    """Fine-tune ``model`` on ``catalog``'s translated entries into the run folder ``out``
    (the module's docstring).

    Args:
        catalog: a ``.po`` file.
        model: the model folder (or run folder) to adapt.
        out: the run folder to write: new, or this adaptation's own (resumed, or, finished,
            evaluated again).
        tgt_lang: the target language where the model records none (else it must agree).
        train: training settings over ``--preset adapt``'s (``TrainConfig`` fields).
        mix: a TSV of general pairs to mix into the catalog's training pairs, or None.
        mix_ratio: general pairs per training pair with ``mix`` (a number > 0).
        log: where the run reports resuming and skipped steps (default: the "luong" logger).

    Raises:
        ValueError: ``model`` is no float model folder; no target language; the catalog as
            ``catalog_splits``; ``out`` holds another run (another catalog's, or this one's
            before its translations changed, or mixed with other general pairs); ``mix``
            as ``luong.tasks.tsv.read_split``, ``mix_ratio`` no number > 0.
    """
    check_mix_ratio(mix_ratio)
    init = find_init_model(model, "model")
    folder = Path(out)
    if folder.exists() and folder.samefile(init.folder):
        raise LuongError(
            f"{folder}: the model being adapted; --adapt names a new folder for the adapted run "
            "(the model stays as it is)"
        )
    recorded = init.vocab.get("tgt_lang")
    if recorded and tgt_lang:
        try:
            check_language(tgt_lang, recorded)
        except LuongError:
            raise LuongError(
                f"tgt_lang: the model translates into {recorded}, got {tgt_lang}"
            ) from None
    target = recorded or tgt_lang
    if not target:
        raise LuongError(
            "the model records no target language (luong pair DIR --tgt-lang ..): pass --tgt-lang"
        )
    train_pairs, dev_pairs = catalog_splits(catalog, target)
    files = {"train": os.fspath(folder / TRAIN_FILE), "dev": os.fspath(folder / DEV_FILE)}
    learned: list[Pair] = train_pairs
    mixed: dict[str, Any] = {}
    if mix is not None:
        learned, mixed = mix_pairs(train_pairs, read_split(mix).pairs, mix_ratio)
        mixed["mixed"]["file"] = os.fspath(mix)
    config = configure(
        OWN_DATA,
        {
            **files,
            **({"mix": os.fspath(mix), "mix_ratio": mix_ratio} if mix is not None else {}),
            "src_tokens": None,
            "tgt_tokens": None,
            "skip_bad_lines": False,
        },
        preset="adapt",
        train={**(train or {}), "init_from": os.fspath(model)},
        vocab=None if recorded else {"tgt_lang": target},  # recorded in the adapted model
    )
    data = TaskData(
        learned,
        dev_pairs,
        [],
        src_tokens=config.data["src_tokens"],
        tgt_tokens=config.data["tgt_tokens"],
        references=True,
        info={"files": files, "catalog": os.fspath(catalog), **mixed},
    )
    if (folder / RUN).is_file():
        saved = read_json(folder / RUN)
        hashes = saved.get("data_sha256") if isinstance(saved, dict) else None
        new = data.sha256()
        if isinstance(hashes, dict) and any(hashes.get(k) != new[k] for k in ("train", "dev")):
            raise LuongError(
                f"{folder}: adapted to other translations (another catalog's, this one's "
                "before they changed, or other general pairs mixed in); choose a new --adapt "
                "folder"
            )
    result = run(config, folder, data=data, log=log, flag="--adapt")
    for name, pairs in ((TRAIN_FILE, train_pairs), (DEV_FILE, dev_pairs)):
        write_text(folder / name, "".join(f"{source}\t{target}\n" for source, target in pairs))
    return Adapted(
        folder, result, len(train_pairs), len(dev_pairs), len(learned) - len(train_pairs)
    )
