"""``luong po MODEL CATALOG --adapt RUN`` (``luong.catalogs.adapt``): the model fine-tuned on the
catalog's translated entries into the run folder RUN, then the untranslated ones filled by it;
a catalog with too few translated entries refused. Rows of docs/robustness.md ("Fine-tuning
a trained model")."""

from __future__ import annotations

import json
import random
from pathlib import Path

import polib
import pytest
from helpers import SRC_SPACE, assert_one_line_error, luong, small_model, with_pair

from luong.catalogs.adapt import catalog_splits

LETTERS = "abcdefghij"


def catalog_text(translated: int, untranslated: tuple[str, ...] = ("abc", "jih gf")) -> str:
    """A German catalog in the toy language of ``helpers.SRC_SPACE`` -> ``TGT`` (letters ->
    digits): ``translated`` translated entries, one fuzzy one (never learned from), and the
    ``untranslated`` ones."""
    rng = random.Random(0)
    lines = [
        'msgid ""',
        'msgstr ""',
        '"Content-Type: text/plain; charset=UTF-8\\n"',
        '"Language: de\\n"',
        "",
        "#, fuzzy",
        'msgid "fuzzy ab"',
        'msgstr "01"',
        "",
    ]
    for i in range(translated):
        word = (
            "".join(rng.choices(LETTERS, k=rng.randint(2, 6)))
            + f" {LETTERS[i % 10]}{LETTERS[i // 10]}"
        )
        digits = "".join(str(LETTERS.index(c)) for c in reversed(word.replace(" ", "")))
        lines += [f'msgid "{word}"', f'msgstr "{digits}"', ""]
    for source in untranslated:
        lines += [f'msgid "{source}"', 'msgstr ""', ""]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An untrained tiny model folder (letters and a space -> digits), recording en-de."""
    path = tmp_path_factory.mktemp("po-adapt") / "general"
    with_pair(small_model(seed=4, src=SRC_SPACE)).save_pretrained(path)
    return path


def test_po_adapt_fine_tunes_on_the_catalog_then_fills_it(model: Path, tmp_path: Path) -> None:
    catalog, out, run = tmp_path / "de.po", tmp_path / "de.filled.po", tmp_path / "adapted"
    catalog.write_text(catalog_text(30), encoding="utf-8")
    # --min-len 3: an untrained model's outputs are otherwise empty (left untranslated).
    command = ["po", str(model), str(catalog), "--out", str(out), "--tgt-lang", "de",
               "--min-len", "3", "--adapt", str(run)]  # fmt: skip
    result = luong(*command)
    assert result.returncode == 0, result.stderr.decode()
    said = result.stderr.decode().splitlines()
    assert said[-2].startswith(
        f"luong: adapted {model} to 27 translated entries of {catalog} (3 held out: dev exact "
        "match "
    )
    assert said[-2].endswith(f"run written to {run}")
    assert said[-1].startswith("luong: filled 2 entries (0 plural, 0 plural forms); skipped 30 ")
    filled = [entry for entry in polib.pofile(str(out)) if entry.msgid in ("abc", "jih gf")]
    assert [entry.fuzzy and len(entry.msgstr) >= 3 for entry in filled] == [True, True]
    assert all(e.tcomment.endswith("machine translation by adapted, review it") for e in filled)
    # The run folder: a model (luong po RUN next time), its data, the model it came from.
    train, dev = catalog_splits(catalog, "de")
    assert (len(train), len(dev)) == (27, 3)
    assert (run / "catalog-train.tsv").read_text() == "".join(f"{s}\t{t}\n" for s, t in train)
    assert (run / "catalog-dev.tsv").read_text() == "".join(f"{s}\t{t}\n" for s, t in dev)
    assert json.loads((run / "run.json").read_text())["train_config"]["init_from"] == str(model)
    assert json.loads((run / "config.json").read_text())["tgt_lang"] == "de"
    assert (
        "fuzzy ab"
        not in (run / "catalog-train.tsv").read_text() + (run / "catalog-dev.tsv").read_text()
    )
    again = luong("po", str(run), str(catalog), "--out", str(out), "--force", "--min-len", "3")
    assert again.returncode == 0, again.stderr.decode()
    # The adapted run adapted again into itself (it said: adapted to other translations).
    assert_one_line_error(
        luong("po", str(run), str(catalog), "--out", str(out), "--force", "--adapt", str(run)),
        f"luong: error: {run}: the model being adapted; --adapt names a new folder",
    )
    # The same command again: the finished run is evaluated again, not trained again.
    steps = json.loads((run / "metrics.json").read_text())["steps"]
    assert luong(*command, "--force").returncode == 0
    assert json.loads((run / "metrics.json").read_text())["steps"] == steps
    # The catalog's translations changed: that run folder is another adaptation's.
    catalog.write_text(catalog_text(31), encoding="utf-8")
    assert_one_line_error(
        luong(*command, "--force"),
        f"luong: error: {run}: adapted to other translations (another catalog's, this one's "
        "before they changed, or other general pairs mixed in); choose a new --adapt folder",
    )


def test_po_adapt_refuses_a_catalog_with_too_few_translated_entries(
    model: Path, tmp_path: Path
) -> None:
    catalog, out, run = tmp_path / "de.po", tmp_path / "de.filled.po", tmp_path / "adapted"
    catalog.write_text(catalog_text(19), encoding="utf-8")
    result = luong("po", str(model), str(catalog), "--out", str(out), "--tgt-lang", "de",
                   "--adapt", str(run))  # fmt: skip
    assert_one_line_error(
        result,
        f"luong: error: {catalog}: 19 translated entries (fuzzy and untranslated ones not "
        "counted); adapting a model needs at least 20, some to learn from and some to check on",
    )
    assert not out.exists() and not run.exists()


def test_po_adapt_takes_one_model(model: Path, tmp_path: Path) -> None:
    catalog = tmp_path / "de.po"
    catalog.write_text(catalog_text(30), encoding="utf-8")
    result = luong("po", str(model), str(model), str(catalog), "--out", str(tmp_path / "o.po"),
                   "--adapt", str(tmp_path / "adapted"))  # fmt: skip
    assert_one_line_error(result, "luong: error: --adapt: fine-tunes one model, got 2 folders")


def test_po_adapt_mixes_general_pairs_into_the_catalogs(model: Path, tmp_path: Path) -> None:
    catalog, out, run = tmp_path / "de.po", tmp_path / "de.filled.po", tmp_path / "adapted"
    catalog.write_text(catalog_text(30), encoding="utf-8")
    general = tmp_path / "general.tsv"
    general.write_text("".join(f"{w}\t{len(w)}\n" for w in ("ab", "cde", "fghi", "j a")))
    command = ["po", str(model), str(catalog), "--out", str(out), "--tgt-lang", "de",
               "--min-len", "3", "--adapt", str(run), "--mix", str(general)]  # fmt: skip
    # 27 training pairs, ratio 0.1: round(2.7) = 3 of the 4 general pairs, drawn with seed 0.
    result = luong(*command, "--mix-ratio", "0.1")
    assert result.returncode == 0, result.stderr.decode()
    said = result.stderr.decode().splitlines()
    assert said[-2].startswith(
        f"luong: adapted {model} to 27 translated entries of {catalog} and 3 pairs of "
        f"{general} (3 held out: dev exact match "
    )
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["data"]["mixed"] == {"pairs": 3, "of": 4, "ratio": 0.1, "file": str(general)}
    trained = json.loads((run / "run.json").read_text())["data_sha256"]["train"]
    # The catalog's pairs alone hash otherwise: the same folder mixed with other pairs is
    # another adaptation's, refused; the same command again is this one's, evaluated again.
    assert_one_line_error(
        luong(*command, "--mix-ratio", "0.5", "--force"),
        f"luong: error: {run}: adapted to other translations (another catalog's, this one's "
        "before they changed, or other general pairs mixed in); choose a new --adapt folder",
    )
    assert luong(*command, "--mix-ratio", "0.1", "--force").returncode == 0
    assert json.loads((run / "run.json").read_text())["data_sha256"]["train"] == trained
    # a ratio as large as a float goes: every general pair (it was an OverflowError, exit 70)
    every = tmp_path / "every"
    result = luong(*command[:-4], "--adapt", str(every), "--mix", str(general), "--mix-ratio",
                   "1e308", "--force")  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    mixed = json.loads((every / "metrics.json").read_text())["data"]["mixed"]
    assert (mixed["pairs"], mixed["of"]) == (4, 4)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--mix", "g.tsv"], "--mix: general pairs for --adapt RUN's fine-tuning; give --adapt"),
        (
            ["--adapt", "r", "--mix-ratio", "2"],
            "--mix-ratio: only with --mix FILE.tsv (the general pairs to mix in)",
        ),
        (
            ["--adapt", "r", "--mix", "g.tsv", "--mix-ratio", "0"],
            "mix_ratio: expected a number > 0, got 0.0",
        ),
    ],
)
def test_po_mix_flags_out_of_place_are_one_line(
    model: Path, tmp_path: Path, flags: list[str], message: str
) -> None:
    catalog = tmp_path / "de.po"
    catalog.write_text(catalog_text(30), encoding="utf-8")
    result = luong("po", str(model), str(catalog), "--out", str(tmp_path / "o.po"), *flags)
    assert_one_line_error(result, f"luong: error: {message}")


def test_po_adapt_names_its_folder_and_refuses_the_model_itself(
    model: Path, tmp_path: Path
) -> None:
    catalog = tmp_path / "de.po"
    catalog.write_text(catalog_text(30), encoding="utf-8")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    command = ["po", str(model), str(catalog), "--out", str(tmp_path / "o.po"), "--tgt-lang", "de"]
    # errors about the run folder name --adapt, the flag given (they said --out)
    assert_one_line_error(
        luong(*command, "--adapt", str(mine)),
        f"luong: error: {mine}: not empty and not a luong run folder (it holds notes.txt, but no "
        "run.json); choose a new or empty folder for --adapt",
    )
    assert_one_line_error(
        luong(*command, "--adapt", str(notes)),
        f"luong: error: {notes}: not a folder; --adapt names the run folder to write",
    )
    # the model being adapted given as --adapt (it said: adapted to other translations)
    assert_one_line_error(
        luong(*command, "--adapt", str(model)),
        f"luong: error: {model}: the model being adapted; --adapt names a new folder for the "
        "adapted run (the model stays as it is)",
    )
    assert (mine / "notes.txt").read_text() == "mine" and not (tmp_path / "o.po").exists()
