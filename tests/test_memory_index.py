"""A translation memory's trigram index (``luong.memory.index``): its candidates hold every
key the length band allows and the keys that share the most trigrams, its memory answers
as the memory without it does, and its cache beside the memory file is rebuilt when the
file changes."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from helpers import luong
from rapidfuzz import fuzz
from test_corpus import catalog, entry

from luong.memory import index as memory_index
from luong.memory.index import INDEX_SUFFIX, NgramIndex
from luong.memory.translation_memory import MemoryEntry, TranslationMemory

WORDS = (
    *("open", "save", "close", "the", "a", "file", "folder", "printer", "queue", "job"),
    *("key", "secret", "new", "recent", "all"),
)


def sentences(count: int, seed: int = 0) -> list[str]:
    """``count`` distinct sentences of 1 to 6 of ``WORDS``, seeded."""
    rng, made = random.Random(seed), dict[str, None]()
    while len(made) < count:
        made.setdefault(" ".join(rng.choices(WORDS, k=rng.randint(1, 6))).capitalize())
    return list(made)


def keys_of(index: NgramIndex, keys: list[str], ids: slice | np.ndarray) -> set[str]:
    return {keys[at] for at in np.atleast_1d(index.by_length[ids]).tolist()}


def test_the_band_is_lossless_and_the_trigrams_rank_by_what_is_shared() -> None:
    keys = sentences(400)
    index = NgramIndex.build(keys)
    assert list(index.lengths) == sorted(len(key) for key in keys)
    assert [keys[at] for at in index.by_length] == sorted(keys, key=len)  # ties: keys' order
    for source in ["Open the file", "Save all recent jobs", "Queue", "Close a folder key"]:
        band = keys_of(index, keys, index.candidates(source, 75.0))
        passing = {key for key in keys if fuzz.ratio(source, key) >= 75.0}
        assert passing <= band  # the band holds every key that can pass
        # the trigram path, forced: every passing key among the 50 that share the most
        chosen = keys_of(index, keys, index.candidates(source, 75.0, exact_band=0, count=50))
        assert passing <= chosen and len(chosen) <= 50
    # the best by the Dice coefficient of trigram sets (case aside)
    three = ["Open the printer queue", "Printer", "Open the file queue"]
    best = NgramIndex.build(three).candidates("open the printer queue", 50.0, 0, count=1)
    assert keys_of(NgramIndex.build(three), three, best) == {"Open the printer queue"}
    assert keys_of(NgramIndex.build([]), [], NgramIndex.build([]).candidates("Open", 75.0)) == set()


def test_an_indexed_memory_answers_as_the_whole_scan() -> None:
    keys = sentences(600, seed=1)
    entries = [MemoryEntry(key, key.upper(), "m.tsv", at + 1) for at, key in enumerate(keys)]
    indexed = TranslationMemory(entries, threshold=60.0, limit=5, index_from=100)
    whole = TranslationMemory(entries, threshold=60.0, limit=5)
    assert indexed.indexes and not whole.indexes
    for source in sentences(80, seed=2):
        assert indexed.recall(source) == whole.recall(source)


def write_tsv(path: Path, keys: list[str]) -> None:
    path.write_text("".join(f"{key}\t{key.upper()}\n" for key in keys), encoding="utf-8")


def cached_digest(cache: Path) -> str:
    with np.load(cache) as saved:
        return str(saved["digest"])


def test_the_index_is_cached_beside_its_file_and_rebuilt_when_the_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tsv, project = tmp_path / "train.tsv", tmp_path / "project.tsv"
    write_tsv(tsv, sentences(300))
    write_tsv(project, ["Print the secret queue"])
    cache = tmp_path / f"train.tsv{INDEX_SUFFIX}"
    built = []
    build = NgramIndex.build
    monkeypatch.setattr(NgramIndex, "build", lambda keys: built.append(len(keys)) or build(keys))

    def read() -> TranslationMemory:
        return TranslationMemory.read([project, tsv], "en", "de", 60.0, 5, index_from=100)

    first = read()
    assert built == [300] and cache.is_file()  # the large file indexed, the small one not
    assert cached_digest(cache) == memory_index.file_digest(tsv)
    assert first.unindexed == ["Print the secret queue"]
    stamp = cache.stat().st_mtime_ns
    second = read()
    assert built == [300] and cache.stat().st_mtime_ns == stamp  # read back, not rebuilt
    source = "Print the secret queues"
    assert second.recall(source) == TranslationMemory(first.entries, 60.0, 5).recall(source)
    # the corpus changes: its index is built again, and the new entry is found
    write_tsv(tsv, [*sentences(300), "Print the secret queues now"])
    third = read()
    assert built == [300, 301]
    assert cached_digest(cache) == memory_index.file_digest(tsv)
    assert "Print the secret queues now" in [match.source for match in third.recall(source).fuzzy]
    # a cache that does not read, or of another format, is built again too
    cache.write_bytes(b"not an index")
    read()
    monkeypatch.setattr(memory_index, "FORMAT", memory_index.FORMAT + 1)
    read()
    assert built == [300, 301, 301, 301]

    # a cache that cannot be written (a read-only folder): the index built in memory
    def refused(*args: object) -> None:
        raise OSError("read-only file system")

    monkeypatch.setattr(NgramIndex, "save", refused)
    write_tsv(tsv, [*sentences(300), "Print the secret queues later"])
    assert "Print the secret queues later" in [
        match.source for match in read().recall(source).fuzzy
    ]
    assert built[-1] == 301


def test_a_corpus_with_a_memory_index_is_replaced_by_force(tmp_path: Path) -> None:
    catalogs = tmp_path / "catalogs"
    catalog(catalogs / "a.po", [entry(key, key.upper()) for key in sentences(40)])
    out = tmp_path / "corpus"
    args = ["corpus", str(catalogs), "--tgt-lang", "de", "--out", str(out), "--split-by", "hash"]
    assert luong(*args).returncode == 0
    TranslationMemory.read([out / "train.tsv"], "en", "de", index_from=10)
    assert (out / f"train.tsv{INDEX_SUFFIX}").is_file()
    result = luong(*args, "--force")
    assert result.returncode == 0, result.stderr.decode()
    assert not (out / f"train.tsv{INDEX_SUFFIX}").exists()  # the old corpus's, gone with it
    assert json.loads((out / "manifest.json").read_text())["kind"] == "luong gettext corpus"
