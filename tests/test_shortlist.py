"""Lexical shortlists (``luong.data.shortlist``, ``luong.translation.lexicon``, ``luong shortlist``,
``SearchOptions.shortlist``): a shortlist of every piece is the full search bit for bit, a
smaller one is the reference beam search over its columns, the file is checked on load,
ensembles take the union of their members' candidates, constraints are still met."""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from helpers import SRC_SPACE, TGT, assert_one_line_error, luong, output_lines, small_model
from test_search_reference import SEARCHES, TEXTS, lively, reference
from torch import Tensor

from luong import Vocab
from luong.common.errors import LuongError
from luong.common.folder_files import SHORTLIST
from luong.common.tensor_files import read_tensors, save_tensors
from luong.config.search import OptionError, SearchOptions
from luong.data.shortlist import Shortlist, vocab_fingerprint
from luong.model.ensemble import Ensemble, shortlist_columns
from luong.model.quantize import quantize_folder
from luong.model.seq2seq import Seq2Seq
from luong.search import decode
from luong.search.prefix import prefix_ids
from luong.translation.lexicon import lexical_counts

GREEDY, BEAM = SearchOptions(), SearchOptions(beam=3, nbest=2, alpha=0.6)


def every_piece(model: Seq2Seq) -> Shortlist:
    """A shortlist whose every row holds every target piece (PAD and BOS, which no output
    writes and no shortlist file may list, are every batch's candidates anyway)."""
    size = len(model.tgt_vocab)
    targets = torch.arange(2, size).repeat(len(model.src_vocab), 1)
    return Shortlist(targets, torch.arange(0), size)


def narrow(model: Seq2Seq, seed: int, k: int = 2) -> Shortlist:
    """A random shortlist of ``k`` target pieces a source piece, drawn from the first half
    of the pieces, and one frequent piece."""
    g = torch.Generator().manual_seed(seed)
    size = len(model.tgt_vocab)
    targets = torch.randint(4, 4 + (size - 4) // 2, (len(model.src_vocab), k), generator=g)
    return Shortlist(targets, torch.tensor([4 + seed % (size - 4)]), size)


def with_shortlist(model: Seq2Seq, table: Shortlist | None) -> Seq2Seq:
    model = copy.deepcopy(model)
    model.shortlist = table
    return model


def assert_same(got: list, expected: list) -> None:
    """The same n-best lists bit for bit: tokens, scores, log-probabilities, attention."""
    for hyps, others in zip(got, expected, strict=True):
        assert len(hyps) == len(others)
        for h, o in zip(hyps, others, strict=True):
            assert (h.tokens, h.score, h.log_probs) == (o.tokens, o.score, o.log_probs)
            assert torch.equal(h.attention, o.attention)


@pytest.mark.parametrize("options", [GREEDY, BEAM, SearchOptions(beam=2, prefix="7")])
@pytest.mark.parametrize("int8", [False, True])
def test_a_shortlist_of_every_piece_decodes_as_the_full_vocabulary(
    options: SearchOptions, int8: bool
) -> None:
    model = small_model(3, SRC_SPACE, cell="lstm")
    if int8:
        model = model.to_int8()
    full = decode(model, TEXTS, options)
    listed = with_shortlist(model, every_piece(model))
    assert_same(decode(listed, TEXTS, options), full)  # by default: the folder's table
    assert_same(
        decode(listed, TEXTS, replace(options, shortlist=len(TGT) - 2)), full
    )  # all but PAD, BOS


def restricted(model: Seq2Seq, ids: Tensor) -> Seq2Seq:
    """``model`` whose output layer gives -inf to every id outside ``ids``: its
    distribution is the one a search over those columns reads."""
    model = with_shortlist(model, None)
    outside = torch.ones(len(model.tgt_vocab), dtype=torch.bool)
    outside[ids] = False
    with torch.no_grad():
        model.decoder.out.bias[outside] = -math.inf
    return model


@pytest.mark.parametrize("options", [SEARCHES[0], SEARCHES[2], SEARCHES[4]])
def test_beam_search_over_a_shortlist_equals_the_reference_over_its_columns(
    options: SearchOptions,
) -> None:
    model = with_shortlist(lively(7, attention="general"), narrow(lively(7), seed=1))
    extra = prefix_ids(model.tgt_vocab, options.prefix)
    columns = shortlist_columns(model, TEXTS, None, extra)
    assert columns is not None and 4 < len(columns.ids) < len(model.tgt_vocab)
    oracle = restricted(model, columns.ids)
    got = decode(model, TEXTS, options, batch_size=len(TEXTS))
    for text, hyps in zip(TEXTS, got, strict=True):
        expected = reference(oracle, text, options)
        assert [h.tokens for h in hyps] == [tokens for tokens, _ in expected], text
        assert [h.score for h in hyps] == pytest.approx([s for _, s in expected], abs=1e-6)
    full = decode(model, TEXTS, replace(options, shortlist=0), batch_size=len(TEXTS))
    assert [h[0].tokens for h in got] != [h[0].tokens for h in full]  # it restricts


def test_greedy_search_keeps_to_the_candidates() -> None:
    model = with_shortlist(lively(7), narrow(lively(7), seed=2))
    columns = shortlist_columns(model, TEXTS, None)
    assert columns is not None
    allowed = set(columns.ids.tolist())
    outputs = decode(model, TEXTS, batch_size=len(TEXTS))
    assert all(set(h[0].tokens) <= allowed for h in outputs)
    oracle = decode(restricted(model, columns.ids), TEXTS, batch_size=len(TEXTS))
    assert [h[0].tokens for h in outputs] == [h[0].tokens for h in oracle]


def test_candidates_are_the_rows_the_frequent_pieces_and_the_specials() -> None:
    targets = torch.tensor([[4, 5], [5, 6], [7, 2], [8, 9], [10, 4]])
    table = Shortlist(targets, torch.tensor([9]), 12)
    src = torch.tensor([[1, 3], [4, 0]])
    assert table.candidates([src], 2).tolist() == [0, 1, 2, 3, 4, 5, 6, 8, 9, 10]
    assert table.candidates([src], 1).tolist() == [0, 1, 2, 3, 4, 5, 8, 9, 10]
    assert table.candidates([src], 1, extra=[11]).tolist() == [0, 1, 2, 3, 4, 5, 8, 9, 10, 11]
    with pytest.raises(LuongError, match=r"shortlist: expected 1 to 2 .*got 3"):
        table.candidates([src], 3)


def test_the_table_keeps_each_source_pieces_most_linked_targets() -> None:
    counts = torch.zeros(5, 8)
    counts[4, 5], counts[4, 6], counts[4, 2] = 3, 7, 50  # EOS (2) is no place of a row
    counts[3, 7] = 1
    table = Shortlist.from_counts(counts, k=3, n=2)
    assert table.targets[4].tolist() == [6, 5, Vocab.eos_id]  # best first; unseen: EOS
    assert table.targets[3].tolist() == [7, Vocab.eos_id, Vocab.eos_id]
    assert table.frequent.tolist() == [6, 5]


def test_more_pieces_per_source_piece_than_the_vocabulary_holds_keep_them_all() -> None:
    """``luong shortlist --per-source 99999999999`` once tried to allocate 3 PB of EOS padding,
    and a table wider than V is refused when a model reads it: k above V keeps all V."""
    counts = torch.zeros(5, 8)
    counts[4, 5] = 1
    for k in (8, 9, 99_999_999_999):
        table = Shortlist.from_counts(counts, k=k, n=2)
        assert table.k == 8 and table.targets.shape == (5, 8)
        assert table.targets[4, 0] == 5


def test_the_attention_links_of_a_model_are_counted() -> None:
    model = small_model(0, SRC_SPACE)
    pairs = [("abc", "123"), ("j", "9"), ("", "7")]  # an empty side: not counted
    counts = lexical_counts(model, pairs, batch_size=2)
    assert counts.shape == (len(SRC_SPACE), len(TGT))
    assert counts.sum() == 4  # one link per target piece, EOS not counted
    for piece in "1239":
        assert counts[:, TGT.id(piece)].sum() == 1


def ensemble_of(tables: list[Shortlist | None]) -> Ensemble:
    members = [small_model(s, SRC_SPACE) for s in range(len(tables))]
    return Ensemble([with_shortlist(m, t) for m, t in zip(members, tables, strict=True)])


def test_an_ensemble_decodes_over_the_union_of_its_members_candidates() -> None:
    model = small_model(0, SRC_SPACE)
    first = narrow(model, seed=3)
    second = Shortlist(first.targets + 5, torch.tensor([14]), 15)  # the other half
    union = shortlist_columns(ensemble_of([first, second]), TEXTS, None)
    each = [shortlist_columns(with_shortlist(model, t), TEXTS, None) for t in (first, second)]
    assert union is not None and each[0] is not None and each[1] is not None
    expected = sorted(set(each[0].ids.tolist()) | set(each[1].ids.tolist()))
    assert union.ids.tolist() == expected
    assert len(expected) > max(len(each[0].ids), len(each[1].ids))
    ensemble = ensemble_of([first, second])
    outputs = decode(ensemble, TEXTS, BEAM)
    assert all(set(h.tokens) <= set(expected) for hyps in outputs for h in hyps)
    # A member without a shortlist may output any piece: the union is the full vocabulary.
    assert shortlist_columns(ensemble_of([first, None]), TEXTS, None) is None


def test_an_ensemble_of_every_piece_decodes_as_the_full_vocabulary() -> None:
    model = small_model(0, SRC_SPACE)
    plain = ensemble_of([None, None])
    listed = ensemble_of([every_piece(model), every_piece(model)])
    assert_same(decode(listed, TEXTS, BEAM), decode(plain, TEXTS, BEAM))


def test_constraints_are_met_with_pieces_outside_the_shortlist() -> None:
    model = with_shortlist(small_model(0, SRC_SPACE), narrow(small_model(0, SRC_SPACE), seed=5))
    columns = shortlist_columns(model, TEXTS, None)
    assert columns is not None
    outside = next(s for s in "0123456789" if TGT.id(s) not in columns.ids.tolist())
    outputs = decode(model, TEXTS, SearchOptions(beam=3), constraints=[[outside]] * len(TEXTS))
    assert all(TGT.id(outside) in hyps[0].tokens for hyps in outputs)


def test_a_shortlist_asked_of_a_model_without_one_is_refused() -> None:
    model = small_model(0, SRC_SPACE)
    with pytest.raises(OptionError, match=r"^shortlist: the model has no lexical shortlist"):
        decode(model, TEXTS, SearchOptions(shortlist=5))
    listed = with_shortlist(model, narrow(model, seed=0, k=2))
    with pytest.raises(OptionError, match=r"^shortlist: expected at most 2 .*got 3"):
        decode(listed, TEXTS, SearchOptions(shortlist=3))
    with pytest.raises(OptionError, match=r"^shortlist: sampling draws from the whole"):
        SearchOptions(sample=True, shortlist=5)
    assert decode(listed, TEXTS, SearchOptions(sample=True, seed=1))  # the full vocabulary


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random model's folder and a TSV of pairs in its vocabularies."""
    path = tmp_path_factory.mktemp("shortlist") / "model"
    small_model(0, SRC_SPACE).save_pretrained(path)
    (path.parent / "train.tsv").write_text("abc\t123\nj\t9\nhij a\t780\n", encoding="utf-8")
    return path


def test_luong_shortlist_writes_the_table_that_decoding_reads(folder: Path, tmp_path: Path) -> None:
    train = folder.parent / "train.tsv"
    result = luong("shortlist", str(folder), "--train", str(train), "--per-source", "3")
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode() == (
        f"wrote {folder / SHORTLIST}: 3 target pieces per source piece and the 7 most "
        f"frequent, from 3 pairs of {train}\n"
    )
    model = Seq2Seq.from_pretrained(folder)
    assert model.shortlist is not None and model.shortlist.targets.shape == (len(SRC_SPACE), 3)
    listed = output_lines(luong("translate", str(folder), "--beam", "2", stdin=b"abc\nhij\n"))
    full = output_lines(luong("translate", str(folder), "--beam", "2", "--shortlist", "0",
                              stdin=b"abc\nhij\n"))  # fmt: skip
    assert len(listed) == len(full) == 2
    # luong quantize carries it into the int8 folder.
    quantize_folder(folder, tmp_path / "int8")
    assert Seq2Seq.from_pretrained(tmp_path / "int8").shortlist is not None


def tamper(folder: Path, target: Path, change: str) -> None:
    """A copy of ``folder`` at ``target`` whose shortlist file is changed as ``change`` says."""
    model = Seq2Seq.from_pretrained(folder, shortlist=False)
    model.save_pretrained(target)
    table = narrow(model, seed=0)
    table.save(target, model.src_vocab, model.tgt_vocab)
    path = target / SHORTLIST
    tensors = read_tensors(path)
    metadata = {
        "format": "luong-shortlist",
        "src_vocab": vocab_fingerprint(model.src_vocab),
        "tgt_vocab": vocab_fingerprint(model.tgt_vocab),
    }
    if change == "garbage":
        path.write_bytes(b"not a safetensors file")
        return
    if change == "format":
        metadata["format"] = "other"
    elif change == "vocab":
        metadata["tgt_vocab"] = vocab_fingerprint(Vocab(list("xyz")))
    elif change == "range":
        tensors["targets"][0, 0] = len(model.tgt_vocab)
    elif change == "shape":
        tensors["targets"] = tensors["targets"][:-1]
    elif change == "missing":
        del tensors["frequent"]
    save_tensors(path, tensors, metadata)


TAMPERED = {
    "garbage": "not a readable safetensors file",
    "format": "not a shortlist of this model (format 'other', expected 'luong-shortlist')",
    "vocab": "not a shortlist of this model (counted for another tgt vocabulary than the folder's)",
    "range": "not a shortlist of this model (targets: ids out of [0, 15), got 15)",
    "shape": "not a shortlist of this model (targets: shape (14, 2), expected [15, K >= 1]",
    "missing": "not a shortlist of this model (tensors targets, expected frequent and targets)",
}


@pytest.mark.parametrize("change", list(TAMPERED))
def test_a_tampered_shortlist_file_is_one_clear_error(
    folder: Path, tmp_path: Path, change: str
) -> None:
    target = tmp_path / "model"
    tamper(folder, target, change)
    with pytest.raises(LuongError) as error:
        Seq2Seq.from_pretrained(target)
    assert str(error.value).startswith(f"{target / SHORTLIST}: {TAMPERED[change]}")
    result = luong("translate", str(target), stdin=b"abc\n")
    assert_one_line_error(result, str(target / SHORTLIST), TAMPERED[change])


def test_luong_shortlist_refuses_bad_flags(folder: Path, tmp_path: Path) -> None:
    assert_one_line_error(luong("shortlist", str(folder), "--per-source", "0"), "--per-source")
    assert_one_line_error(
        luong("shortlist", str(folder)), "expected --train FILE.tsv", "config.toml"
    )
    missing = tmp_path / "no.tsv"
    assert_one_line_error(luong("shortlist", str(folder), "--train", str(missing)), "no.tsv")


def test_decoding_runs_no_greedy_search_for_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The greedy bound's greedy search costs more than the beams it drops (docs/performance.md,
    "Lexical shortlists"): decoding skips it, with the same outputs."""
    model, options = lively(7), SearchOptions(beam=3, alpha=0.6)  # nbest 1: the bound's case
    expected = decode(model, TEXTS, options)

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("greedy_floor ran")

    monkeypatch.setattr("luong.search.beam.greedy_floor", refused)
    assert_same(decode(model, TEXTS, options), expected)


def test_luong_shortlist_skips_bad_lines_when_told_as_its_error_advises(
    folder: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    Seq2Seq.from_pretrained(folder, shortlist=False).save_pretrained(run)
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("abc\t123\nno tab here\nj\t9\n", encoding="utf-8")
    refused = luong("shortlist", str(run), "--train", str(pairs))
    assert refused.returncode == 1
    assert refused.stderr.decode().endswith("(--skip-bad-lines skips such lines)\n")
    done = luong("shortlist", str(run), "--train", str(pairs), "--skip-bad-lines")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr.decode() == f"luong: skipped 1 bad line in {pairs}\n"
    assert f"from 2 pairs of {pairs}" in done.stdout.decode()


def test_luong_shortlist_reads_the_runs_own_training_data(folder: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    Seq2Seq.from_pretrained(folder, shortlist=False).save_pretrained(run)
    (tmp_path / "pairs.tsv").write_text("abc\t123\nj\t9\n", encoding="utf-8")
    toml = 'task = "tsv"\n\n[data]\ntrain = "../pairs.tsv"\ndev = "../pairs.tsv"\n'
    (run / "config.toml").write_text(toml, encoding="utf-8")
    result = luong("shortlist", str(run), "--frequent", "2")
    assert result.returncode == 0, result.stderr.decode()
    # The default --per-source (100) keeps all 15 of this vocabulary: a table of 100 would be
    # refused when the model is read (it was written so until 2026-12-07).
    assert result.stdout.decode() == (
        f"wrote {run / SHORTLIST}: 15 target pieces per source piece and the 2 most frequent, "
        f"from 2 pairs of the training split of {run / 'config.toml'}\n"
    )
    assert Seq2Seq.from_pretrained(run).shortlist is not None
