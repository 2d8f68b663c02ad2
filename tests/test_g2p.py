"""Tests for luong.tasks.g2p: CMUdict normalisation, the split by word, the standard files."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from luong.config.vocab import VocabConfig
from luong.tasks import TASKS, load_task, task_configs
from luong.tasks.g2p import (
    MODEL_CONFIG,
    PHONEMES,
    TRAIN_CONFIG,
    carve_dev,
    normalize,
    read_references,
    split_of,
    splits,
)

ENTRIES = {
    "read": [["R", "EH1", "D"], ["R", "IY1", "D"]],
    "o'brien": [["OW0", "B", "R", "AY1", "AH0", "N"]],
    "dogs'": [["D", "AO1", "G", "Z"]],
    "a.m.": [["EY2", "EH1", "M"]],
    "ad-hoc": [["AE1", "D", "HH", "AA1", "K"]],
    "w2": [["D", "AH1", "B", "AH0", "L", "Y", "UW0", "T", "UW1"]],
    "either": [["IY1", "DH", "ER0"], ["AY1", "DH", "ER0"], ["IY0", "DH", "ER0"]],
}


def _words(pairs: list[tuple[str, str]]) -> set[str]:
    return {word for word, _ in pairs}


def test_phoneme_set_is_the_39_of_cmudict() -> None:
    assert len(PHONEMES) == len(set(PHONEMES)) == 39
    assert not any(p[-1].isdigit() for p in PHONEMES)


def test_normalize_uppercases_drops_and_removes_stress() -> None:
    lexicon, dropped = normalize(ENTRIES)
    assert dropped == 3  # a.m., ad-hoc, w2
    assert lexicon == {
        "READ": ["R EH D", "R IY D"],
        "O'BRIEN": ["OW B R AY AH N"],
        "DOGS'": ["D AO G Z"],
        "EITHER": ["IY DH ER", "AY DH ER"],  # IY1 and IY0 are one variant without stress
    }


def test_normalize_validates() -> None:
    with pytest.raises(TypeError, match="entries: expected a mapping"):
        normalize([("a", [["AH0"]])])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"'ox': unknown phonemes \['QQ'\]"):
        normalize({"ox": [["AA1", "QQ"]]})
    with pytest.raises(ValueError, match="'ox': expected at least one pronunciation"):
        normalize({"ox": []})


def test_split_is_deterministic_and_by_word() -> None:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(t) for t in itertools.product(letters, letters, letters)][:2000]
    entries = {word: [["AH0"], ["AA1"]] for word in words}
    first = splits(seed=0, entries=entries)
    again = splits(seed=0, entries=dict(reversed(list(entries.items()))))
    assert (first.train, first.dev, first.test) == (again.train, again.dev, again.test)
    train, dev, test = _words(first.train), _words(first.dev), _words(first.test)
    assert not (train & dev or train & test or dev & test)
    assert len(train | dev | test) == 2000
    # every pronunciation of a word goes with it
    for pairs in (first.train, first.dev, first.test):
        assert all(count == 2 for count in Counter(w for w, _ in pairs).values())
    # about 90 / 5 / 5
    assert 0.03 < len(test) / 2000 < 0.07 and 0.03 < len(dev) / 2000 < 0.07
    other = splits(seed=1, entries=entries)
    assert _words(other.test) != test


def test_split_of_a_word_does_not_depend_on_the_other_words() -> None:
    assert split_of("HELLO") == split_of("HELLO", 0)
    assert {split_of(f"W{i}") for i in range(100)} == {"train", "dev", "test"}
    small = splits(entries={"HELLO": [["HH", "AH0", "L", "OW1"]]})
    assert (small.train + small.dev + small.test) == [("HELLO", "HH AH L OW")]
    assert {"train": small.train, "dev": small.dev, "test": small.test}[split_of("HELLO")]
    with pytest.raises(TypeError, match="word: expected a str"):
        split_of(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seed: expected an int"):
        split_of("A", "0")  # type: ignore[arg-type]


def test_the_shipped_dictionary() -> None:
    data = load_task("g2p")
    train, dev, test = _words(data.train), _words(data.dev), _words(data.test)
    assert not (train & dev or train & test or dev & test)
    total = len(train | dev | test)
    assert total > 120_000 and 0.04 < len(test) / total < 0.06 and 0.04 < len(dev) / total < 0.06
    phonemes = {p for _, pron in data.train for p in pron.split()}
    assert phonemes == set(PHONEMES)
    assert all(set(word) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZ'") for word in train)
    assert (data.src_tokens, data.tgt_tokens, data.lowercase) == ("char", "space", True)
    assert data.info["dropped_words"] > 1000


def test_task_configs() -> None:
    assert "g2p" in TASKS and task_configs("g2p") == (MODEL_CONFIG, TRAIN_CONFIG, VocabConfig())
    with pytest.raises(
        ValueError,
        match=r"^task: expected one of dates, g2p, translation, quick, general, wmt14 or 'tsv'",
    ):
        task_configs("x")
    with pytest.raises(ValueError, match=r"g2p: unknown options \['n_test'\]"):
        load_task("g2p", n_test=5)


def test_carve_dev_holds_out_every_nth_source() -> None:
    pairs = [(f"W{i:02d}", "AH") for i in range(40)] + [("W19", "AA"), ("W03", "AA")]
    train, dev = carve_dev(pairs, every=20)
    assert _words(dev) == {"W19", "W39"} and dev == [("W19", "AH"), ("W39", "AH"), ("W19", "AA")]
    assert len(train) == 39 and not _words(train) & _words(dev)
    assert carve_dev(list(reversed(pairs)))[1] == list(reversed(dev))
    with pytest.raises(ValueError, match="every: expected an int >= 2, got 1"):
        carve_dev(pairs, every=1)


def test_read_references(tmp_path: Path) -> None:
    path = tmp_path / "test.ref"
    path.write_bytes(b"READ\tR EH D\tR IY D\r\nCAT\tK AE T\nTWO\tT UW\tT  UW\n")
    assert read_references(path) == [
        ("READ", ["R EH D", "R IY D"]),
        ("CAT", ["K AE T"]),
        ("TWO", ["T UW"]),
    ]
    for raw, message in (
        (b"READ\n", ":1: expected WORD<TAB>pronunciation"),
        (b"A\tAH\nB\t\n", ":2: empty field"),
        (b"A\tAH\nA\tEY\n", ":2: 'A' is listed again .first on line 1."),
        (b"A\tAH\n\xff\tB\n", ":2: not valid UTF-8"),
        (b"", ": no words"),
    ):
        path.write_bytes(raw)
        with pytest.raises(ValueError, match=str(path) + message):
            read_references(path)
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_references(tmp_path / "missing.ref")
