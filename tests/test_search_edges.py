"""Search at its limits and in combination (issue 43): a user's constraints held beside the
placeholders, option combinations refused before the first line, constraints bounded, the
schedule's steps counted without building every epoch's batches; and the edges a fault audit
found untested: constrained n-best lists on a model that would stop early, an output limit
with exactly the room the constraints need, beam search's stopping bound under a strong
length penalty, the token batcher's limit, sort and running maxima, and checkpoint
selection on BLEU against chrF."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import TGT, assert_one_line_error, output_lines, small_model, toy_pairs
from helpers import luong as run_luong
from test_search_reference import assert_matches, lively

import luong.training.data
from luong.config.request import RequestOptions
from luong.config.search import (
    MAX_CONSTRAINT_PIECES,
    MAX_PHRASE_PIECES,
    OptionError,
    SearchOptions,
)
from luong.config.train import TrainConfig
from luong.data.batching import bucketed_batches, token_batches
from luong.data.vocab import Vocab
from luong.search import decode, hypothesis_text
from luong.search.constrained import constraint_ids, count_occurrences
from luong.training.data import StepCounts, epoch_step_count, epoch_steps
from luong.training.distributed import World
from luong.training.objective import lr_factor
from luong.training.trainer import Trainer
from luong.translation.admission import fit_sources
from luong.translation.placeholder_search import (
    spellable_spans,
    translate_constrained,
    written_phrases,
)
from luong.translation.placeholders import (
    find_placeholders,
    holds_phrases,
    keeps_placeholders,
    mask_source,
    restore,
)
from luong.translation.translator import Translator

# A model whose target symbols spell placeholders ({}, %s, <b>) and plain words.
PLACEHOLDER_TGT = Vocab(list("abcdefghij %s{}<>/-n0$."))
SOURCES = ["ab %s cd", "{} e <b>f", "ab %1$s", "a %s b %d", "hij %s", "abc <b>d</b> e",
           "j {} %s", "cc %d dd %s"]  # fmt: skip


def placeholder_model(seed: int) -> Any:
    return small_model(seed, src=PLACEHOLDER_TGT, tgt=PLACEHOLDER_TGT)


# -- 1. --placeholders with --constraints: both held -----------------------------------------


@pytest.mark.parametrize("mode", ["constrain", "mask"])
def test_the_users_constraints_hold_beside_the_placeholders(tmp_path: Path, mode: str) -> None:
    """Red team 5: with --placeholders constrain, 2 of 12 outputs lacked the required phrase
    (the masked fallback decoded without it). Every output now holds both."""
    lines = "".join(line + "\n" for line in SOURCES)
    (tmp_path / "c.jsonl").write_text('["bij"]\n' * len(SOURCES), encoding="utf-8")
    for seed in range(2):
        placeholder_model(seed).save_pretrained(tmp_path / f"m{seed}")
        result = run_luong(
            "translate", str(tmp_path / f"m{seed}"), "--placeholders", mode, "--beam", "3",
            "--constraints", str(tmp_path / "c.jsonl"), stdin=lines.encode(),
        )  # fmt: skip
        outputs = output_lines(result)
        assert len(outputs) == len(SOURCES)
        for source, output in zip(SOURCES, outputs, strict=True):
            assert "bij" in output, (seed, source, output)
            assert keeps_placeholders(source, output), (seed, source, output)


def test_random_sources_and_phrases_hold_both_in_the_best_output() -> None:
    """Sources of words and spans, phrases of one to three words (a span's place is never
    inside one), untrained models: the best output keeps every span exactly and holds every
    phrase as often as listed, with either mechanism."""
    words = ["ab", "cd", "e", "fgh", "ij", "a-b"]
    spans = ["%s", "%d", "{}", "<b>", "</b>", "<br/>", "--dry-run", "%1$s", "\\n"]
    rng = random.Random(5)
    for seed in range(2):
        model = placeholder_model(seed)
        translator = Translator(model)
        sources, constraints = [], []
        for _ in range(16):
            pieces = rng.choices(words + spans, k=rng.randint(1, 6))
            sources.append("".join(p + rng.choice(["", " "]) for p in pieces))
            phrases = ["".join(rng.choices("abcdefghij", k=rng.randint(1, 3)))]
            constraints.append(phrases + ([rng.choice(["ab cd", "a b", "c d e"])] * (seed % 2)))
        for mode in ("constrain", "mask"):
            request = RequestOptions(placeholders=mode)
            options = SearchOptions(beam=2, max_len=20)
            found = translator.translations(sources, options, request, constraints=constraints)
            for phrases, translation in zip(constraints, found, strict=True):
                best = translation.texts[0]
                assert keeps_placeholders(translation.source, best), (translation.source, best)
                assert holds_phrases(best, written_phrases(model, phrases)), (phrases, best)


def test_no_span_is_put_back_inside_a_kept_phrase() -> None:
    masked = mask_source("ab %s cd")
    # The mask (source word 1) is aligned after output word 0, inside the phrase "x y".
    links = [(0, 0), (1, 0), (2, 1)]
    assert restore(masked, "x y", links) == "x %s y"
    assert restore(masked, "x y", links, keep=["x y"]) == "x y %s"
    # A placeholder the model glued to a phrase loses its own characters only: "%i" of
    # "%icb" is a printf conversion, and "icb" a phrase to keep.
    assert restore(mask_source("ab"), "%icb", [(0, 0)], keep=["icb"]) == "icb"
    assert restore(mask_source("ab"), "%icb", [(0, 0)]) == "cb"


def test_per_phrase_exactness() -> None:
    # Model 3 writes 3s all the way: "3" held at least once may come many times, "3"
    # exactly once may not; "45" held exactly once beside it.
    model = small_model(3)
    options = SearchOptions(beam=3)
    loose = decode(model, ["abc"], options, constraints=[["3", "45"]], exact=[[False, True]])
    tokens = loose[0][0].tokens
    assert tokens.count(TGT.id("3")) > 1
    assert count_occurrences(tokens, TGT.encode("45", eos=False)) == 1
    strict = decode(model, ["abc"], options, constraints=[["3", "45"]], exact=True)[0][0].tokens
    assert strict.count(TGT.id("3")) == 1
    with pytest.raises(ValueError, match=r"exact\[0\]: expected a flag per phrase \(2\), got 1"):
        decode(model, ["abc"], options, constraints=[["3", "45"]], exact=[[True]])


def test_a_phrase_holding_a_placeholder_is_refused_with_placeholders(tmp_path: Path) -> None:
    placeholder_model(0).save_pretrained(tmp_path / "m")
    (tmp_path / "c.jsonl").write_text('["ab"]\n["cd %s"]\n', encoding="utf-8")
    for mode in ("constrain", "mask"):
        result = run_luong(
            "translate", str(tmp_path / "m"), "--placeholders", mode, "--constraints",
            str(tmp_path / "c.jsonl"), stdin=b"ab %s\ncd %s\n",
        )  # fmt: skip
        assert_one_line_error(
            result,
            "c.jsonl:2: the phrase 'cd %s' holds the placeholder '%s'; with placeholders kept",
        )
        assert result.stdout == b""
    off = run_luong("translate", str(tmp_path / "m"), "--constraints", str(tmp_path / "c.jsonl"),
                    stdin=b"ab %s\ncd %s\n")  # fmt: skip
    assert [line.count("cd %s") >= 1 for line in output_lines(off)] == [False, True]
    with pytest.raises(ValueError, match=r"constraints\[0\]: the phrase '%s' holds"):
        translate_constrained(placeholder_model(0), ["ab %s"], constraints=[["%s"]])


# -- 2. option combinations refused before the first line ------------------------------------


def test_constrain_with_sampling_is_refused_by_the_request_options() -> None:
    request = RequestOptions(placeholders="constrain")
    with pytest.raises(OptionError, match="sample: placeholders constrain keeps them by beam"):
        request.check_search(SearchOptions(sample=True, seed=2, temperature=2.0))
    request.check_search(SearchOptions(beam=3))
    RequestOptions(placeholders="mask").check_search(SearchOptions(sample=True))


def test_red_team_9_is_a_usage_error_before_any_output(tmp_path: Path) -> None:
    placeholder_model(0).save_pretrained(tmp_path / "m")
    (tmp_path / "in.txt").write_text("".join(s + "\n" for s in SOURCES * 3), encoding="utf-8")
    result = run_luong(
        "translate", str(tmp_path / "m"), "--input", str(tmp_path / "in.txt"), "--placeholders",
        "constrain", "--sample", "--seed", "2", "--temperature", "2", "--batch-size", "1",
    )  # fmt: skip
    assert result.returncode == 2 and result.stdout == b""
    assert (
        result.stderr.decode()
        .strip()
        .endswith(
            "luong: error: --sample: placeholders constrain keeps them by beam search, not "
            "sampling; sample with placeholders mask or off"
        )
    )


def location_model(tmp_path: Path) -> Path:
    model = small_model(1, src=PLACEHOLDER_TGT, tgt=PLACEHOLDER_TGT, attention="location",
                        max_src_len=12)  # fmt: skip
    return model.save_pretrained(tmp_path / "loc")


def test_a_masked_source_too_long_for_a_location_model_is_refused_first(tmp_path: Path) -> None:
    """ "{}{}{}{}a" is 9 symbols, masked "%d %d %d %d a" 13: above the 12 positions a
    location-score model has. It stopped the run half-way; now it is refused before the
    first line, or cut with --truncate."""
    folder = location_model(tmp_path)
    lines = ["ab", "a%sb", "", "ab %s cd", "{}{}{}{}a", "abc"]
    (tmp_path / "in.txt").write_text("".join(s + "\n" for s in lines), encoding="utf-8")
    for mode in ("mask", "constrain"):
        args = ["translate", str(folder), "--input", str(tmp_path / "in.txt"), "--batch-size",
                "1", "--placeholders", mode]  # fmt: skip
        refused = run_luong(*args)
        assert_one_line_error(
            refused,
            "in.txt:5: 13 symbols with its placeholders masked (placeholders "
            f"{mode}), above the maximum source length 12 (1 such lines); pass --truncate to "
            "cut them",
        )
        assert refused.stdout == b""
        cut = run_luong(*args, "--truncate")
        assert len(output_lines(cut)) == len(lines)
    fitted = fit_sources(
        Translator.from_pretrained(folder).model, lines, truncate=True,
        request=RequestOptions(placeholders="mask"),
    )  # fmt: skip
    assert fitted.truncated == [4] and fitted.sources[4] == "{}{}{}{}"  # "%d %d %d %d": 11


SEARCHES = [["--beam", "3", "--nbest", "2", "--max-len", "3"], ["--sample", "--seed", "2"],
            ["--prefix", "%s", "--min-len", "30"]]  # fmt: skip
REQUESTS = [["--placeholders", "mask", "--format", "jsonl"], ["--placeholders", "constrain"],
            ["--align", "--constraints", "c.jsonl"],
            ["--placeholders", "constrain", "--constraints", "c.jsonl"]]  # fmt: skip


def test_every_combination_writes_every_line_or_none(tmp_path: Path) -> None:
    """A grid of search and request options, on a model and a location-score model, one
    source a search call: each run writes a line per input, or nothing and an error."""
    folders = [placeholder_model(0).save_pretrained(tmp_path / "m"), location_model(tmp_path)]
    lines = ["a%sb", "", "ab %s cd", "{}{}{}{}a", "zzz", "%1$s"]
    (tmp_path / "in.txt").write_text("".join(s + "\n" for s in lines), encoding="utf-8")
    (tmp_path / "c.jsonl").write_text('["ab"]\n[]\n' * 3, encoding="utf-8")
    for folder in folders:
        for search in SEARCHES:
            for request in REQUESTS:
                request = [str(tmp_path / a) if a == "c.jsonl" else a for a in request]
                result = run_luong("translate", str(folder), "--input", str(tmp_path / "in.txt"),
                                   "--batch-size", "1", *search, *request)  # fmt: skip
                if result.returncode == 0:
                    assert result.stdout.count(b"\n") == len(lines), (folder, search, request)
                else:
                    assert result.stdout == b"", (folder, search, request)
                    error = result.stderr.decode()
                    assert "Traceback" not in error
                    assert error.strip().splitlines()[-1].startswith("luong: error: ")


# -- 3. constraints bounded -------------------------------------------------------------------


def test_constraints_are_bounded_a_phrase_and_a_line() -> None:
    digits = "0123456789"
    longest = (digits * 10)[:MAX_PHRASE_PIECES]
    assert len(constraint_ids(TGT, [[longest]])[0][0]) == MAX_PHRASE_PIECES
    with pytest.raises(ValueError) as error:
        constraint_ids(TGT, [[], [longest + "1"]])
    assert str(error.value) == (
        f"constraints[1]: the phrase '{longest[:37]}...' is {MAX_PHRASE_PIECES + 1} target "
        f"symbols, above the most a phrase may have ({MAX_PHRASE_PIECES})"
    )
    full = [longest] * (MAX_CONSTRAINT_PIECES // MAX_PHRASE_PIECES)
    assert sum(map(len, constraint_ids(TGT, [full])[0])) == MAX_CONSTRAINT_PIECES
    with pytest.raises(ValueError) as error:
        constraint_ids(TGT, [[*full, "7"]])
    assert str(error.value) == (
        f"constraints[0]: {len(full) + 1} phrases of {MAX_CONSTRAINT_PIECES + 1} target "
        f"symbols in all, above the most a sentence's constraints may have "
        f"({MAX_CONSTRAINT_PIECES})"
    )


def test_the_cli_names_the_line_and_the_bound(tmp_path: Path) -> None:
    small_model(0).save_pretrained(tmp_path / "m")
    (tmp_path / "c.jsonl").write_text('["12"]\n["' + "1" * 1000 + '"]\n', encoding="utf-8")
    result = run_luong("translate", str(tmp_path / "m"), "--beam", "2", "--constraints",
                       str(tmp_path / "c.jsonl"), stdin=b"abc\nde\n")  # fmt: skip
    assert_one_line_error(
        result, "c.jsonl:2: the phrase '1111", "is 1000 target symbols, above the most a phrase "
        f"may have ({MAX_PHRASE_PIECES})",
    )  # fmt: skip
    assert result.stdout == b""


def test_placeholders_beyond_the_bound_are_masked_instead() -> None:
    model = placeholder_model(0)
    many = " ".join(["%s"] * (MAX_CONSTRAINT_PIECES // 2 + 1))  # 2 symbols a span
    assert spellable_spans(model, many) is None
    assert spellable_spans(model, "ab %s") == ["%s"]
    (output,) = translate_constrained(model, [many], SearchOptions(beam=2, max_len=4))[0]
    assert Counter(s.text for s in find_placeholders(output)) == {"%s": 101}


# -- 4. the schedule's steps counted without building every epoch ----------------------------


def old_counts(data: Any, config: TrainConfig, world: World) -> list[int]:
    """Every epoch's steps as the trainer counted them before: each epoch built."""
    return [len(epoch_steps(data, config, world, e)) for e in range(1, config.epochs + 1)]


@pytest.mark.parametrize("seed", range(3))
def test_the_step_counts_equal_building_every_epoch(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    pairs = toy_pairs(rng.randint(150, 400), seed)
    model = small_model()
    for tokens, batch_size in ((0, rng.randint(3, 40)), (rng.randint(20, 90), 64)):
        for accumulate, world in ((1, World()), (3, World(rank=1, size=2))):
            config = TrainConfig(
                epochs=rng.randint(2, 6), batch_size=batch_size, batch_tokens=tokens,
                accumulate=accumulate, seed=seed, progress=False,
            )  # fmt: skip
            data = luong.training.data.training_data(pairs, model, config)
            expected = old_counts(data, config, world)
            counted = [
                epoch_step_count(data, config, world, e) for e in range(1, config.epochs + 1)
            ]
            assert counted == expected
            for after in (10**9, 0):  # at once; by a child process (where batches of tokens)
                monkeypatch.setattr(luong.training.data, "COUNT_AFTER_START", after)
                counts = StepCounts(data, config, world, expected[0])
                assert counts.total == sum(expected)
                assert counts.known() == sum(expected) and counts.at_least == sum(expected)


def test_the_trainer_keeps_its_batches_and_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = toy_pairs(300, 1)
    config = TrainConfig(epochs=4, batch_tokens=60, warmup_steps=5, schedule="linear",
                         seed=3, progress=False)  # fmt: skip
    monkeypatch.setattr(luong.training.data, "COUNT_AFTER_START", 0)  # the child counts
    trainer = Trainer(small_model(), pairs, pairs[:2], config, log=lambda m: None)
    assert trainer.step_counts.at_least == trainer.steps_per_epoch + 3
    expected = old_counts(trainer.data, config, trainer.world)
    assert trainer.steps_per_epoch == expected[0] and trainer.total_steps == sum(expected)
    for epoch in range(1, 5):
        built = trainer._epoch_steps(epoch)
        again = epoch_steps(trainer.data, config, trainer.world, epoch)
        assert [[ix.tolist() for ix in g] for g in built] == [[ix.tolist() for ix in g]
                                                              for g in again]  # fmt: skip
    for step in range(sum(expected)):
        assert trainer._lr(step) == config.lr * lr_factor(step, sum(expected), 5, "linear")


# -- 5. the fault audit's edges -----------------------------------------------------------------


def eager_to_stop(seed: int) -> Any:
    model = small_model(seed)
    with torch.no_grad():
        model.decoder.out.bias[Vocab.eos_id] += 12.0  # EOS is by far the likeliest token
    return model


@pytest.mark.parametrize("exact", [False, True])
def test_no_hypothesis_ends_with_a_constraint_unmet(exact: bool) -> None:
    texts = ["abc", "jihgfe", "a", "bbbbbbbbb", "cafe"]
    constraints = [["12", "7"], ["345"], ["9", "9"], ["0-"], ["86", "4"]]
    for seed in range(3):
        model = eager_to_stop(seed)
        assert all(len(h[0].tokens) == 1 for h in decode(model, texts))  # EOS at once
        # max_len 1: each limit grows to the constraints' tokens and EOS, no more, so the
        # lists hold what the search has at its limit, not only the hypotheses it completed.
        lists = [
            hyps
            for max_len in (None, 1)
            for hyps in decode(
                model,
                texts,
                SearchOptions(beam=4, nbest=4, max_len=max_len),
                constraints=constraints,
                exact=exact,
            )  # fmt: skip
        ]
        for phrases, hyps in zip(constraints * 2, lists, strict=True):
            assert len(hyps) == 4
            for h in hyps:
                if h.tokens[-1] == Vocab.eos_id:
                    for phrase, listed in Counter(phrases).items():
                        found = count_occurrences(h.tokens, TGT.encode(phrase, eos=False))
                        assert found == listed if exact else found >= listed, (phrases, h.tokens)
            best = hyps[0].tokens
            assert best[-1] == Vocab.eos_id
            assert all(count_occurrences(best, TGT.encode(p, eos=False)) for p in phrases)


def test_the_output_limit_leaves_exactly_the_room_the_constraints_need() -> None:
    # Prefix "1" (1 token) + "23" and "45" (4 tokens) + EOS: 6 tokens, whatever max_len asks;
    # a model eager to stop writes nothing more.
    model = eager_to_stop(0)
    for max_len in (1, 2, 6):
        options = SearchOptions(beam=3, nbest=3, prefix="1", max_len=max_len)
        hyps = decode(model, ["abc", "de"], options, constraints=[["23", "45"]] * 2)
        for sentence in hyps:
            best = sentence[0]
            assert len(best.tokens) == 6 and best.tokens[-1] == Vocab.eos_id, best.tokens
            assert best.tokens[0] == TGT.id("1")
            assert hypothesis_text(model, best) in ("12345", "14523")
            assert all(len(h.tokens) <= 6 for h in sentence)


@pytest.mark.parametrize("kind", ["general", "concat", "location"])
def test_beam_search_equals_the_reference_with_a_strong_length_penalty(kind: str) -> None:
    """alpha = 2: lp grows fast, so an open beam may still beat the ended ones long after
    they end: the stopping bound (an open beam's log P over lp at the limit) decides."""
    model = lively(7, attention=kind)
    with torch.no_grad():
        model.decoder.out.bias[Vocab.eos_id] += 1.5  # many end early; longer ones score more
    for options in (SearchOptions(beam=4, nbest=3, alpha=2.0),
                    SearchOptions(beam=3, alpha=2.0, beta=0.5, max_len=12)):  # fmt: skip
        assert_matches(model, options)


def test_a_batch_exactly_at_the_token_limit_and_the_maxima_after_a_cut() -> None:
    # Sorted by (size, source): A (10 + 1), then B and C (1 + 11 each). A alone costs 11;
    # A and B would cost 2 x (10 + 11) = 42 > 24: cut. After the cut the maxima are B's:
    # B and C cost 2 x (1 + 11) = 24, exactly the limit: one batch.
    src, tgt = [10, 1, 1], [1, 11, 11]
    for seed in range(4):
        batches = token_batches(src, tgt, 24, random.Random(seed))
        assert sorted(sorted(b.tolist()) for b in batches) == [[0], [1, 2]]
    assert sorted(len(b) for b in token_batches(src, tgt, 23, random.Random(0))) == [1, 1, 1]


def reference_batches(
    src: list[int], tgt: list[int], rng: random.Random, *, size: int = 0, tokens: int = 0,
    pool: int = 32,
) -> list[list[int]]:  # fmt: skip
    """``bucketed_batches`` (``size``) or ``token_batches`` (``tokens``) from their
    definitions, on Python lists: shuffle, stable sort by length inside pools, cut, shuffle."""
    order = list(range(len(src)))
    rng.shuffle(order)
    sizes = [s + t for s, t in zip(src, tgt, strict=True)]
    span = size * pool if size else max(1, int(pool * tokens / (sum(sizes) / len(sizes))))
    batches: list[list[int]] = []
    for start in range(0, len(order), span):
        chunk = order[start : start + span]
        if size:
            chunk.sort(key=lambda i: src[i])
            batches += [chunk[i : i + size] for i in range(0, len(chunk), size)]
            continue
        chunk.sort(key=lambda i: (sizes[i], src[i]))
        batch: list[int] = []
        for i in chunk:
            members = [*batch, i]  # the maxima are the batch's own: a cut starts them again
            longest = max(src[j] for j in members) + max(tgt[j] for j in members)
            if batch and len(members) * longest > tokens:
                batches.append(batch)
                batch = []
            batch.append(i)
        batches.append(batch)
    rng.shuffle(batches)
    return batches


@pytest.mark.parametrize("seed", range(4))
def test_the_batchers_equal_their_definitions_in_pools_larger_than_16(seed: int) -> None:
    """Few distinct lengths, so most examples tie: a pool (far more than 16 examples, where
    numpy's default sort is not stable) keeps the shuffled order among equal lengths."""
    rng = random.Random(seed)
    n = rng.randint(300, 700)
    src = [rng.choice([3, 5, 5, 8]) for _ in range(n)]
    tgt = [rng.choice([2, 4, 9]) for _ in range(n)]
    for size in (4, 9):
        got = bucketed_batches(src, size, random.Random(seed), pool=8)
        assert [b.tolist() for b in got] == reference_batches(src, tgt, random.Random(seed),
                                                              size=size, pool=8)  # fmt: skip
    for tokens in (40, 130):
        got = token_batches(src, tgt, tokens, random.Random(seed), pool=4)
        expected = reference_batches(src, tgt, random.Random(seed), tokens=tokens, pool=4)
        assert [b.tolist() for b in got] == expected
    equal = bucketed_batches([4] * 96, 8, random.Random(seed), pool=4)  # pools of 32
    order = list(range(96))
    random.Random(seed).shuffle(order)
    slices = {tuple(order[i : i + 8]) for i in range(0, 96, 8)}
    assert {tuple(b.tolist()) for b in equal} == slices


@pytest.mark.parametrize("select", ["bleu", "chrf"])
def test_select_bleu_or_chrf_keeps_the_weights_that_figure_ranks_best(
    select: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Scripted dev scores that rank the four evaluations differently: BLEU is best at the
    # second, chrF at the third.
    bleu = iter([10.0, 30.0, 20.0, 5.0])
    chrf = iter([40.0, 35.0, 50.0, 45.0])
    pairs = toy_pairs(40)
    model = small_model(seed=0)
    weights_at: dict[int, torch.Tensor] = {}

    def evaluate(*args: object, **kwargs: object) -> dict[str, float]:
        weights_at[trainer.progress.step] = model.decoder.out.weight.detach().clone()
        return {"exact_match": 0.5, "char_accuracy": 0.5, "bleu": next(bleu), "chrf": next(chrf)}

    monkeypatch.setattr("luong.training.dev.evaluate", evaluate)
    config = TrainConfig(epochs=4, batch_size=40, select=select, progress=False)
    trainer = Trainer(model, pairs, pairs[:4], config, log=lambda m: None)
    metrics = trainer.run()
    best = {"bleu": 2, "chrf": 3}[select]
    assert metrics["select"] == select and metrics["best_step"] == best
    assert (metrics["dev_bleu"], metrics["dev_chrf"]) == {"bleu": (30.0, 35.0),
                                                          "chrf": (20.0, 50.0)}[select]  # fmt: skip
    assert torch.equal(model.decoder.out.weight, weights_at[best])
    assert not torch.equal(weights_at[2], weights_at[3])
