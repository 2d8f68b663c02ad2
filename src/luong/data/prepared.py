"""Prepared corpora: training pairs segmented once into token ids on disk, read back through
memory maps, so that the size of a corpus is a question of disk, not of memory.

``luong.data.prepare.prepare_corpus`` (``luong prepare``) writes such a folder (its files are
listed there); ``luong.data.manifest`` names its manifest and hashes its files.

``PreparedData`` opens such a folder: it checks the manifest against the files (sizes; full
hashes with ``verify``), memory-maps the id files, and offers what the trainer reads of
``ParallelData``: ``len``, ``src_lengths`` and ``tgt_lengths`` (numpy, one int per pair) and
``batch(indices)``, which reads only those rows and then hands their pages back (they stay in
the page cache, not in the trainer's resident memory). The batches come from the same
``token_batches`` / ``bucketed_batches`` as text's; under torchrun every rank maps the same
files (the operating system's page cache holds them once) and takes its share of the batch
lists (``distributed.shard``).

Shuffling is the text path's, over the whole corpus: each epoch a permutation of every pair
(4 bytes a pair), sorted by length within pools of about 32 batches, the batches shuffled.
That is what makes the two paths' batches and weights the same bit for bit, and it needs no
shard order or shuffle window: the memory map reads any pair at the same cost while the
page cache holds the corpus. A corpus larger than the machine's memory is then read at
random from disk (a few reads a pair of a batch): fine from an SSD, slow from a spinning
disk, where shuffling shard by shard would be the better design (not built).

"""

from __future__ import annotations

import hashlib
import mmap
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from luong.common.errors import LuongError
from luong.common.files import read_json
from luong.common.folder_files import SRC_VOCAB, TGT_VOCAB
from luong.data.batching import Batch, pad_batch
from luong.data.manifest import FORMAT, MANIFEST, sha256_file
from luong.data.subword import load_vocab
from luong.data.vocab import Vocab
from luong.tasks.data import TaskData
from luong.tasks.tsv import Split, read_split

__all__ = [
    "PreparedData",
    "prepared_task",
]


class _Mapped:
    """A file memory-mapped read-only as a numpy array (``array``). ``release`` drops the
    pages this process has touched from its resident set: they stay in the operating
    system's page cache (shared by every rank and reread from there on the next touch,
    without a disk read while memory allows), but no longer count as the process's memory.
    Without it, an epoch over a corpus larger than memory would have every page it read
    counted in the trainer's RSS by its end, the measure that schedulers and memory limits
    watch."""

    def __init__(self, path: Path, dtype: np.dtype[Any], shape: tuple[int, ...] = (-1,)) -> None:
        with open(path, "rb") as file:
            self._map = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        self.array: np.ndarray = np.frombuffer(self._map, dtype=dtype).reshape(shape)

    def release(self) -> None:
        if hasattr(mmap, "MADV_DONTNEED"):  # not on Windows, where nothing is done
            self._map.madvise(mmap.MADV_DONTNEED)


@dataclass(frozen=True)
class _Shard:
    src: _Mapped  # flat ids
    tgt: _Mapped
    offsets: _Mapped  # [n + 1, 2]

    def release(self) -> None:
        for mapped in (self.src, self.tgt, self.offsets):
            mapped.release()


class PreparedData:
    """A prepared corpus (``prepare_corpus``), opened: what the trainer reads of
    ``batching.ParallelData``, from memory maps.

    Args:
        folder: the prepared corpus.
        verify: also check every file's SHA-256 against the manifest (reads every byte);
            without it, the files' sizes and the vocabularies' hashes are checked.

    Raises:
        FileNotFoundError: no such folder, or a file of it is missing (named).
        ValueError: not a prepared corpus, or a file that does not match its manifest: one
            line naming the file.
    """

    def __init__(self, folder: str | os.PathLike[str], verify: bool = False) -> None:
        self.folder = Path(folder)
        path = self.folder / MANIFEST
        if not self.folder.is_dir():
            raise FileNotFoundError(
                f"{self.folder}: no such prepared corpus (luong prepare writes one)"
            )
        if not path.is_file():
            raise LuongError(
                f"{self.folder}: not a prepared corpus (no {MANIFEST}; luong prepare writes one)"
            )
        manifest = read_json(path)
        raw = path.read_bytes()
        self.sha256 = hashlib.sha256(raw).hexdigest()
        self.manifest = manifest
        try:
            shards, dtype = self._check_manifest(manifest)
        except (KeyError, TypeError, AttributeError) as error:
            raise LuongError(
                f"{path}: not a valid manifest ({type(error).__name__}: {error})"
            ) from None
        for name, digest in manifest["vocab_files"].items():
            file = self.folder / name
            if not file.is_file():
                raise FileNotFoundError(f"{file}: missing (a vocabulary of {path})")
            if sha256_file(file) != digest:
                raise LuongError(
                    f"{file}: not the vocabulary this corpus was prepared with (its SHA-256 "
                    f"differs from {MANIFEST}'s); prepare the corpus again"
                )
        self.src_vocab = load_vocab(self.folder / SRC_VOCAB)
        self.tgt_vocab = load_vocab(self.folder / TGT_VOCAB)
        if self.tgt_vocab == self.src_vocab:
            self.tgt_vocab = self.src_vocab
        sizes = manifest["vocab_sizes"]
        if (len(self.src_vocab), len(self.tgt_vocab)) != (sizes["src"], sizes["tgt"]):
            raise LuongError(f"{path}: vocab_sizes {sizes} disagree with the vocabulary files")
        lengths, self._shards = [], []
        for i, shard in enumerate(shards):
            for name, entry in shard["files"].items():
                file = self.folder / name
                if not file.is_file():
                    raise FileNotFoundError(f"{file}: missing (a shard of {path})")
                actual = file.stat().st_size
                if actual != entry["bytes"]:
                    raise LuongError(
                        f"{file}: {actual} bytes, expected {entry['bytes']} ({MANIFEST}); the "
                        "corpus is damaged: prepare it again"
                    )
                if verify and sha256_file(file) != entry["sha256"]:
                    raise LuongError(
                        f"{file}: its SHA-256 differs from {MANIFEST}'s; the corpus is "
                        "damaged: prepare it again"
                    )
            stem, n = self.folder / f"{i:05d}", shard["pairs"]
            expected = {"lengths": n * 8, "offsets": (n + 1) * 16}
            for part, size in expected.items():
                if (Path(f"{stem}.{part}")).stat().st_size != size:
                    raise LuongError(
                        f"{stem}.{part}: {Path(f'{stem}.{part}').stat().st_size} bytes, but "
                        f"{MANIFEST} says the shard holds {n} pairs ({size} bytes)"
                    )
            shard_lengths = np.fromfile(f"{stem}.lengths", dtype="<i4").reshape(n, 2)
            totals = shard_lengths.sum(axis=0, dtype=np.int64)
            for k, side in enumerate(("src", "tgt")):
                ids = Path(f"{stem}.{side}.ids")
                if ids.stat().st_size != int(totals[k]) * dtype.itemsize:
                    raise LuongError(
                        f"{ids}: {ids.stat().st_size} bytes, but the lengths of "
                        f"{stem}.lengths make {int(totals[k])} {dtype.name} ids"
                    )
            if shard_lengths.min() < 1:
                raise LuongError(f"{stem}.lengths: expected lengths >= 1")
            lengths.append(shard_lengths)
            self._shards.append(
                _Shard(
                    _Mapped(Path(f"{stem}.src.ids"), dtype),
                    _Mapped(Path(f"{stem}.tgt.ids"), dtype),
                    _Mapped(Path(f"{stem}.offsets"), np.dtype("<i8"), (n + 1, 2)),
                )
            )
        # int32, as stored: 8 bytes a pair in memory for both sides (the batcher's input).
        self.src_lengths: np.ndarray = np.concatenate([both[:, 0] for both in lengths])
        self.tgt_lengths: np.ndarray = np.concatenate([both[:, 1] for both in lengths])
        counts = [shard["pairs"] for shard in shards]
        self._starts = np.cumsum([0, *counts[:-1]])
        self.src_tokens: str = manifest["src_tokens"]
        self.tgt_tokens: str = manifest["tgt_tokens"]

    def _check_manifest(self, manifest: Any) -> tuple[list[dict[str, Any]], np.dtype[Any]]:
        path = self.folder / MANIFEST
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            found = (
                manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
            )
            raise LuongError(f"{path}: format {found!r}, expected {FORMAT!r} (luong prepare)")
        shards = manifest["shards"]
        if not shards or sum(shard["pairs"] for shard in shards) != manifest["pairs"]:
            raise LuongError(f"{path}: its shards do not add up to its {manifest['pairs']} pairs")
        if manifest["dtype"] not in ("uint16", "uint32"):
            raise LuongError(f"{path}: dtype {manifest['dtype']!r}, expected uint16 or uint32")
        dtype = np.dtype("<u2" if manifest["dtype"] == "uint16" else "<u4")
        for i, shard in enumerate(shards):
            names = {f"{i:05d}.{part}" for part in ("src.ids", "tgt.ids", "lengths", "offsets")}
            if set(shard["files"]) != names:
                raise LuongError(f"{path}: shard {i} should list the files {sorted(names)}")
        return shards, dtype

    def __len__(self) -> int:
        return len(self.src_lengths)

    def batch(self, indices: Sequence[int] | np.ndarray) -> Batch:
        """The pairs at ``indices`` as a batch, padded to the longest of them (only those
        rows are read from disk), as ``ParallelData.batch`` gives them.

        Raises:
            IndexError: an index outside ``[0, len)``.
            ValueError: an id outside its vocabulary (a damaged shard, named).
        """
        index = np.asarray(indices, dtype=np.int64)
        if index.size and (index.min() < 0 or index.max() >= len(self)):
            raise IndexError(f"indices: expected indices in [0, {len(self)}), got {index.tolist()}")
        which = np.searchsorted(self._starts, index, side="right") - 1
        src, tgt = [], []
        for i, s in zip(index.tolist(), which.tolist(), strict=True):
            shard, local = self._shards[s], i - int(self._starts[s])
            (a, b), (c, d) = shard.offsets.array[local : local + 2].tolist()
            src.append(shard.src.array[a:c].tolist())
            tgt.append(shard.tgt.array[b:d].tolist())
        for s in set(which.tolist()):
            self._shards[s].release()
        src_ids, src_lengths = pad_batch(src)
        tgt_ids, _ = pad_batch(tgt)
        # An id past its vocabulary (a shard edited at the same size, which only ``verify``'s
        # hashes see) would index past the embeddings: one reduction a batch finds it.
        for side, ids, rows, vocab in (
            ("src", src_ids, src, self.src_vocab),
            ("tgt", tgt_ids, tgt, self.tgt_vocab),
        ):
            if ids.numel() and int(ids.max()) >= len(vocab):
                first = next(j for j, row in enumerate(rows) if max(row) >= len(vocab))
                raise LuongError(
                    f"{self.folder / f'{int(which[first]):05d}.{side}.ids'}: id {max(rows[first])} "
                    f"in pair {int(index[first]) + 1}, outside the {len(vocab)} ids of its "
                    "vocabulary; the corpus is damaged: prepare it again"
                )
        return Batch(src_ids, src_lengths, tgt_ids)

    def check_vocabularies(self, src_vocab: Vocab, tgt_vocab: Vocab) -> None:
        """The model's vocabularies must be the corpus's: its ids mean their symbols.

        Raises:
            ValueError: either differs (the message names the folder).
        """
        for side, mine, theirs in (
            ("source", self.src_vocab, src_vocab),
            ("target", self.tgt_vocab, tgt_vocab),
        ):
            if mine != theirs:
                raise LuongError(
                    f"{self.folder}: prepared with another {side} vocabulary than the model's "
                    f"({mine!r}, the model's {theirs!r}); train with the corpus's own"
                )

    def longest(self) -> tuple[int, int]:
        """The longest source and target, in symbols (EOS, and the target's BOS, not
        counted)."""
        return int(self.src_lengths.max()) - 1, int(self.tgt_lengths.max()) - 2

    def summary(self) -> dict[str, Any]:
        """What a run's metrics keep of the corpus: its folder, pairs, drops, manifest hash."""
        keys = ("pairs", "read", "dropped", "inputs", "limits", "dtype")
        return {
            "folder": str(self.folder),
            "sha256": self.sha256,
            **{k: self.manifest[k] for k in keys},
        }


def prepared_task(
    folder: str | os.PathLike[str],
    dev: Split,
    test: Split | None = None,
    *,
    skip_bad_lines: bool = False,
) -> tuple[PreparedData, TaskData]:
    """A prepared corpus for training, and dev and test read from text files as your own
    data's are (``luong.tasks.tsv``): the ``TaskData`` holds no training pairs (the corpus
    has them), and reads its sides as the corpus does.

    Raises:
        as ``PreparedData`` and ``luong.tasks.tsv.read_split``.
    """
    data = PreparedData(folder)
    files = {"dev": dev, **({"test": test} if test is not None else {})}
    read = {split: read_split(path, skip_bad_lines=skip_bad_lines) for split, path in files.items()}
    tokens = {"char": "char", "space": "space"}
    task = TaskData(
        [],
        read["dev"].pairs,
        read["test"].pairs if "test" in read else [],
        src_tokens=tokens.get(data.src_tokens, "char"),  # type: ignore[arg-type]
        tgt_tokens=tokens.get(data.tgt_tokens, "char"),  # type: ignore[arg-type]
        references=True,
        info={
            "prepared": data.summary(),
            "files": {
                split: [os.fspath(p) for p in path]
                if isinstance(path, tuple | list)
                else os.fspath(path)
                for split, path in files.items()
            },
            "skipped_lines": {
                read[split].name: len(read[split].skipped) for split in read if read[split].skipped
            },
        },
    )
    return data, task
