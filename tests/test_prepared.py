"""Prepared corpora (``luong prepare``, ``luong.data.prepared``): the same batches and weights as
the text path, the same bytes for any number of workers, compressed inputs, the ids' width,
written all or nothing, damaged corpora refused in one line, a sentencepiece model of the
user's, and resuming."""

from __future__ import annotations

import gzip
import io
import itertools
import json
import lzma
import operator
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
import sentencepiece as spm
import torch
from helpers import TINY_MODEL_FLAGS, toy_pairs

import luong.data.prepare
import luong.data.prepared
import luong.tasks.tsv
from luong import Seq2Seq, Seq2SeqConfig, TrainConfig, Vocab
from luong.cli import main
from luong.config.vocab import VocabConfig
from luong.data.batching import ParallelData, token_batches
from luong.data.prepare import (
    BAD_LINE,
    SOURCE_TOO_LONG,
    TARGET_TOO_LONG,
    build_vocabularies,
    prepare_corpus,
)
from luong.data.prepared import PreparedData
from luong.tasks.data import TaskData
from luong.tasks.tsv import read_split
from luong.training.checkpoint import find_latest
from luong.training.trainer import Trainer

MODEL = {"emb_dim": 8, "enc_hidden": 8, "enc_layers": 1, "dec_hidden": 16, "dropout": 0.1}


def write_tsv(path: Path, pairs: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return path


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[list[tuple[str, str]], Path, Path]:
    """200 toy pairs as a TSV file, prepared in shards of 64 pairs (four shards)."""
    pairs = toy_pairs(200, seed=1)
    tsv = write_tsv(tmp_path / "train.tsv", pairs)
    prepare_corpus(tsv, tmp_path / "prep", shard_pairs=64)
    return pairs, tsv, tmp_path / "prep"


def test_the_prepared_corpus_gives_the_text_paths_batches_and_weights_bit_for_bit(
    tmp_path: Path, corpus: tuple[list[tuple[str, str]], Path, Path]
) -> None:
    pairs, _, folder = corpus
    data = PreparedData(folder, verify=True)
    src_vocab, tgt_vocab = build_vocabularies(TaskData(pairs, [], []), VocabConfig())
    assert (data.src_vocab, data.tgt_vocab) == (src_vocab, tgt_vocab)
    text = ParallelData(pairs, src_vocab, tgt_vocab)
    assert len(data) == len(text) == 200
    assert data.src_lengths.tolist() == text.src_lengths.tolist()
    assert data.tgt_lengths.tolist() == text.tgt_lengths.tolist()
    batches = token_batches(
        data.src_lengths.tolist(), data.tgt_lengths.tolist(), 120, random.Random(3)
    )
    assert len({s for b in batches for s in b}) == 200  # the batches cross the four shards
    for indices in batches:
        mine, theirs = data.batch(indices), text.batch(indices)
        for a, b in zip(
            (mine.src, mine.src_lengths, mine.tgt),
            (theirs.src, theirs.src_lengths, theirs.tgt),
            strict=True,
        ):
            assert a.dtype == b.dtype and torch.equal(a, b)
    config = TrainConfig(
        epochs=2, batch_tokens=150, lr=5e-3, warmup_steps=0, progress=False, seed=4
    )
    dev = pairs[:5]
    weights = []
    for train in (pairs, data):
        torch.manual_seed(4)
        model = Seq2Seq(Seq2SeqConfig(**MODEL), src_vocab, tgt_vocab, seed=4)
        trainer = Trainer(model, train, dev, config, log=lambda message: None)
        trainer.run()
        weights.append(model.state_dict())
    assert weights[0].keys() == weights[1].keys()
    for key in weights[0]:
        assert torch.equal(weights[0][key], weights[1][key]), key


def test_one_and_two_workers_write_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(luong.data.prepare, "CHUNK", 7)  # many chunks, dealt to both workers
    tsv = write_tsv(tmp_path / "train.tsv", toy_pairs(150, seed=2))
    vocab = VocabConfig("bpe", 300, joint_vocab=True)
    for workers in (1, 2):
        prepare_corpus(tsv, tmp_path / f"w{workers}", vocab=vocab, workers=workers, shard_pairs=40)
    one, two = folder_bytes(tmp_path / "w1"), folder_bytes(tmp_path / "w2")
    assert sorted(one) == sorted(two) and "00003.src.ids" in one
    assert one == two
    # Again, the same bytes.
    prepare_corpus(tsv, tmp_path / "w1", vocab=vocab, workers=2, shard_pairs=40)
    assert folder_bytes(tmp_path / "w1") == one


def test_prepare_reads_the_corpus_a_chunk_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The segmenting pass reads CHUNK lines between two chunks, never the whole file ahead;
    # the whole-file readers are not used at all.
    pairs = toy_pairs(50, seed=6)
    tsv = write_tsv(tmp_path / "train.tsv", pairs)
    prepare_corpus(tsv, tmp_path / "expected", vocab=VocabConfig(joint_vocab=True))
    monkeypatch.setattr(luong.data.prepare, "CHUNK", 7)
    parsed = [0]
    parse_line = luong.tasks.tsv._parse_line

    def counted(line: bytes) -> object:
        parsed[0] += 1
        return parse_line(line)

    at_chunk: list[int] = []
    encode_chunk = luong.data.prepare._encode_chunk

    def encode(job: tuple[str, str, list[tuple[str, str]]]) -> tuple[object, ...]:
        at_chunk.append(parsed[0])
        return encode_chunk(job)

    def whole_file(*args: object, **kwargs: object) -> None:
        raise AssertionError("the whole file read at once")

    monkeypatch.setattr(luong.tasks.tsv, "_parse_line", counted)
    monkeypatch.setattr(luong.data.prepare, "_encode_chunk", encode)
    for name in ("read_split", "read_pairs", "read_parallel", "_parse_lines"):
        monkeypatch.setattr(luong.tasks.tsv, name, whole_file)
    monkeypatch.setattr(luong.data.prepared, "read_split", whole_file)
    manifest = prepare_corpus(tsv, tmp_path / "p", vocab=VocabConfig(joint_vocab=True))
    assert manifest["pairs"] == manifest["read"] == 50
    assert [b - a for a, b in itertools.pairwise(at_chunk)] == [7] * 6 + [1]
    assert parsed[0] == at_chunk[-1]  # nothing read after the last chunk
    assert folder_bytes(tmp_path / "p") == folder_bytes(tmp_path / "expected")


def test_the_pool_reads_its_jobs_as_it_gives_results() -> None:
    taken = [0]

    def jobs() -> Iterator[int]:
        for i in range(1000):
            taken[0] += 1
            yield i

    with luong.data.prepare._pool(2) as segment:
        results = segment(operator.neg, jobs())
        assert next(results) == 0 and taken[0] == 4  # two a worker in flight
        assert next(results) == -1 and taken[0] == 5
        assert list(results) == [-i for i in range(2, 1000)]


def test_two_workers_end_quietly(tmp_path: Path) -> None:
    # The workers once inherited the command line's SIGTERM handler, and each printed a
    # traceback when the pool was ended.
    tsv = write_tsv(tmp_path / "train.tsv", toy_pairs(100, seed=8))
    command = [sys.executable, "-m", "luong", "prepare", "--train", str(tsv)]
    for workers in ("2", "3"):
        result = subprocess.run(
            [*command, "--out", str(tmp_path / workers), "--workers", workers],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        assert result.stderr.splitlines() == [
            f"luong: learned the vocabularies from {tsv}",
            f"luong: read 100 pairs from {tsv}",
        ]


@pytest.mark.parametrize(
    ("vocab", "tokens"),
    [
        (VocabConfig(), "char"),
        (VocabConfig(vocab_size=9, min_count=2), "space"),
        (VocabConfig(joint_vocab=True), "space"),
        (VocabConfig("bpe", 280), "char"),
        (VocabConfig("unigram", 300, joint_vocab=True), "char"),
    ],
)
def test_prepare_learns_build_vocabularies_own_vocabularies(
    tmp_path: Path, vocab: VocabConfig, tokens: Literal["char", "space"]
) -> None:
    pairs = [(" ".join(s), f"{t} {t[::-1]}") for s, t in toy_pairs(120, seed=7)]
    src, tgt = tmp_path / "src.gz", tmp_path / "tgt.gz"
    src.write_bytes(gzip.compress("".join(f"{s}\n" for s, _ in pairs).encode() + b"\n"))
    tgt.write_bytes(gzip.compress("".join(f"{t}\n" for _, t in pairs).encode() + b"x\n"))
    train = [str(src), str(tgt)]
    manifest = prepare_corpus(
        train, tmp_path / "p", src_tokens=tokens, tgt_tokens=tokens, vocab=vocab,
        skip_bad_lines=True, workers=2,
    )  # fmt: skip
    assert (manifest["read"], manifest["dropped"][BAD_LINE]) == (121, 1)
    read = read_split(train, skip_bad_lines=True)
    data = TaskData(read.pairs, [], [], src_tokens=tokens, tgt_tokens=tokens)
    src_vocab, tgt_vocab = build_vocabularies(data, vocab)
    (tmp_path / "text").mkdir()
    src_vocab.save(tmp_path / "text" / "src_vocab.json")
    tgt_vocab.save(tmp_path / "text" / "tgt_vocab.json")
    prepared = {k: v for k, v in folder_bytes(tmp_path / "p").items() if "vocab" in k}
    assert prepared == folder_bytes(tmp_path / "text")
    assert len(prepared) == (4 if vocab.subword != "none" else 2)


def test_a_bad_line_is_one_line_before_anything_is_written_whatever_the_vocabulary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs = [(f"the cat sat on mat {i % 7}", f"die katze sass {i % 5}") for i in range(60)]
    tsv = write_tsv(tmp_path / "train.tsv", pairs)
    tsv.write_text(tsv.read_text() + "no tab here\n")
    model = train_spm([s for s, _ in pairs], pad_id=0, bos_id=1, eos_id=2, unk_id=3)
    (tmp_path / "my.model").write_bytes(model)
    expected = (
        f"luong: error: {tsv}:61: expected exactly one tab between source and target, found "
        "no tab (--skip-bad-lines skips such lines)"
    )
    for flags in (
        [],
        ["--subword", "unigram", "--vocab-size", "290"],  # read inside sentencepiece
        ["--subword", "bpe", "--vocab-size", "290", "--joint-vocab"],
        ["--spm-model", str(tmp_path / "my.model")],  # read while segmenting
    ):
        status, _, err = run_main(
            capsys, "prepare", "--train", str(tsv), "--out", str(tmp_path / "p"),
            "--workers", "2", *flags,
        )  # fmt: skip
        assert status == 1 and one_error_line(err) == expected, flags
        assert sorted(path.name for path in tmp_path.iterdir()) == [
            "my.model", "train.tsv"
        ], flags  # fmt: skip


def test_gz_and_xz_inputs_give_the_same_ids(tmp_path: Path) -> None:
    pairs = toy_pairs(50, seed=3)
    raw = write_tsv(tmp_path / "train.tsv", pairs).read_bytes()
    (tmp_path / "train.tsv.gz").write_bytes(gzip.compress(raw, mtime=0))
    (tmp_path / "train.tsv.xz").write_bytes(lzma.compress(raw))
    (tmp_path / "src.xz").write_bytes(lzma.compress("".join(s + "\n" for s, _ in pairs).encode()))
    (tmp_path / "tgt.gz").write_bytes(gzip.compress("".join(t + "\n" for _, t in pairs).encode()))
    prepare_corpus(tmp_path / "train.tsv", tmp_path / "plain")
    expected = {k: v for k, v in folder_bytes(tmp_path / "plain").items() if k != "manifest.json"}
    for name, train in [
        ("gz", tmp_path / "train.tsv.gz"),
        ("xz", tmp_path / "train.tsv.xz"),
        ("parallel", [tmp_path / "src.xz", tmp_path / "tgt.gz"]),
    ]:
        manifest = prepare_corpus(train, tmp_path / name)  # type: ignore[arg-type]
        files = folder_bytes(tmp_path / name)
        assert {k: v for k, v in files.items() if k != "manifest.json"} == expected, name
        assert manifest["pairs"] == 50
    assert [i["name"] for i in manifest["inputs"]] == ["src.xz", "tgt.gz"]


def test_a_cut_gz_file_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = gzip.compress(b"".join(b"abc\tcba\n" for _ in range(500)))
    (tmp_path / "train.tsv.gz").write_bytes(raw[: len(raw) // 2])
    status, _, err = run_main(
        capsys, "prepare", "--train", str(tmp_path / "train.tsv.gz"), "--out", str(tmp_path / "p")
    )
    assert status == 1
    assert one_error_line(err).startswith(
        f"luong: error: {tmp_path}/train.tsv.gz: not a complete .gz file ("
    )
    assert not (tmp_path / "p").exists()


def test_uint16_or_uint32_by_the_vocabularys_size(tmp_path: Path) -> None:
    small = write_tsv(tmp_path / "small.tsv", toy_pairs(20))
    assert prepare_corpus(small, tmp_path / "small")["dtype"] == "uint16"
    # 70,000 distinct words: ids above 65,535, which uint16 would wrap.
    words = [f"w{i}" for i in range(70_000)]
    pairs = [(" ".join(words[i : i + 100]), "x y") for i in range(0, 70_000, 100)]
    big = write_tsv(tmp_path / "big.tsv", pairs)
    manifest = prepare_corpus(big, tmp_path / "big", src_tokens="space", tgt_tokens="space")
    assert manifest["dtype"] == "uint32" and manifest["vocab_sizes"]["src"] == 70_004
    data = PreparedData(tmp_path / "big")
    batch = data.batch([699, 0])
    assert batch.src[0, : int(batch.src_lengths[0])].tolist() == data.src_vocab.encode(
        pairs[699][0]
    )
    assert int(batch.src.max()) > 65_535


def test_the_length_limits_drop_pairs_and_count_why(tmp_path: Path) -> None:
    pairs = [("abc", "12"), ("abcdefgh", "1"), ("a", "123456789"), ("ab", "1")]
    tsv = tmp_path / "train.tsv"
    tsv.write_text("".join(f"{s}\t{t}\n" for s, t in pairs) + "no tab here\n")
    manifest = prepare_corpus(
        tsv, tmp_path / "p", max_src_len=5, max_tgt_len=4, skip_bad_lines=True
    )
    assert manifest["pairs"] == 2 and manifest["read"] == 5
    assert manifest["dropped"] == {BAD_LINE: 1, SOURCE_TOO_LONG: 1, TARGET_TOO_LONG: 1}
    data = PreparedData(tmp_path / "p")
    assert data.src_lengths.tolist() == [4, 3] and data.longest() == (3, 2)


def test_a_killed_prepare_leaves_no_corpus_that_training_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tsv = write_tsv(tmp_path / "train.tsv", toy_pairs(60_000, seed=5))
    out = tmp_path / "prep"
    child = subprocess.Popen(
        [sys.executable, "-m", "luong", "prepare", "--train", str(tsv), "--out", str(out),
         "--shard-pairs", "500"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            # The folder being filled (its lock file, .partial-prep.*.lock, lies beside it).
            partial = [path for path in tmp_path.glob(".partial-prep.*") if path.is_dir()]
            if partial and (partial[0] / "00002.src.ids").exists():
                break  # shards are being written
            time.sleep(0.01)
        assert child.poll() is None, "prepare ended before it could be killed"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert not out.exists() and list(tmp_path.glob(".partial-prep.*"))
    write_tsv(tmp_path / "dev.tsv", toy_pairs(4))
    status, _, err = run_main(
        capsys, "train", "--data", str(out), "--dev", str(tmp_path / "dev.tsv"),
        "--out", str(tmp_path / "run"), *TINY_MODEL_FLAGS,
    )  # fmt: skip
    assert status == 1
    assert one_error_line(err) == (
        f"luong: error: {out}: no such prepared corpus (luong prepare writes one)"
    )


@pytest.mark.parametrize("damage", ["truncated shard", "edited manifest", "other vocabulary"])
def test_a_damaged_corpus_is_refused_in_one_line_naming_the_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    corpus: tuple[list[tuple[str, str]], Path, Path],
    damage: str,
) -> None:
    _, _, folder = corpus
    if damage == "truncated shard":
        shard = folder / "00001.tgt.ids"
        size = shard.stat().st_size
        os.truncate(shard, size - 2)
        expected = (
            f"{shard}: {size - 2} bytes, expected {size} (manifest.json); the corpus is "
            "damaged: prepare it again"
        )
    elif damage == "edited manifest":
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["shards"][0]["pairs"] -= 1
        manifest["pairs"] -= 1
        (folder / "manifest.json").write_text(json.dumps(manifest))
        expected = (
            f"{folder}/00000.lengths: 512 bytes, but manifest.json says the shard holds 63 "
            "pairs (504 bytes)"
        )
    else:
        other = write_tsv(tmp_path / "other.tsv", [("xyz", "987")])
        prepare_corpus(other, tmp_path / "other")
        shutil.copy(tmp_path / "other" / "src_vocab.json", folder / "src_vocab.json")
        expected = (
            f"{folder}/src_vocab.json: not the vocabulary this corpus was prepared with (its "
            "SHA-256 differs from manifest.json's); prepare the corpus again"
        )
    write_tsv(tmp_path / "dev.tsv", toy_pairs(4))
    status, _, err = run_main(
        capsys, "train", "--data", str(folder), "--dev", str(tmp_path / "dev.tsv"),
        "--out", str(tmp_path / "run"), *TINY_MODEL_FLAGS,
    )  # fmt: skip
    assert status == 1
    assert one_error_line(err) == f"luong: error: {expected}"
    assert not (tmp_path / "run").exists()


def test_a_changed_shard_of_the_same_size_is_caught_by_verify(
    corpus: tuple[list[tuple[str, str]], Path, Path],
) -> None:
    _, _, folder = corpus
    shard = folder / "00002.src.ids"
    raw = bytearray(shard.read_bytes())
    raw[0] ^= 1
    shard.write_bytes(bytes(raw))
    PreparedData(folder)  # sizes only: fine
    with pytest.raises(ValueError, match=r"00002\.src\.ids: its SHA-256 differs from manifest"):
        PreparedData(folder, verify=True)


def train_spm(text: list[str], **options: object) -> bytes:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(text), model_writer=model, vocab_size=40, model_type="bpe",
        minloglevel=2, num_threads=1, **options,
    )  # fmt: skip
    return model.getvalue()


def test_a_sentencepiece_model_from_elsewhere_keeps_its_pieces_and_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs = [(f"the cat sat on mat {i % 7}", f"die katze sass {i % 5}") for i in range(60)]
    text = [s for s, _ in pairs] + [t for _, t in pairs]
    model = train_spm(text, pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="<pad>")
    (tmp_path / "my.model").write_bytes(model)
    tsv = write_tsv(tmp_path / "train.tsv", pairs)
    status, out, _ = run_main(
        capsys, "prepare", "--train", str(tsv), "--out", str(tmp_path / "p"),
        "--spm-model", str(tmp_path / "my.model"), "--subword", "bpe",
    )  # fmt: skip
    assert status == 0 and out.startswith(f"60 pairs written to {tmp_path}/p in 1 shard")
    data = PreparedData(tmp_path / "p")
    processor = spm.SentencePieceProcessor(model_proto=model)
    assert data.src_vocab is data.tgt_vocab
    assert [data.src_vocab.symbol(i) for i in range(4, 40)] == [
        processor.id_to_piece(i) for i in range(4, 40)
    ]
    batch = data.batch([0, 13])
    for row, i in enumerate([0, 13]):
        source, target = pairs[i]
        (n,) = batch.src_lengths[row : row + 1].tolist()
        assert batch.src[row, :n].tolist() == [*processor.encode(source), 2]
        assert [t for t in batch.tgt[row].tolist() if t] == [1, *processor.encode(target), 2]
    # sentencepiece's own defaults (<unk> 0, no <pad>): refused, saying how to train one.
    (tmp_path / "default.model").write_bytes(train_spm(text))
    status, _, err = run_main(
        capsys, "prepare", "--train", str(tsv), "--out", str(tmp_path / "q"),
        "--spm-model", str(tmp_path / "default.model"),
    )  # fmt: skip
    assert status == 1
    assert one_error_line(err).startswith(
        f"luong: error: {tmp_path}/default.model: model: expected the specials ['<pad>', "
        "'<s>', '</s>', '<unk>'] at ids 0-3, got ['<unk>', '<s>', '</s>', "
    )
    assert err.rstrip().endswith("--pad_piece=<pad> (sentencepiece's spm_train)")


def test_a_prepared_run_resumes_mid_epoch_bit_for_bit(
    tmp_path: Path, corpus: tuple[list[tuple[str, str]], Path, Path]
) -> None:
    pairs, _, folder = corpus
    config = TrainConfig(
        epochs=2, batch_size=32, lr=5e-3, warmup_steps=0, progress=False, seed=2,
        checkpoint_every=3, keep_checkpoints=10, eval_every=100,
    )  # fmt: skip

    def run(out: Path) -> Trainer:
        data = PreparedData(folder)
        torch.manual_seed(2)
        model = Seq2Seq(Seq2SeqConfig(**MODEL), data.src_vocab, data.tgt_vocab, seed=2)
        trainer = Trainer(model, data, pairs[:5], config, out, log=lambda message: None)
        trainer.resume()
        trainer.run()
        return trainer

    reference = run(tmp_path / "a")
    assert reference.steps_per_epoch == 7  # the checkpoint at step 3 is mid-epoch
    name = "step-0000003"
    shutil.copytree(tmp_path / "a" / "checkpoints" / name, tmp_path / "b" / "checkpoints" / name)
    (tmp_path / "b" / "checkpoints" / "latest").write_text(name + "\n")
    resumed = run(tmp_path / "b")
    assert resumed.progress.step == reference.progress.step == 14
    assert find_latest(tmp_path / "b" / "checkpoints") is not None
    expected = reference.model.state_dict()
    for key, value in resumed.model.state_dict().items():
        assert torch.equal(value, expected[key]), key


def test_a_resume_from_a_changed_prepared_corpus_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    corpus: tuple[list[tuple[str, str]], Path, Path],
) -> None:
    pairs, tsv, folder = corpus
    write_tsv(tmp_path / "dev.tsv", pairs[:4])
    args = ["train", "--data", str(folder), "--dev", str(tmp_path / "dev.tsv")]
    args += ["--out", str(tmp_path / "run"), *TINY_MODEL_FLAGS]
    status, out, err = run_main(capsys, *args)
    assert status == 0, err
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["train_pairs"] == 200 and metrics["data"]["prepared"]["pairs"] == 200
    # The same symbols, other pairs: the first ten targets no longer reversed.
    write_tsv(
        tsv, [(s, s.translate(str.maketrans("abc", "012"))) for s, _ in pairs[:10]] + pairs[10:]
    )
    prepare_corpus(tsv, folder, shard_pairs=64)
    status, _, err = run_main(capsys, *args)
    assert status == 1
    assert one_error_line(err) == (
        f"luong: error: {tmp_path}/run was trained on other data: train ({folder}) changed "
        "since the run began; choose another --out to start a new run, or restore the data to "
        "resume it"
    )


def test_a_model_with_other_vocabularies_is_refused(
    corpus: tuple[list[tuple[str, str]], Path, Path],
) -> None:
    _, _, folder = corpus
    data = PreparedData(folder)
    model = Seq2Seq(Seq2SeqConfig(**MODEL), Vocab(list("abc")), data.tgt_vocab)
    with pytest.raises(ValueError, match="prepared with another source vocabulary"):
        Trainer(model, data, [("a", "1")], TrainConfig(progress=False))


# Under torchrun: each rank trains on its share of the batches of a prepared corpus and writes
# the indices it read, per epoch.
RANK_WORKER = """
import json, os, sys
from luong import Seq2Seq, Seq2SeqConfig, TrainConfig
from luong.training.distributed import setup
from luong.data.prepared import PreparedData
from luong.training.trainer import Trainer

class Recorded(PreparedData):
    def batch(self, indices):
        seen.setdefault(trainer.progress.epoch, []).extend(int(i) for i in indices)
        return super().batch(indices)

seen = {}
world = setup("cpu")
data = Recorded(sys.argv[1])
model = Seq2Seq(Seq2SeqConfig(emb_dim=8, enc_hidden=8, enc_layers=1, dec_hidden=16),
                data.src_vocab, data.tgt_vocab, seed=0)
config = TrainConfig(epochs=2, batch_size=20, warmup_steps=0, progress=False, device="cpu")
trainer = Trainer(model, data, [("abc", "210")], config, world=world)
trainer.run()
world.close()
with open(os.path.join(sys.argv[2], f"rank{world.rank}.json"), "w") as file:
    json.dump(seen, file)
"""


def test_under_torchrun_each_pair_is_read_once_an_epoch_across_the_ranks(
    tmp_path: Path, corpus: tuple[list[tuple[str, str]], Path, Path]
) -> None:
    _, _, folder = corpus
    script = tmp_path / "worker.py"
    script.write_text(RANK_WORKER)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    result = subprocess.run(
        [*command, "--nproc-per-node", "2", str(script), str(folder), str(tmp_path)],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for epoch in ("1", "2"):
        first, second = ranks[0][epoch], ranks[1][epoch]
        assert len(first) == len(second) == 100  # 10 batches of 20: 5 a rank
        assert sorted(first + second) == list(range(200))
    assert ranks[0]["1"] != ranks[0]["2"]  # another order each epoch


def mapped_resident_kb(folder: Path) -> int:
    """How much of ``folder``'s memory-mapped files is resident in this process (its Rss in
    Linux's /proc/self/smaps), in kB."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"[0-9a-f]+-[0-9a-f]+ ", line):
            inside = line.endswith(tuple(f"/{path.name}" for path in folder.iterdir()))
        elif inside and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").is_file(), reason="reads Linux's smaps")
def test_batches_leave_no_page_of_the_corpus_in_the_trainers_memory(
    corpus: tuple[list[tuple[str, str]], Path, Path],
) -> None:
    # Every page a batch touched is handed back (MADV_DONTNEED): an epoch over a corpus larger
    # than memory does not leave the corpus counted in the trainer's RSS.
    pairs, _, folder = corpus
    data = PreparedData(folder)
    whole = data.batch(list(range(len(data))))
    assert whole.src.shape[0] == len(pairs) == 200
    assert mapped_resident_kb(folder) == 0
    # The pages come back from the page cache when read again: the same batch.
    again = data.batch(list(range(len(data))))
    assert torch.equal(again.src, whole.src) and torch.equal(again.tgt, whole.tgt)
    assert mapped_resident_kb(folder) == 0
