"""Tests of ``luong.training.zoo``: the variants, dev perplexity, the summary, the report (its
table, figure and the hand-written text it keeps) and a zoo that continues where it stopped."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
import torch
from helpers import SRC, TGT, small_model

from luong.cli import main
from luong.config.model import Seq2SeqConfig
from luong.data.batching import ParallelData
from luong.tasks import load_task
from luong.training import zoo
from luong.training.objective import loss_of
from luong.training.zoo import VARIANTS, Variant, ZooRun, ZooSettings, dev_perplexity, summarize


def test_variants_are_the_papers_table_4_and_the_two_extras() -> None:
    assert [v.name for v in VARIANTS] == [
        "global (location)",
        "global (dot)",
        "global (scaled_dot)",
        "global (general)",
        "global (concat)",
        "local-m (dot)",
        "local-m (general)",
        "local-p (dot)",
        "local-p (general)",
        "Bahdanau (additive)",
    ]
    for v in VARIANTS:  # each is a valid model config
        Seq2SeqConfig(attention=v.attention, local=v.local)


def test_dev_perplexity_is_exp_of_the_mean_token_cross_entropy() -> None:
    model = small_model(attention="dot").train()
    pairs = [("abc", "12"), ("e", "3-40"), ("dcbae", "0")]
    data = ParallelData(pairs, SRC, TGT)
    with torch.no_grad():
        expected = math.exp(float(loss_of(model.eval(), data.batch(range(3)))))
    model.train()
    assert dev_perplexity(model, pairs, batch_size=2) == pytest.approx(expected, rel=1e-6)
    assert model.training  # left as it was
    with pytest.raises(ValueError, match="expected at least one"):
        dev_perplexity(model, [])


def run(variant: str, feed: bool, seed: int, em: float, ppl: float = 1.5) -> ZooRun:
    return ZooRun(variant, "dot", "none", feed, seed, em, em, ppl, 2.0 + seed, 1234, 10)


def test_summarize_and_report_keep_the_text_around_the_table(tmp_path: Path) -> None:
    runs = [run("global (dot)", True, s, em) for s, em in enumerate((0.5, 0.7, 0.9))]
    runs += [run("global (dot)", False, 0, 0.25), run("local-p (dot)", True, 0, 0.1)]
    rows = summarize(runs)
    assert [(r.variant, r.input_feed, r.seeds) for r in rows] == [
        ("global (dot)", True, 3),
        ("global (dot)", False, 1),
        ("local-p (dot)", True, 1),
    ]
    assert rows[0].score_mean == pytest.approx(70.0) and rows[0].score_sd == pytest.approx(20.0)
    assert (rows[0].score_min, rows[0].score_max, rows[0].seconds_mean) == (50.0, 90.0, 3.0)
    settings = ZooSettings(steps=10, seeds=3)
    md, png = zoo.write_report(runs, settings, tmp_path, command="luong zoo --out X")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = md.read_text()
    assert "| global (dot) | yes | 70.0 ± 20.0 (50.0 - 90.0) | 1.500 | 3.0 | 1,234 |" in text
    assert "`luong zoo --out X`" in text and "![" in text
    # Text written by hand around the markers survives a new report.
    md.write_text("# Mine\n\n" + text[text.index(zoo.BEGIN) :] + "\n## Discussion\n\nKept.\n")
    zoo.write_report(runs[:3], settings, tmp_path, command="luong zoo --again")
    again = md.read_text()
    assert again.startswith("# Mine\n\n" + zoo.BEGIN) and again.endswith("## Discussion\n\nKept.\n")
    assert "--again" in again and "local-p" not in again.split(zoo.END)[0]


def test_run_zoo_trains_records_and_continues(tmp_path: Path, monkeypatch) -> None:
    settings = ZooSettings(steps=2, seeds=1, window=2, n_dev=8, n_test=8)
    results = tmp_path / "dates.json"
    variants = [Variant("location"), Variant("dot", "predictive")]
    runs = zoo.run_zoo(settings, variants=variants, feeds=(False,), results=results)
    assert [(r.variant, r.input_feed, r.seed, r.steps) for r in runs] == [
        ("global (location)", False, 0, 2),
        ("local-p (dot)", False, 0, 2),
    ]
    for r in runs:
        assert 0.0 <= r.test_exact_match <= 1.0 and math.isfinite(r.dev_perplexity)
        assert r.parameters > 0 and r.train_seconds > 0
    saved = json.loads(results.read_text())
    assert saved["settings"] == dataclasses.asdict(settings) and len(saved["runs"]) == 2

    def no_training(*args, **kwargs):
        raise AssertionError("a recorded run trained again")

    monkeypatch.setattr(zoo, "train", no_training)
    assert zoo.run_zoo(settings, variants=variants, feeds=(False,), results=results) == runs
    with pytest.raises(ValueError, match="holds runs of other settings"):
        zoo.run_zoo(dataclasses.replace(settings, steps=3), variants=variants, results=results)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("steps", 0, "steps: expected an int >= 1, got 0"),
        (
            "task",
            "poems",
            "task: expected one of dates, g2p, translation (the zoo's tasks), got 'poems'",
        ),
        ("seeds", True, "seeds: expected an int >= 1, got True"),
        (
            "seeds",
            99999999999999999999,
            "seeds: expected at most 1000 (each trains every variant), got 99999999999999999999",
        ),
        ("data_seed", -1, "data_seed: expected an int from 0 to 18446744073709551615, got -1"),
        (
            "data_seed",
            2**64,
            "data_seed: expected an int from 0 to 18446744073709551615, got 18446744073709551616",
        ),
    ],
)
def test_settings_validate(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError) as info:
        ZooSettings(**{field: value})  # type: ignore[arg-type]
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"task": "translation"}, "translation: expected train, dev and test TSV files, missing "
         "train, dev, test"),
        ({"task": "translation", "train": "a.tsv", "dev": "b.tsv"},
         "translation: expected train, dev and test TSV files, missing test"),
        ({"task": "dates", "train": "a.tsv"},
         "train: files only for the translation zoo, got task 'dates'"),
        ({"task": "g2p", "vocab_size": 500},
         "vocab_size: expected 0, or pieces for the translation zoo, got 500"),
    ],
)  # fmt: skip
def test_translation_settings_need_their_files(fields: dict, message: str) -> None:
    with pytest.raises(ValueError) as info:
        ZooSettings(**fields)
    assert str(info.value) == message


def write_pairs(path: Path, pairs: list[tuple[str, str]]) -> str:
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return str(path)


def translation_settings(tmp_path: Path, **fields) -> ZooSettings:
    """A translation zoo on dates written as TSV files: 60 training pairs, 12 dev, 10 test."""
    pairs = load_task("dates", n_train=60, n_dev=12, n_test=10)
    files = {
        split: write_pairs(tmp_path / f"{split}.tsv", list(getattr(pairs, split)))
        for split in ("train", "dev", "test")
    }
    return ZooSettings(task="translation", vocab_size=320, **files, **fields)


def test_translation_zoo_data_repeats_the_shuffled_corpus_to_fill_the_budget(
    tmp_path: Path,
) -> None:
    from luong.tasks import task_configs
    from luong.training.zoo import zoo_data

    settings = translation_settings(tmp_path, steps=2, seeds=1, n_dev=5)
    data = zoo_data(settings)
    corpus = list(load_task("dates", n_train=60, n_dev=12, n_test=10).train)
    batch = task_configs("translation").train.batch_size
    assert len(data.train) == 2 * batch
    # Whole passes first, each a permutation of the corpus, then the start of another.
    passes = len(data.train) // len(corpus)
    for k in range(passes):
        assert sorted(data.train[k * 60 : (k + 1) * 60]) == sorted(corpus)
    assert set(data.train[passes * 60 :]) <= set(corpus)
    assert data.train[:60] != corpus  # shuffled
    assert len(data.dev) == 5 and len(data.test) == 10
    assert zoo_data(settings) == data


def test_translation_zoo_scores_by_bleu(tmp_path: Path) -> None:
    settings = translation_settings(tmp_path, steps=2, seeds=1, window=2)
    runs = zoo.run_zoo(settings, variants=[Variant("general")], feeds=(True,))
    (run,) = runs
    assert run.test_bleu is not None and 0.0 <= run.test_bleu <= 100.0
    assert run.test_chrf is not None and run.dev_bleu is not None
    assert run.score == run.test_bleu and run.steps == 2
    md, _ = zoo.write_report(
        runs, settings, tmp_path / "out", command="luong zoo --task translation"
    )
    text = md.read_text()
    assert "| test BLEU | dev perplexity |" in text  # one seed: no spread to show
    assert f"| global (general) | yes | {run.test_bleu:.2f} | " in text
    assert "sacreBLEU" in text and "passes over the shuffled corpus" in text


def test_cli_zoo_reports_bad_settings(tmp_path: Path, capsys) -> None:
    assert main(["zoo", "--out", str(tmp_path), "--steps", "0"]) == 1
    assert "luong: error: steps: expected an int >= 1, got 0" in capsys.readouterr().err


def test_g2p_zoo_data_keeps_whole_words_and_the_g2p_batch_budget() -> None:
    from luong.tasks import task_configs
    from luong.training.zoo import zoo_data

    settings = ZooSettings(task="g2p", steps=3, seeds=1, n_dev=40, n_test=50)
    data = zoo_data(settings)
    assert len(data.train) == 3 * task_configs("g2p")[1].batch_size
    assert len({w for w, _ in data.dev}) == 40 and len({w for w, _ in data.test}) == 50
    # Every pronunciation of a chosen word comes with it, and the splits stay disjoint.
    full = load_task("g2p")
    test_words = {w for w, _ in data.test}
    assert sorted(p for p in full.test if p[0] in test_words) == sorted(data.test)
    assert not test_words & {w for w, _ in data.train}
    assert data.references
    assert zoo_data(settings) == data  # the same cut every time
