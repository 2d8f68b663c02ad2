"""Lexically constrained beam search (luong.search.constrained): beam search bit for bit
without constraints, every phrase in every best output (exactly as often with ``exact``),
unknown phrases reported, beam 1, ensembles, mixed batches, and ``luong translate
--constraints``."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch
from helpers import TGT, assert_one_line_error, output_lines, small_model
from helpers import luong as run_luong

from luong.config.search import OptionError, SearchOptions
from luong.data.subword import train_subword
from luong.model.ensemble import Decodable, Ensemble, encode_texts
from luong.search import Hypothesis, decode, default_max_len, search_beams
from luong.search.constrained import (
    constrained_search,
    constraint_ids,
    count_occurrences,
    first_alternatives,
)
from luong.translation.translator import translate

TEXTS = ["abc", "jihgfe", "a", "bbbbbbbbb", "cafe", "dig", "hhajb"]

GRID = [
    SearchOptions(beam=beam, nbest=nbest, alpha=alpha, beta=beta)
    for beam in range(1, 6)
    for nbest in sorted({1, beam})
    for alpha, beta in ((0.0, 0.0), (0.6, 0.2))
]


def assert_identical(a: list[list[Hypothesis]], b: list[list[Hypothesis]]) -> None:
    assert len(a) == len(b)
    for hyps_a, hyps_b in zip(a, b, strict=True):
        assert [h.tokens for h in hyps_a] == [h.tokens for h in hyps_b]
        for x, y in zip(hyps_a, hyps_b, strict=True):
            assert x.score == y.score and x.log_probs == y.log_probs
            assert torch.equal(x.attention, y.attention)


def searched(
    model: Decodable, options: SearchOptions, constraints: list[list[list[int]]] | None
) -> list[list[Hypothesis]]:
    """The search itself on one encoded batch of ``TEXTS``: beam search, or constrained
    beam search with ``constraints``."""
    with torch.inference_mode():
        memory, state, lengths = encode_texts(model, TEXTS)
        limits = default_max_len(lengths)
        if constraints is None:
            return search_beams(model, memory, state, lengths, limits, options, [])
        return constrained_search(model, memory, state, lengths, limits, options, [], constraints)


MODELS = {
    "model": lambda: small_model(3),
    "ensemble": lambda: Ensemble([small_model(1), small_model(2, attention="concat")]),
}


@pytest.mark.parametrize("which", MODELS)
@pytest.mark.parametrize("options", GRID, ids=str)
def test_without_constraints_it_is_beam_search_bit_for_bit(
    which: str, options: SearchOptions
) -> None:
    model = MODELS[which]()
    beams = searched(model, options, None)
    assert_identical(searched(model, options, [[] for _ in TEXTS]), beams)
    # One sentence constrained: the others still are beam search's, bit for bit (the banks'
    # round-robin of one bank is the top k).
    mixed = searched(model, options, [[[5, 6]]] + [[] for _ in TEXTS[1:]])
    assert_identical(mixed[1:], beams[1:])
    assert count_occurrences(mixed[0][0].tokens, [5, 6]) >= 1


def random_constraints(rng: random.Random, disjoint: bool) -> list[str]:
    """1 to 4 phrases of 1 to 3 target symbols, some listed twice. ``disjoint``: no two
    phrases share a symbol (as placeholders: ``exact`` cannot hold "-" once beside "9--"
    twice, which holds it four times)."""
    symbols = list(TGT.symbols[4:])
    rng.shuffle(symbols)
    if disjoint:
        phrases = ["".join(symbols[3 * i : 3 * i + rng.randint(1, 3)]) for i in range(3)]
    else:
        phrases = ["".join(rng.choices(symbols, k=rng.randint(1, 3))) for _ in range(3)]
    return rng.choices(phrases, k=rng.randint(1, 4))


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_every_best_output_holds_each_phrase_as_often_as_listed(exact: bool, seed: int) -> None:
    rng = random.Random(seed)
    model = small_model(seed)
    constraints = [random_constraints(rng, exact) for _ in TEXTS]
    for options in (SearchOptions(beam=1), SearchOptions(beam=3, nbest=2, alpha=0.6)):
        lists = decode(model, TEXTS, options, constraints=constraints, exact=exact)
        for phrases, hyps in zip(constraints, lists, strict=True):
            best = hyps[0].tokens
            for phrase in set(phrases):
                found = count_occurrences(best, TGT.encode(phrase, eos=False))
                listed = phrases.count(phrase)
                assert found == listed if exact else found >= listed, (phrases, best)


def test_exact_forbids_one_more_occurrence() -> None:
    # Model 3 writes 3s all the way (its outputs are "333..."): asked for one "3", it may
    # write only one.
    model = small_model(3)
    free = decode(model, ["abc"], SearchOptions(beam=3), constraints=[["3"]])[0][0]
    exact = decode(model, ["abc"], SearchOptions(beam=3), constraints=[["3"]], exact=True)
    assert free.tokens.count(TGT.id("3")) > 1
    assert exact[0][0].tokens.count(TGT.id("3")) == 1


def test_an_unknown_or_empty_phrase_is_reported_with_its_sentence() -> None:
    model = small_model(3)
    with pytest.raises(ValueError) as error:
        decode(model, ["abc", "de"], SearchOptions(beam=2), constraints=[["1"], ["z"]])
    assert str(error.value) == (
        "constraints[1]: the phrase 'z' has symbols the target vocabulary cannot produce: ['z']"
    )
    with pytest.raises(ValueError, match=r"constraints\[0\]: expected non-empty phrases"):
        decode(model, ["abc"], SearchOptions(beam=2), constraints=[[" "]])
    with pytest.raises(ValueError, match=r"one list per input \(2\), got 1"):
        decode(model, ["abc", "de"], SearchOptions(beam=2), constraints=[["1"]])
    with pytest.raises(TypeError, match=r"constraints\[0\]: expected a list of phrase"):
        decode(model, ["abc"], SearchOptions(beam=2), constraints=["12"])  # type: ignore[list-item]
    with pytest.raises(OptionError, match="sample: constraints need beam search"):
        decode(model, ["abc"], SearchOptions(sample=True, seed=1), constraints=[["1"]])
    with pytest.raises(ValueError, match="no PAD, BOS or EOS"):
        searched(model, SearchOptions(beam=2), [[[2]]] + [[] for _ in TEXTS[1:]])


def test_beam_one_with_constraints_terminates_and_meets_them() -> None:
    # An output limit of 2 cannot hold 5 constraint tokens: it grows to hold them and EOS.
    model = small_model(5)
    options = SearchOptions(beam=1, max_len=2)
    lists = decode(model, TEXTS, options, constraints=[["12", "9-9"]] * len(TEXTS))
    for hyps in lists:
        assert len(hyps) == 1 and len(hyps[0].tokens) <= 6
        assert count_occurrences(hyps[0].tokens, TGT.encode("12", eos=False)) >= 1
        assert count_occurrences(hyps[0].tokens, TGT.encode("9-9", eos=False)) >= 1


def test_ensembles_take_constraints() -> None:
    ensemble = Ensemble([small_model(1), small_model(2, attention="concat")])
    outputs = translate(ensemble, TEXTS, SearchOptions(beam=4), constraints=[["7", "0-"]] * 7)
    assert all("7" in out and "0-" in out for out in outputs)


def test_a_batch_with_mixed_constraints_equals_each_sentence_alone() -> None:
    model = small_model(4)
    constraints = [["1"], [], ["23", "23"], ["-"], [], ["456"], ["9", "8", "7"]]
    options = SearchOptions(beam=4, nbest=2, alpha=0.6)
    together = decode(model, TEXTS, options, constraints=constraints)
    for text, phrases, hyps in zip(TEXTS, constraints, together, strict=True):
        (alone,) = decode(model, [text], options, constraints=[phrases])
        assert [h.tokens for h in hyps] == [h.tokens for h in alone]
        assert [h.score for h in hyps] == pytest.approx([h.score for h in alone], abs=1e-5)


def test_constraint_ids_encode_each_phrase_alone() -> None:
    assert constraint_ids(TGT, [["12", "-"], []]) == [
        [[TGT.id("1"), TGT.id("2")], [TGT.id("-")]],
        [],
    ]


# -- luong translate --constraints ----------------------------------------------------------


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("constrained")
    return [small_model(seed).save_pretrained(root / f"m{seed}") for seed in (1, 2)]


def write(path: Path, lines: list[str]) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def test_cli_translates_with_constraints_and_an_ensemble(
    folders: list[Path], tmp_path: Path
) -> None:
    sources = write(tmp_path / "in.txt", ["abc", "", "jihg"])
    constraints = write(tmp_path / "c.jsonl", ['["7", "0-"]', "", "[]"])
    for models in ([folders[0]], folders):
        result = run_luong(
            "translate", *map(str, models), "--input", sources, "--beam", "3",
            "--constraints", constraints,
        )  # fmt: skip
        lines = output_lines(result)
        assert len(lines) == 3 and lines[1] == ""
        assert "7" in lines[0] and "0-" in lines[0]


@pytest.mark.parametrize(
    ("lines", "needles"),
    [
        (['["1"]'], ["c.jsonl: 1 lines, the input has 2"]),
        (['["1"]', '["2"'], ["c.jsonl:2: not JSON"]),
        (['["1"]', '{"a": 1}'], ["c.jsonl:2: expected a JSON list of phrase strings"]),
        (['["z"]', "[]"], ["c.jsonl:1: the phrase 'z' has symbols the target vocabulary"]),
    ],
)
def test_cli_constraint_file_errors_are_one_line(
    folders: list[Path], tmp_path: Path, lines: list[str], needles: list[str]
) -> None:
    sources = write(tmp_path / "in.txt", ["abc", "de"])
    constraints = write(tmp_path / "c.jsonl", lines)
    result = run_luong(
        "translate", str(folders[0]), "--input", sources, "--beam", "2",
        "--constraints", constraints,
    )  # fmt: skip
    assert_one_line_error(result, *needles)
    assert result.stdout == b""


def test_cli_constraints_are_not_for_sampling(folders: list[Path], tmp_path: Path) -> None:
    sources = write(tmp_path / "in.txt", ["abc"])
    constraints = write(tmp_path / "c.jsonl", [json.dumps(["1"])])
    result = run_luong(
        "translate", str(folders[0]), "--input", sources, "--sample", "--seed", "1",
        "--constraints", constraints,
    )  # fmt: skip
    assert_one_line_error(result, "constraints need beam search")


# -- sentencepiece: a placeholder glued to punctuation ---------------------------------------

PLACEHOLDER_TEXT = [
    "Datei »%s« nicht gefunden",
    "Fehler (%s) in Zeile %d",
    "Kann »%s« nicht öffnen: %s",
    "Wert %d von %d",
    "Name »%s«",
    "Pfad (%s)",
] * 30


def test_a_placeholder_glued_to_punctuation_counts_in_the_text() -> None:
    """With sentencepiece, ``»%s«`` is ``▁»% s «``: the phrase ``%s`` (``▁% s`` alone) may
    open with any piece that ends with ``%``, so ``exact`` counts it in the text as written
    and never writes a second ``%s`` beside a glued one."""
    pieces = train_subword(PLACEHOLDER_TEXT, "bpe", 320)
    first = constraint_ids(pieces, [["%s"]])[0][0][0]
    openings = pieces.symbols_of(first_alternatives(pieces, first), strip=False)
    assert openings[0] == "▁%"
    assert set(openings) == {"▁%", "»%", "▁»%", "(%", "▁(%", "%"}
    assert first_alternatives(TGT, TGT.id("1")) == [TGT.id("1")]
    # A model that writes "»%s" of its own (its output layer's bias favours the two pieces):
    # the glued "»%" opens the phrase, so exact writes no second "%s".
    fond = small_model(0, tgt=pieces)
    with torch.no_grad():
        fond.decoder.out.bias[pieces.id("▁»%")] += 8.0
        fond.decoder.out.bias[pieces.id("s")] += 6.0
    written = translate(fond, TEXTS, SearchOptions(beam=3), constraints=[["%s"]] * 7, exact=True)
    assert all(text.count("»%s") == 1 and text.count("%s") == 1 for text in written), written
    for seed in range(6):
        model = small_model(seed, tgt=pieces)
        options = SearchOptions(beam=3)
        for exact in (False, True):
            outputs = translate(model, TEXTS, options, constraints=[["%s"]] * 7, exact=exact)
            for text in outputs:
                assert text.count("%s") >= 1 if not exact else text.count("%s") == 1, text


def test_cli_constraints_are_not_for_streaming(folders: list[Path], tmp_path: Path) -> None:
    sources = write(tmp_path / "in.txt", ["abc"])
    constraints = write(tmp_path / "c.jsonl", ['["1"]'])
    result = run_luong(
        "translate", str(folders[0]), "--input", sources, "--stream",
        "--constraints", constraints,
    )  # fmt: skip
    assert_one_line_error(result, "--constraints: not with --stream")
    assert result.returncode == 2
