"""The writer of prepared corpora (``luong prepare``): training pairs segmented once into
token ids on disk, which ``luong.data.prepared.PreparedData`` reads back through memory maps.

``prepare_corpus`` (``luong prepare``) reads a TSV file or two line-aligned files (plain,
``.gz`` or ``.xz``), builds the vocabularies exactly as a run does on the same text
(``build_vocabularies``: the ids are those of the text path) or takes a sentencepiece model
(``spm_model``: its own pieces and ids), segments the pairs in worker processes, drops the
pairs over the length limits (counted by reason) and writes a folder all or nothing (a
temporary sibling renamed at the end: a killed ``prepare`` leaves no folder at ``out``)::

    manifest.json             counts, inputs' and files' SHA-256, limits, what was dropped
    src_vocab.json ...        the vocabularies (``Seq2Seq.save_pretrained``'s names)
    00000.src.ids             shard 0's source ids, flat: uint16 (V <= 65536) or uint32
    00000.tgt.ids             its target ids (BOS, target, EOS), flat
    00000.lengths             int32 [n, 2]: each pair's source and target length
    00000.offsets             int64 [n + 1, 2]: where each pair starts in the two id files
    00001.src.ids ...         at most ``shard_pairs`` pairs a shard

Every number is little-endian. A source is stored as ``Vocab.encode(source, eos=True)`` and
a target as ``encode(target, bos=True, eos=True)``, what ``batching.ParallelData`` holds, so
the same pairs give the same batches either way. The same inputs and settings give the same
bytes, whatever the number of workers (the pairs are cut into fixed chunks, and the chunks
written in order).

The corpus is never held: ``prepare_corpus`` reads it in passes (``luong.tasks.tsv.PairStream``,
a line at a time, the files opened again each pass). The first learns the vocabularies, a
side a pass (a joint one: the sources, then the targets) and checks every line, so that a bad
line stops ``prepare`` before anything is written; the second cuts the pairs into chunks of
``CHUNK`` as it reads them, at most two a worker in flight, and the shard files are written as
the chunks come back. Its memory is the vocabularies' and the chunks', whatever the size of
the corpus (a 2-million-pair corpus: about 250 MB, most of it the modules), except for a
subword vocabulary: sentencepiece keeps every line it learns from in memory while it trains
(``train_subword``). The inputs' SHA-256 is one more pass, read in blocks.
"""

from __future__ import annotations

import collections
import itertools
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from luong.common.errors import LuongError, LuongTypeError
from luong.common.files import read_bounded, read_json, shown_names, write_folder, write_json
from luong.common.folder_files import SRC_VOCAB, TGT_VOCAB
from luong.config.vocab import VocabConfig
from luong.data.manifest import FORMAT, MANIFEST, sha256_file
from luong.data.subword import SubwordVocab, load_vocab, train_subword
from luong.data.vocab import TOKENS, Tokens, Vocab
from luong.tasks.data import Pair, TaskData
from luong.tasks.tsv import PairStream, Split
from luong.version import __version__

__all__ = [
    "build_vocabularies",
    "load_spm_model",
    "prepare_corpus",
]

CHUNK = 4096  # pairs a worker segments at a time: fixed, so the output does not depend on N
UINT16_LIMIT = 1 << 16  # a vocabulary of at most this many ids is stored as uint16
SOURCE_TOO_LONG = "source longer than max_src_len"
TARGET_TOO_LONG = "target longer than max_tgt_len"
BAD_LINE = "bad line (skip_bad_lines)"


def build_vocabularies(data: TaskData, config: VocabConfig) -> tuple[Vocab, Vocab]:
    """The source and target vocabularies, built from the training split as ``config``
    says: the data's own symbols (characters or tokens, ``vocab_size`` and ``min_count``
    capping them) or a sentencepiece model; ``joint_vocab`` gives both sides the same one.
    Sources are normalised with NFKC, targets with NFC at most, so they are written as
    spelled (``luong.data.vocab``); a joint vocabulary and a subword vocabulary use NFC.

    Raises:
        ValueError: a joint vocabulary over sides cut differently (characters against
            tokens, or a lowercased source), or a size the data cannot support.
    """
    return _learn_vocabularies(
        lambda: (source for source, _ in data.train),
        lambda: (target for _, target in data.train),
        config,
        data.src_tokens,
        data.tgt_tokens,
        data.lowercase,
    )


def _learn_vocabularies(
    sources: Callable[[], Iterable[str]],
    targets: Callable[[], Iterable[str]],
    config: VocabConfig,
    src_tokens: Tokens,
    tgt_tokens: Tokens,
    lowercase: bool,
) -> tuple[Vocab, Vocab]:
    """``build_vocabularies`` on the sides as passes: ``sources()`` and ``targets()`` each
    give the side's texts in order, again at every call (a list's or a file's: ``prepare``
    reads its corpus a pass at a time, so that it is never held). Each side is read once
    (a joint vocabulary: the sources, then the targets)."""
    if config.joint_vocab and (src_tokens != tgt_tokens or lowercase):
        raise LuongError(
            "joint_vocab: one vocabulary needs both sides read alike, got sources as "
            f"{src_tokens}{' (lowercased)' if lowercase else ''} and targets as "
            f"{tgt_tokens}"
        )

    def both() -> Iterator[str]:
        return itertools.chain(sources(), targets())

    if config.subword != "none":
        if config.joint_vocab:
            shared = train_subword(both(), config.subword, config.size)
            return shared, shared
        return (
            train_subword(sources(), config.subword, config.size, lowercase=lowercase),
            train_subword(targets(), config.subword, config.size),
        )
    size, count = config.size or None, config.min_count
    if config.joint_vocab:
        joint = Vocab.build(both(), src_tokens, min_count=count, max_size=size, normalization="NFC")
        return joint, joint
    return (
        Vocab.build(sources(), src_tokens, lowercase, min_count=count, max_size=size),
        Vocab.build(targets(), tgt_tokens, min_count=count, max_size=size, normalization="NFC"),
    )


def load_spm_model(path: str | os.PathLike[str], kind: str = "unigram") -> SubwordVocab:
    """A sentencepiece model trained elsewhere as a vocabulary: its own pieces and ids.

    Args:
        path: the ``.model`` file.
        kind: what it was trained as (``unigram`` or ``bpe``).

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a sentencepiece model, or its ids 0-3 are not luong's specials (the
            message says how to train one that fits).
    """
    name = os.fspath(path)
    raw = read_bounded(path, 64 << 20)
    try:
        return SubwordVocab(raw, kind)
    except ValueError as error:
        raise LuongError(
            f"{name}: {error}; train it with --pad_id=0 --bos_id=1 --eos_id=2 --unk_id=3 "
            f"--pad_piece={Vocab.PAD} (sentencepiece's spm_train)"
        ) from None


def _input_files(train: Split) -> list[Path]:
    if isinstance(train, tuple | list):
        return [Path(one) for one in train]
    return [Path(train)]


def _encode_chunk(job: tuple[str, str, list[Pair]]) -> tuple[np.ndarray, ...]:
    """Segment a chunk of pairs (in a worker process): the flat source ids, the sources'
    lengths, the flat target ids, the targets' lengths. The vocabularies are read from their
    files (``load_vocab``), so that nothing but paths and text crosses the processes."""
    src_path, tgt_path, pairs = job
    src_vocab = load_vocab(src_path)
    tgt_vocab = src_vocab if tgt_path == src_path else load_vocab(tgt_path)
    src = [src_vocab.encode(s, eos=True) for s, _ in pairs]
    tgt = [tgt_vocab.encode(t, bos=True, eos=True) for _, t in pairs]
    return (
        np.fromiter((i for ids in src for i in ids), dtype=np.int64),
        np.array([len(ids) for ids in src], dtype=np.int64),
        np.fromiter((i for ids in tgt for i in ids), dtype=np.int64),
        np.array([len(ids) for ids in tgt], dtype=np.int64),
    )


class _ShardWriter:
    """Appends segmented pairs to the shard files of ``folder``, ``shard_pairs`` a shard. All
    four files are written as the pairs come, the lengths and offsets too: nothing of a
    shard is held."""

    PARTS = ("src.ids", "tgt.ids", "lengths", "offsets")

    def __init__(self, folder: Path, shard_pairs: int, dtype: np.dtype[Any]) -> None:
        self.folder, self.shard_pairs, self.dtype = folder, shard_pairs, dtype
        self.shards: list[int] = []  # pairs in each closed shard
        self.count = 0  # pairs in the open shard
        self.ends = np.zeros(2, dtype="<i8")  # where its next pair starts in the id files
        self.files: list[Any] = []

    def add(
        self, src: np.ndarray, src_len: np.ndarray, tgt: np.ndarray, tgt_len: np.ndarray
    ) -> None:
        while len(src_len):
            if not self.files:
                stem = self.folder / f"{len(self.shards):05d}"
                self.files = [open(f"{stem}.{part}", "wb") for part in self.PARTS]  # noqa: SIM115
                self.ends = np.zeros(2, dtype="<i8")
                self.files[3].write(self.ends.tobytes())  # offsets: [n + 1, 2], from 0
            k = min(self.shard_pairs - self.count, len(src_len))
            s, t = int(src_len[:k].sum()), int(tgt_len[:k].sum())
            lengths = np.stack([src_len[:k], tgt_len[:k]], axis=1)
            offsets = self.ends + np.cumsum(lengths, axis=0, dtype="<i8")
            self.files[0].write(src[:s].astype(self.dtype).tobytes())
            self.files[1].write(tgt[:t].astype(self.dtype).tobytes())
            self.files[2].write(lengths.astype("<i4").tobytes())
            self.files[3].write(offsets.tobytes())
            self.ends = offsets[-1]
            self.count += k
            src, src_len, tgt, tgt_len = src[s:], src_len[k:], tgt[t:], tgt_len[k:]
            if self.count == self.shard_pairs:
                self.close()

    def close(self) -> None:
        if not self.files:
            return
        for file in self.files:
            file.close()
        self.shards.append(self.count)
        self.files, self.count = [], 0


def _check_int(name: str, value: object, low: int, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise LuongError(f"{name}: expected an int >= {low}, got {value!r}")


@dataclass(frozen=True)
class _Settings:
    """What ``prepare_corpus`` was told (its parameters of those names), checked on
    construction so that a bad one stops it before the corpus is read; one value handed to
    its steps, and the settings its manifest records."""

    src_tokens: Tokens
    tgt_tokens: Tokens
    vocab: VocabConfig
    spm_model: str | os.PathLike[str] | None
    max_src_len: int | None
    max_tgt_len: int | None
    workers: int
    shard_pairs: int

    def __post_init__(self) -> None:
        if not isinstance(self.vocab, VocabConfig):
            raise LuongTypeError(f"vocab: expected a VocabConfig, got {type(self.vocab).__name__}")
        for name, value in (("src_tokens", self.src_tokens), ("tgt_tokens", self.tgt_tokens)):
            if value not in TOKENS:
                raise LuongError(f"{name}: expected one of {', '.join(TOKENS)}, got {value!r}")
        _check_int("workers", self.workers, 1)
        _check_int("shard_pairs", self.shard_pairs, 1)
        _check_int("max_src_len", self.max_src_len, 1, allow_none=True)
        _check_int("max_tgt_len", self.max_tgt_len, 1, allow_none=True)


def prepare_corpus(
    train: Split,
    out: str | os.PathLike[str],
    *,
    src_tokens: Tokens = "char",
    tgt_tokens: Tokens = "char",
    vocab: VocabConfig | None = None,
    spm_model: str | os.PathLike[str] | None = None,
    max_src_len: int | None = None,
    max_tgt_len: int | None = None,
    skip_bad_lines: bool = False,
    workers: int = 1,
    shard_pairs: int = 1_000_000,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Prepare a corpus: segment the pairs of ``train`` and write the folder ``out`` (the
    module docstring), all or nothing.

    Args:
        train: a ``source<TAB>target`` file or ``[source file, target file]`` (plain,
            ``.gz`` or ``.xz``).
        out: the folder to write: new, empty, or an earlier prepared corpus holding nothing
            else (replaced whole); any other folder is refused, never deleted.
        src_tokens: cut sources into characters or on whitespace (subword none).
        tgt_tokens: the same for targets.
        vocab: how the vocabularies are learned, as ``luong train`` learns them (default:
            ``VocabConfig()``); ignored with ``spm_model``.
        spm_model: a sentencepiece ``.model`` file trained elsewhere, used on both sides as
            it is (kind: ``vocab.subword`` when a subword kind, else unigram).
        max_src_len: drop pairs whose source has more symbols (EOS not counted); None: none.
        max_tgt_len: drop pairs whose target has more symbols (BOS, EOS not counted).
        skip_bad_lines: leave bad lines out (counted) instead of raising.
        workers: processes that segment; the output does not depend on it.
        shard_pairs: the most pairs a shard holds.
        log: where to say what is done (default: nowhere).

    Returns:
        the manifest written, and under ``"seconds"`` how long it took.

    Raises:
        FileNotFoundError: an input is missing.
        ValueError: a bad setting, a bad line (``FILE:LINE: ...``), no pairs left after the
            limits, or ``out`` is a file or a folder that holds anything but an earlier
            prepared corpus.
    """
    start = time.perf_counter()
    say = log or (lambda message: None)
    vocab = vocab if vocab is not None else VocabConfig()
    settings = _Settings(
        src_tokens, tgt_tokens, vocab, spm_model, max_src_len, max_tgt_len, workers, shard_pairs
    )
    out = Path(out)
    _check_out(out)
    src_vocab: Vocab
    tgt_vocab: Vocab
    if spm_model is not None:  # checked before the corpus is read
        kind = vocab.subword if vocab.subword != "none" else "unigram"
        src_vocab = tgt_vocab = load_spm_model(spm_model, kind)
    # The corpus is read in passes, never held: the vocabularies' (each side once; checks
    # every line first), then the segmenting one, a chunk of pairs at a time.
    pairs = PairStream(train, skip_bad_lines=skip_bad_lines)
    if spm_model is None:
        src_vocab, tgt_vocab = _learn_vocabularies(
            pairs.sources, pairs.targets, vocab, src_tokens, tgt_tokens, lowercase=False
        )
        say(f"learned the vocabularies from {pairs.name}")
    size = max(len(src_vocab), len(tgt_vocab))
    dtype = np.dtype("<u2") if size <= UINT16_LIMIT else np.dtype("<u4")
    inputs = [{"name": path.name, **_file_entry(path)} for path in _input_files(train)]
    manifest: dict[str, Any] = {}

    def fill(folder: Path) -> None:
        """Write the corpus into ``folder``, the temporary sibling ``write_folder`` renames."""
        vocab_paths = _save_vocabularies(folder, src_vocab, tgt_vocab)
        writer = _ShardWriter(folder, shard_pairs, dtype)
        written = _segment(pairs, vocab_paths, writer, settings)
        say(f"read {written.read} pairs from {pairs.name}")
        if not written.shards:
            raise LuongError(
                f"{pairs.name}: no pairs left after the length limits (max_src_len="
                f"{max_src_len}, max_tgt_len={max_tgt_len}: {written.dropped[SOURCE_TOO_LONG]} "
                f"sources and {written.dropped[TARGET_TOO_LONG]} targets too long)"
            )
        vocabs = (src_vocab, tgt_vocab)
        manifest.update(_manifest(folder, settings, vocabs, dtype, inputs, written))
        write_json(folder / MANIFEST, manifest)

    write_folder(out, fill)
    seconds = time.perf_counter() - start
    return {**manifest, "seconds": round(seconds, 3)}


def _check_out(out: Path) -> None:
    """Refuse an ``out`` that exists and is neither an empty folder nor an earlier prepared
    corpus holding nothing else (a luong manifest and the files it lists):
    ``write_folder`` replaces the whole folder, and a folder holding anything else (your
    dataset, the very input being prepared, a note) is not luong's to delete."""
    if out.exists() and not out.is_dir():
        raise LuongError(f"{out}: a file, not a folder; --out names the folder to write")
    held = sorted(path.name for path in out.iterdir()) if out.is_dir() else []
    if not held:
        return
    listed = _corpus_files(out)
    if listed is None:
        what = f"not a luong prepared corpus (no luong {MANIFEST})"
    else:
        others = [name for name in held if name not in listed]
        if not others:
            return
        shown = shown_names(others)
        what = f"a prepared corpus that also holds other files ({shown})"
    raise LuongError(
        f"{out}: {what}; choose a new or empty folder for --out (an earlier corpus is "
        "replaced only when it holds nothing else)"
    )


def _corpus_files(folder: Path) -> set[str] | None:
    """The names of the files the prepared corpus ``folder`` is made of (its manifest, the
    vocabularies and the shards that manifest lists); None when ``folder`` holds no luong
    manifest."""
    try:
        manifest = read_json(folder / MANIFEST)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            return None
        names = {MANIFEST, *manifest["vocab_files"]}
        for shard in manifest["shards"]:
            names.update(shard["files"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {name for name in names if isinstance(name, str)}


def _save_vocabularies(folder: Path, src_vocab: Vocab, tgt_vocab: Vocab) -> tuple[str, str]:
    """Write the vocabularies into ``folder`` and return the paths the workers load them
    from (``_encode_chunk``): the source's twice for a shared vocabulary, so that a worker
    loads it once."""
    src_vocab.save(folder / SRC_VOCAB)
    tgt_vocab.save(folder / TGT_VOCAB)
    src_path, tgt_path = str(folder / SRC_VOCAB), str(folder / TGT_VOCAB)
    if src_vocab is tgt_vocab:
        tgt_path = src_path
    return src_path, tgt_path


@dataclass(frozen=True)
class _Written:
    """What the segmenting pass (``_segment``) wrote and left out."""

    shards: list[int]  # the pairs of each shard written
    read: int  # the pairs read, the bad lines skipped not counted
    dropped: dict[str, int]  # the pairs left out, by reason (BAD_LINE, SOURCE_TOO_LONG, ...)


def _segment(
    pairs: PairStream, vocab_paths: tuple[str, str], writer: _ShardWriter, settings: _Settings
) -> _Written:
    """The segmenting pass: the pairs cut into chunks of ``CHUNK`` as they are read, each
    segmented by a worker (``_encode_chunk``, with the vocabularies at ``vocab_paths``), the
    pairs over the length limits dropped, and the rest written by ``writer`` in the chunks'
    order, so that the bytes do not depend on the number of workers."""
    src_path, tgt_path = vocab_paths
    stream = iter(pairs)
    chunks = iter(lambda: list(itertools.islice(stream, CHUNK)), [])
    jobs = ((src_path, tgt_path, chunk) for chunk in chunks)
    dropped = {BAD_LINE: 0, SOURCE_TOO_LONG: 0, TARGET_TOO_LONG: 0}
    read = 0
    with _pool(settings.workers) as segment:
        for src, src_len, tgt, tgt_len in segment(_encode_chunk, jobs):
            read += len(src_len)
            writer.add(*_drop_long(src, src_len, tgt, tgt_len, settings, dropped))
    writer.close()
    dropped[BAD_LINE] = len(pairs.skipped)  # the pass is read to its end
    return _Written(writer.shards, read, dropped)


def _drop_long(
    src: np.ndarray,
    src_len: np.ndarray,
    tgt: np.ndarray,
    tgt_len: np.ndarray,
    settings: _Settings,
    dropped: dict[str, int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A segmented chunk (``_encode_chunk``'s arrays) without its pairs over the length
    limits, each counted in ``dropped`` under one reason (the source's first). The limits
    count symbols: a source's length holds its EOS, a target's its BOS and EOS."""
    keep = np.ones(len(src_len), dtype=bool)
    if settings.max_src_len is not None:
        long_src = src_len - 1 > settings.max_src_len
        dropped[SOURCE_TOO_LONG] += int(long_src.sum())
        keep &= ~long_src
    if settings.max_tgt_len is not None:
        long_tgt = keep & (tgt_len - 2 > settings.max_tgt_len)
        dropped[TARGET_TOO_LONG] += int(long_tgt.sum())
        keep &= ~long_tgt
    if keep.all():
        return src, src_len, tgt, tgt_len
    src, tgt = src[np.repeat(keep, src_len)], tgt[np.repeat(keep, tgt_len)]
    return src, src_len[keep], tgt, tgt_len[keep]


def _manifest(
    folder: Path,
    settings: _Settings,
    vocabs: tuple[Vocab, Vocab],
    dtype: np.dtype[Any],
    inputs: list[dict[str, Any]],
    written: _Written,
) -> dict[str, Any]:
    """The manifest of the corpus written into ``folder`` (the module docstring): what
    ``PreparedData`` checks the files against, and what ``luong train --data`` reads of the
    settings. Its keys' order is the file's."""
    src_vocab, tgt_vocab = vocabs
    subword = settings.spm_model is not None
    vocab_files = sorted(
        path.name for path in folder.iterdir() if path.name.startswith(("src_vocab", "tgt_vocab"))
    )
    return {
        "format": FORMAT,
        "luong": __version__,
        "pairs": sum(written.shards),
        "read": written.read + written.dropped[BAD_LINE],
        "dropped": written.dropped,
        "inputs": inputs,
        "src_tokens": "subword" if subword else settings.src_tokens,
        "tgt_tokens": "subword" if subword else settings.tgt_tokens,
        "vocab": {
            **settings.vocab.to_json(),
            "spm_model": Path(settings.spm_model).name if settings.spm_model else None,
        },
        "vocab_sizes": {"src": len(src_vocab), "tgt": len(tgt_vocab)},
        "vocab_files": {name: sha256_file(folder / name) for name in vocab_files},
        "limits": {"max_src_len": settings.max_src_len, "max_tgt_len": settings.max_tgt_len},
        "dtype": dtype.name,
        "shard_pairs": settings.shard_pairs,
        "shards": _shard_entries(folder, written.shards),
    }


def _shard_entries(folder: Path, shards: list[int]) -> list[dict[str, Any]]:
    """The manifest's ``shards``: each shard's pairs, and its four files' sizes and SHA-256."""
    entries = []
    for i, count in enumerate(shards):
        files = {
            f"{i:05d}.{part}": _file_entry(folder / f"{i:05d}.{part}")
            for part in _ShardWriter.PARTS
        }
        entries.append({"pairs": count, "files": files})
    return entries


def _file_entry(path: Path) -> dict[str, Any]:
    return {"bytes": path.stat().st_size, "sha256": sha256_file(path)}


class _pool:
    """``with _pool(n) as segment``: ``segment(function, jobs)`` maps in order, in ``n``
    worker processes (none for 1). At most ``2 n`` jobs are in flight: ``jobs`` is read as
    the results are taken (``Pool.imap`` reads it ahead on a thread of its own and keeps every
    result not yet taken: the corpus, when the writer is slower than the workers)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.pool: Any = None

    def __enter__(self) -> Callable[..., Iterator[Any]]:
        if self.workers == 1:
            return map
        self.pool = _context().Pool(self.workers, initializer=_worker_signals)
        return self._map

    def _map(self, function: Callable[[Any], Any], jobs: Iterable[Any]) -> Iterator[Any]:
        pending: collections.deque[Any] = collections.deque()
        for job in jobs:
            pending.append(self.pool.apply_async(function, (job,)))
            if len(pending) >= 2 * self.workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()

    def __exit__(self, failed: type[BaseException] | None, *exc: object) -> None:
        if self.pool is None:
            return
        if failed is None:
            self.pool.close()  # the workers finish and leave
        else:
            self.pool.terminate()
        self.pool.join()


def _context() -> Any:
    """The workers' start method: forkserver where the platform has it (a worker forks from
    a server process of one thread that has imported this module once, not from the
    caller, whose other threads may hold a lock at the fork: a worker forked from a process
    with threads once hung in a lock it inherited held), else spawn."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def _worker_signals() -> None:
    """A worker leaves SIGINT and SIGTERM to its parent, which ends the pool: the CLI's
    handlers, inherited through fork, would print a traceback in every worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
