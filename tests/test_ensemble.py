"""Ensembles (luong.model.ensemble) and checkpoint averaging (luong.model.averaging), in the library
and on the command line."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from helpers import TGT, assert_one_line_error, output_lines, small_model
from helpers import luong as run_luong

import luong
from luong.config.search import SearchOptions
from luong.data.vocab import Vocab
from luong.model.averaging import average_checkpoints, average_models, run_checkpoints
from luong.model.decoder import DecoderState
from luong.model.ensemble import Ensemble
from luong.model.seq2seq import Seq2Seq
from luong.search import Hypothesis, decode
from luong.translation.admission import fit_sources
from luong.translation.translator import Translator, translate

TEXTS = ["abc", "jihgfe", "a", "", "bbbbbbbbb", "cafe", "dig"]


def assert_same(a: list[list[Hypothesis]], b: list[list[Hypothesis]], tol: float) -> None:
    assert len(a) == len(b)
    for hyps_a, hyps_b in zip(a, b, strict=True):
        assert [h.tokens for h in hyps_a] == [h.tokens for h in hyps_b]
        for x, y in zip(hyps_a, hyps_b, strict=True):
            # a score is a float32 sum of many log-probabilities: beyond tol, a few of its
            # last bits (1e-7 of its size) may differ where the two sides round differently
            assert x.score == pytest.approx(y.score, abs=tol, rel=1e-7)
            assert x.log_probs == pytest.approx(y.log_probs, abs=tol, rel=0)
            torch.testing.assert_close(x.attention, y.attention, atol=tol, rtol=0)


SEARCHES = [
    SearchOptions(beam=1),
    SearchOptions(beam=4, nbest=3),
    SearchOptions(beam=3, alpha=0.6, beta=0.2),
    SearchOptions(beam=2, min_len=2),
]


@pytest.mark.parametrize("search", SEARCHES)
def test_an_ensemble_of_one_decodes_exactly_as_its_model(search: SearchOptions) -> None:
    model = small_model(3)
    assert_same(decode(Ensemble([model]), TEXTS, search), decode(model, TEXTS, search), 0.0)


@pytest.mark.parametrize("combine", ["logprob", "prob"])
@pytest.mark.parametrize("search", SEARCHES)
def test_an_ensemble_of_two_copies_equals_the_model(search: SearchOptions, combine: str) -> None:
    model = small_model(4, cell="lstm")
    ensemble = Ensemble([model, small_model(4, cell="lstm")])
    combined = replace(search, combine=combine)
    assert_same(decode(ensemble, TEXTS, combined), decode(model, TEXTS, search), 1e-6)


def member_log_probs(model: Seq2Seq, text: str, tokens: list[int]) -> tuple[torch.Tensor, ...]:
    """Teacher-forced log-probabilities ``[T, V]`` and attention ``[T, S]`` of ``tokens``
    (the decoder's batch path, not the search's step), in float64."""
    model = copy.deepcopy(model).double()
    ids = model.src_vocab.encode(text)
    src, lengths = torch.tensor([ids]), torch.tensor([len(ids)])
    tgt_in = torch.tensor([[Vocab.bos_id, *tokens[:-1]]])
    with torch.no_grad():
        memory, state = model.encode(src, lengths)
        logits, weights = model.decoder(tgt_in, state, memory)
    return torch.log_softmax(logits[0], dim=-1), weights[0]


@pytest.mark.parametrize(
    "kinds",
    [
        ({"attention": "dot"}, {"attention": "general"}, {"attention": "concat"}),
        ({"attention": "location"}, {"attention": "bahdanau"}, {"attention": "scaled_dot"}),
        ({"local": "monotonic", "window": 2}, {"local": "predictive", "window": 2}),
        ({"cell": "lstm", "input_feed": False}, {"cell": "gru", "dec_layers": 2}),
    ],
)
@pytest.mark.parametrize("combine", ["logprob", "prob"])
def test_greedy_search_follows_the_combined_distribution_of_different_members(
    kinds: tuple[dict[str, object], ...], combine: str
) -> None:
    """The oracle: each member teacher-forced in float64 on the ensemble's own output; the
    ensemble must have picked the argmax of the combination at every step, with its
    log-probability, and report the members' mean attention."""
    members = [small_model(10 + i, **fields) for i, fields in enumerate(kinds)]
    ensemble = Ensemble(members)
    texts = ["abcde", "jjj", "gif"]
    for text, hyps in zip(
        texts, decode(ensemble, texts, SearchOptions(combine=combine)), strict=True
    ):
        tokens = hyps[0].tokens
        forced = [member_log_probs(m, text, tokens) for m in members]
        log_probs = torch.stack([lp for lp, _ in forced])
        if combine == "prob":
            combined = torch.logsumexp(log_probs, 0) - math.log(len(members))
        else:
            combined = torch.log_softmax(log_probs.mean(0), dim=-1)
        combined[:, [Vocab.pad_id, Vocab.bos_id]] = -math.inf
        assert tokens == combined.argmax(-1).tolist()
        expected = combined.gather(1, torch.tensor(tokens)[:, None])[:, 0]
        assert hyps[0].log_probs == pytest.approx(expected.tolist(), abs=2e-5)
        mean_attention = torch.stack([w for _, w in forced]).mean(0)
        torch.testing.assert_close(hyps[0].attention.double(), mean_attention, atol=2e-5, rtol=0)


def test_beam_one_is_greedy_search_for_an_ensemble() -> None:
    """A length penalty sends ``decode`` through beam search; with one beam it must follow
    greedy search's tokens and log-probabilities, its score divided by lp."""
    ensemble = Ensemble([small_model(1), small_model(2, attention="concat")])
    greedy = decode(ensemble, TEXTS)
    beam = decode(ensemble, TEXTS, SearchOptions(beam=1, alpha=0.5))
    for g, b in zip(greedy, beam, strict=True):
        assert [h.tokens for h in b] == [h.tokens for h in g]
        for hg, hb in zip(g, b, strict=True):
            assert hb.log_probs == pytest.approx(hg.log_probs, abs=1e-6)
            lp = ((5 + len(hg.tokens)) / 6) ** 0.5
            assert hb.score == pytest.approx(hg.score / lp, abs=1e-5)


def test_an_ensembles_beam_search_ranks_its_nbest_by_the_recomputed_score() -> None:
    ensemble = Ensemble([small_model(5), small_model(6), small_model(7)])
    options = SearchOptions(beam=5, nbest=5, alpha=0.8, beta=0.3, combine="prob")
    for hyps in decode(ensemble, TEXTS[:3], options):
        assert len({tuple(h.tokens) for h in hyps}) == len(hyps) == 5
        scores = [h.score for h in hyps]
        assert scores == sorted(scores, reverse=True)
        for h in hyps:
            lp = ((5 + len(h.tokens)) / 6) ** 0.8
            coverage = h.attention.double().sum(0).clamp(max=1.0).log().sum()
            assert h.score == pytest.approx(sum(h.log_probs) / lp + 0.3 * float(coverage), abs=1e-4)


def reversed_source(model: Seq2Seq) -> Seq2Seq:
    """The same model with its source symbols listed in reverse (and the embedding rows
    moved with them): other ids, the same function of the text."""
    own = model.src_vocab
    vocab = Vocab(own.symbols[::-1], own.tokens)
    other = Seq2Seq(model.config, vocab, model.tgt_vocab).eval()
    state = model.state_dict()
    table = state["encoder.embedding.weight"]
    moved = table.clone()
    for symbol in vocab.symbols:
        moved[vocab.id(symbol)] = table[own.id(symbol)]
    state["encoder.embedding.weight"] = moved
    other.load_state_dict(state)
    return other


def test_members_may_number_the_source_symbols_differently() -> None:
    model = small_model(8)
    other = reversed_source(model)
    assert other.src_vocab.encode("abc") != model.src_vocab.encode("abc")
    assert_same(decode(other, TEXTS), decode(model, TEXTS), 1e-6)
    assert_same(decode(Ensemble([model, other]), TEXTS), decode(model, TEXTS), 1e-6)


def test_members_must_share_the_target_vocabulary() -> None:
    other = small_model(1, tgt=Vocab(list("0123456789")))
    with pytest.raises(ValueError, match=r"a and b: the target vocabularies differ \(15 char"):
        Ensemble([small_model(0), other], names=["a", "b"])
    reordered = small_model(1, tgt=Vocab(list("-0123456789")))
    with pytest.raises(ValueError, match="target vocabularies differ .* other symbols"):
        Ensemble([small_model(0), reordered])


def test_members_must_cut_the_source_the_same_way() -> None:
    words = small_model(1, src=Vocab(["abc", "de"], tokens="space"))
    with pytest.raises(ValueError, match="member 1 and member 2: the sources are cut"):
        Ensemble([small_model(0), words])


def test_bad_ensembles_are_refused_by_type_and_value() -> None:
    with pytest.raises(ValueError, match="at least one model, got none"):
        Ensemble([])
    with pytest.raises(TypeError, match=r"members\[1\]: expected a Seq2Seq, got str"):
        Ensemble([small_model(0), "runs/x"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="expected a sequence of Seq2Seq"):
        Ensemble(small_model(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="combine: expected one of logprob, prob, got 'max'"):
        SearchOptions(combine="max")


def test_fit_sources_holds_every_members_limit() -> None:
    short = small_model(0, max_src_len=4, attention="location")
    ensemble = Ensemble([small_model(1), short])
    with pytest.raises(ValueError, match="<input>:2: 6 symbols, above the maximum source length 4"):
        fit_sources(ensemble, ["abc", "abcdef"])
    with pytest.raises(ValueError, match="a location-score model reads at most 4 symbols, got 9"):
        fit_sources(ensemble, ["abc"], max_src_len=9)
    assert fit_sources(ensemble, ["abc", "abcdef"], truncate=True).sources == ["abc", "abcd"]


def save(model: Seq2Seq, folder: Path) -> Path:
    model.save_pretrained(folder)
    return folder


def test_load_a_list_of_folders_as_an_ensemble(tmp_path: Path) -> None:
    a, b = save(small_model(1), tmp_path / "a"), save(small_model(2), tmp_path / "b")
    both = luong.load([a, b])
    assert isinstance(both, Translator) and isinstance(both.model, Ensemble)
    assert [m.config for m in both.members] == [small_model(1).config] * 2
    expected = translate(Ensemble([small_model(1), small_model(2)]), TEXTS, SearchOptions(beam=3))
    assert both.translate(TEXTS, SearchOptions(beam=3)) == expected
    assert luong.load([a]).translate(TEXTS) == translate(small_model(1), TEXTS)
    assert isinstance(luong.load(a).model, Seq2Seq)  # one folder alone: the model itself
    with pytest.raises(TypeError, match="expected a model folder or a list of them"):
        Translator.from_pretrained(3)  # type: ignore[arg-type]


SEQUENCE = "directories: expected a sequence of model folders, got <class"


@pytest.mark.parametrize(
    ("folders", "error", "message"),
    [
        ("runs/a", TypeError, SEQUENCE + " 'str'>"),
        (Path("runs/a"), TypeError, SEQUENCE),
        ([], ValueError, "directories: expected at least one model folder, got none"),
        (["runs/a", 3], TypeError, "directories: expected folder names (str or path), got <class"),
    ],
)
def test_a_list_of_folders_is_checked_before_anything_loads(
    folders: object, error: type, message: str
) -> None:
    with pytest.raises(error) as info:
        Ensemble.from_pretrained(folders)  # type: ignore[arg-type]
    assert str(info.value).startswith(message)
    with pytest.raises(error) as info:
        average_checkpoints(folders, "out")  # type: ignore[arg-type]
    assert str(info.value).startswith(message.replace("directories", "folders"))


# -- averaging -----------------------------------------------------------------------------


def test_averaging_copies_of_one_model_gives_back_its_weights() -> None:
    model = small_model(3, cell="lstm", tie_embeddings=True, src=TGT)
    mean = average_models([model, small_model(3, cell="lstm", tie_embeddings=True, src=TGT)] * 2)
    for name, tensor in model.state_dict().items():
        assert torch.equal(mean.state_dict()[name], tensor), name
    assert mean.decoder.embedding.weight is mean.encoder.embedding.weight


def test_averaging_is_the_float64_mean_of_each_weight() -> None:
    models = [small_model(seed) for seed in (1, 2, 3)]
    mean = average_models(models)
    for name, tensor in mean.state_dict().items():
        expected = sum(m.state_dict()[name].double() for m in models) / 3
        assert torch.equal(tensor, expected.float()), name
    assert not mean.training


def test_averaging_refuses_models_of_other_architectures() -> None:
    with pytest.raises(ValueError, match=r"a and b: not one architecture \(dec_hidden 6 against 8"):
        average_models([small_model(0), small_model(0, dec_hidden=8)], ["a", "b"])
    with pytest.raises(ValueError, match="not one architecture .the target vocabulary"):
        average_models([small_model(0), small_model(0, tgt=Vocab(list("0123456789")))])
    with pytest.raises(ValueError, match="at least one model, got none"):
        average_models([])


def checkpointed_run(folder: Path, steps: list[int]) -> list[Path]:
    """A run folder holding checkpoints of small_model(step) at ``steps``."""
    paths = []
    for step in steps:
        paths.append(save(small_model(step), folder / "checkpoints" / f"step-{step:07d}"))
    (folder / "checkpoints" / "step-0000002.tmp").mkdir()  # an unfinished write: not one
    return paths


def test_run_checkpoints_are_the_newest_by_step(tmp_path: Path) -> None:
    paths = checkpointed_run(tmp_path / "run", [12, 3, 100])
    assert run_checkpoints(tmp_path / "run") == [paths[1], paths[0], paths[2]]
    assert run_checkpoints(tmp_path / "run", last=2) == [paths[0], paths[2]]
    with pytest.raises(ValueError, match="expected at least 4 checkpoints, got 3 .* --keep-check"):
        run_checkpoints(tmp_path / "run", last=4)
    with pytest.raises(ValueError, match="last: expected an int >= 1, got 0"):
        run_checkpoints(tmp_path / "run", last=0)
    with pytest.raises(ValueError, match="no checkpoints"):
        run_checkpoints(tmp_path)


def test_average_checkpoints_writes_a_loadable_model_folder(tmp_path: Path) -> None:
    paths = checkpointed_run(tmp_path / "run", [1, 2])
    out = average_checkpoints(paths, tmp_path / "avg")
    loaded = Seq2Seq.from_pretrained(out)
    expected = average_models([small_model(1), small_model(2)])
    for name, tensor in expected.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor), name
    record = json.loads((out / "averaged.json").read_text())
    assert record == {"averaged": [str(p) for p in paths], "count": 2}
    with pytest.raises(ValueError, match="the output is one of the folders being averaged"):
        average_checkpoints(paths, paths[0])


# -- the command line ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("members")
    src = Vocab(list("abcdefghij "))
    return [save(small_model(seed, src=src), root / f"m{seed}") for seed in (1, 2, 3)]


def test_cli_translate_with_several_folders_is_the_ensemble(folders: list[Path]) -> None:
    sources = "abc\n\njihg fe\ncafe\n"
    result = run_luong("translate", *map(str, folders), "--beam", "3", stdin=sources.encode())
    ensemble = Ensemble([Seq2Seq.from_pretrained(f) for f in folders])
    assert output_lines(result) == translate(ensemble, sources.splitlines(), SearchOptions(beam=3))
    prob = run_luong(
        "translate", *map(str, folders[:2]), "--combine", "prob", "--format", "jsonl",
        stdin=b"abc\n",
    )  # fmt: skip
    record = json.loads(output_lines(prob)[0])
    two = Ensemble([Seq2Seq.from_pretrained(f) for f in folders[:2]])
    hyp = decode(two, ["abc"], SearchOptions(combine="prob"))[0][0]
    assert record["hypotheses"][0]["score"] == round(hyp.score, 6)
    assert len(record["hypotheses"][0]["attention"][0]) == 4  # a, b, c and EOS


def test_cli_eval_with_several_folders(folders: list[Path], tmp_path: Path) -> None:
    data = tmp_path / "pairs.tsv"
    data.write_text("abc\t012\ncafe\t2\nhij\t9-9\n", encoding="utf-8")
    result = run_luong("eval", *map(str, folders), "--data", str(data), "--json", "--beam", "2")
    scores = json.loads(output_lines(result)[0])
    ensemble = Ensemble([Seq2Seq.from_pretrained(f) for f in folders])
    pairs = [("abc", "012"), ("cafe", "2"), ("hij", "9-9")]
    expected = luong.evaluate(ensemble, pairs, SearchOptions(beam=2), references=True)
    assert scores["wer"] == expected["wer"] and scores["per"] == expected["per"]
    assert scores["sources"] == 3


def test_cli_refuses_members_that_do_not_fit(folders: list[Path], tmp_path: Path) -> None:
    other = save(small_model(0, tgt=Vocab(list("xyz"))), tmp_path / "other")
    result = run_luong("translate", str(folders[0]), str(other), stdin=b"abc\n")
    assert_one_line_error(result, f"{folders[0]} and {other}: the target vocabularies differ")


def test_cli_average_a_runs_last_checkpoints(tmp_path: Path) -> None:
    paths = checkpointed_run(tmp_path / "run", [5, 6, 7])
    result = run_luong(
        "average", str(tmp_path / "run"), "--last", "2", "--out", str(tmp_path / "a")
    )
    assert output_lines(result) == [
        f"averaged 2 checkpoints (step-0000006, step-0000007) into {tmp_path / 'a'}"
    ]
    expected = average_models([small_model(6), small_model(7)])
    loaded = Seq2Seq.from_pretrained(tmp_path / "a")
    assert all(torch.equal(loaded.state_dict()[k], v) for k, v in expected.state_dict().items())
    listed = run_luong("average", str(paths[0]), str(paths[2]), "--out", str(tmp_path / "b"))
    assert output_lines(listed)[0].startswith("averaged 2 checkpoints (step-0000005, step-0000007)")


def test_cli_average_errors_are_one_line(tmp_path: Path) -> None:
    checkpointed_run(tmp_path / "run", [5])
    too_many = run_luong(
        "average", str(tmp_path / "run"), "--last", "3", "--out", str(tmp_path / "a")
    )
    assert_one_line_error(too_many, "expected at least 3 checkpoints, got 1")
    not_run = run_luong("average", str(tmp_path), "--last", "1", "--out", str(tmp_path / "a"))
    assert_one_line_error(not_run, "is not a run folder")
    odd = save(small_model(0, dec_hidden=8), tmp_path / "odd")
    mixed = run_luong(
        "average", str(tmp_path / "run" / "checkpoints" / "step-0000005"), str(odd),
        "--out", str(tmp_path / "a"),
    )  # fmt: skip
    assert_one_line_error(mixed, "not one architecture (dec_hidden 6 against 8)")
    assert not (tmp_path / "a").exists()


def test_decoder_state_with_coverage_keeps_everything_else() -> None:
    state = DecoderState(torch.ones(1, 2, 3), None, torch.zeros(2, 3), None, 4)
    tracked = state.with_coverage(torch.zeros(2, 5))
    assert tracked.coverage is not None and tracked.coverage.shape == (2, 5)
    assert tracked.step == 4 and tracked.hidden is state.hidden


@pytest.mark.parametrize(
    "search", [SearchOptions(prefix="12"), SearchOptions(prefix="12", beam=3, nbest=2)]
)
def test_an_ensemble_continues_a_prefix_as_its_model_does(search: SearchOptions) -> None:
    model = small_model(9, cell="lstm")
    ensemble = Ensemble([model, small_model(9, cell="lstm")])
    expected = decode(model, TEXTS, search)
    assert all(
        h.tokens[:2] == model.tgt_vocab.encode("12", eos=False) for hs in expected for h in hs
    )
    assert_same(decode(ensemble, TEXTS, search), expected, 1e-6)


def test_an_ensemble_samples_with_its_combined_distribution() -> None:
    ensemble = Ensemble([small_model(1), small_model(2)])
    drawing = SearchOptions(sample=True, nbest=4, seed=7, top_k=3)
    draws = decode(ensemble, TEXTS[:3], drawing)
    again = decode(ensemble, TEXTS[:3], drawing)
    assert [[h.tokens for h in hs] for hs in draws] == [[h.tokens for h in hs] for hs in again]
    for text, hyps in zip(TEXTS[:3], draws, strict=True):
        assert len(hyps) == 4
        for h in hyps:  # each draw's log-probabilities are the ensemble's own, teacher-forced
            forced = [member_log_probs(m, text, h.tokens)[0] for m in ensemble.member_list()]
            combined = torch.log_softmax(torch.stack(forced).mean(0), dim=-1)
            expected = combined.gather(1, torch.tensor(h.tokens)[:, None])[:, 0]
            assert h.log_probs == pytest.approx(expected.tolist(), abs=2e-5)
