"""An index over a translation memory's keys for its fuzzy lookup
(``luong.memory.translation_memory``), so that a source is looked up among half a million keys in
milliseconds: built once from a memory file's keys and cached beside the file
(``FILE.tm-index.npz``).

    index = NgramIndex.cached(Path("corpus/train.tsv"), keys)   # built, or read back
    ids = index.candidates("Open the file", 75.0)   # ids: keys[index.by_length[ids]]

The lookup it serves: the keys whose rapidfuzz ``fuzz.ratio`` with the source (the
normalised Indel similarity, 100 * (1 - d / (la + lb)) for d insertions and deletions
between lengths la and lb) is at least the threshold t. Two filters choose the keys that
``fuzz.ratio`` then scores:

1. **Length** (it loses nothing). d >= |la - lb|, so only a key whose length lies in
   [la s / (2 - s), la (2 - s) / s], s = t / 100, can reach t (t = 75: 0.6 la to 1.67 la).
   The keys are numbered by length (``by_length``), so that band is one range of ids.
2. **Trigrams**, for a source longer than ``SHORT`` characters or whose band holds more
   than ``EXACT_BAND`` keys (a short source's smaller band is scored whole). Each key's
   character trigrams (lower-cased, a space added at each end: " op", "ope", ..., "le ") are
   hashed into ``BUCKETS`` buckets, each bucket the ascending ids of the keys holding one of its
   trigrams (an inverted index as two flat arrays, ``offsets`` and ``postings``). The
   band's keys that share a trigram with the source are ranked by the Dice coefficient of
   their trigram sets, 2 |A & B| / (|A| + |B|), and the best ``CANDIDATES`` are scored.
   This one can miss: a key whose ratio passes while it shares few trigrams with the
   source ("Bundeli" and "Brunei" share none, at ratio 77), which short sources are prone
   to: hence their whole bands. On a memory of 500,000 keys the results equal the exhaustive
   scan's for 1,000 sources of 1,000 at the default threshold, 75 (docs/performance.md).

The cache holds the arrays, the format (``FORMAT``), the number of keys and the SHA-256 of
the memory file's bytes: a cache whose hash, format or count differs from the file's is
built again and written over. A folder that cannot be written keeps no cache (the index
is then built in memory at every load, and a warning says so).
"""

from __future__ import annotations

import hashlib
import logging
import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from luong.common.files import atomic_write

__all__ = [
    "BUCKETS",
    "CANDIDATES",
    "EXACT_BAND",
    "FORMAT",
    "INDEX_SUFFIX",
    "SHORT",
    "NgramIndex",
]

BUCKET_BITS = 20
BUCKETS = 1 << BUCKET_BITS
"""Hash buckets of the trigrams (English UI text has tens of thousands of distinct ones)."""
CANDIDATES = 1000
"""The keys a source's trigrams choose for ``fuzz.ratio`` to score."""
EXACT_BAND = 50_000
"""A short source's length band of at most this many keys is scored whole (a few ms)."""
SHORT = 24
"""The longest source that is "short": few trigrams, so that its band is scored whole (a
long source's band of long keys would cost tens of ms, and its trigrams are many)."""
FORMAT = 1
"""The cache's format: a cache of another one is rebuilt."""
INDEX_SUFFIX = ".tm-index.npz"
"""The cache of ``FILE`` is ``FILE`` + this, beside it."""

MULTIPLIER = np.uint32(0x9E3779B1)  # Knuth's multiplicative hash (2^32 / golden ratio)
MIXER = np.uint32(0x85EBCA77)  # MurmurHash3's finaliser constant

logger = logging.getLogger("luong")


def _trigram_hashes(text: str) -> tuple[np.ndarray, np.ndarray]:
    """The bucket of each character trigram of ``text`` and whether the trigram is real:
    one that spans a NUL (the keys' separator in ``build``) is not. [len - 2] each."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if len(codes) < 3:
        return np.empty(0, np.uint32), np.empty(0, bool)
    mixed = ((codes[:-2] * MULTIPLIER + codes[1:-1]) * MULTIPLIER + codes[2:]) * MIXER
    buckets = mixed >> np.uint32(32 - BUCKET_BITS)  # the top bits: the best mixed
    real = (codes[:-2] != 0) & (codes[1:-1] != 0) & (codes[2:] != 0)
    return buckets, real


def _padded(key: str) -> str:
    return f" {key.lower()} "


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


NGRAM_ARRAYS = ("by_length", "lengths", "grams", "offsets", "postings")
"""The arrays of an index, in its fields' order, as its cache names them."""


@dataclass(frozen=True, eq=False)
class NgramIndex:
    """The trigram index of N keys (the module's docstring). Ids number the keys by length
    (ties in the keys' order); ``P`` is the number of (trigram, key) postings."""

    by_length: np.ndarray  # [N] int32: id -> the key's position in the keys indexed
    lengths: np.ndarray  # [N] int32: each id's key length, ascending
    grams: np.ndarray  # [N] int32: each id's number of distinct trigram buckets
    offsets: np.ndarray  # [BUCKETS + 1] int64: bucket b's ids: postings[offsets[b]:offsets[b+1]]
    postings: np.ndarray  # [P] int32: ids, ascending within a bucket

    def __len__(self) -> int:
        return len(self.by_length)

    @classmethod
    def build(cls, keys: Sequence[str]) -> NgramIndex:
        """The index of ``keys`` (each a memory's key: whitespace-collapsed)."""
        count = len(keys)
        lengths = np.fromiter(map(len, keys), dtype=np.int32, count=count)
        by_length = np.argsort(lengths, kind="stable").astype(np.int32)
        rank = np.empty(count, np.int64)
        rank[by_length] = np.arange(count)
        padded = [_padded(key) for key in keys]
        # All keys as one text, NUL between them: a trigram's key is found by its position.
        buckets, real = _trigram_hashes("\0".join(padded) + "\0")
        sizes = np.fromiter((len(p) + 1 for p in padded), dtype=np.int64, count=count)
        ids = np.repeat(rank, sizes)[: len(buckets)]
        pairs = (buckets[real].astype(np.uint64) << np.uint64(32)) | ids[real].astype(np.uint64)
        pairs.sort()  # by bucket, then id
        if len(pairs):
            pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]  # each pair once
        postings = (pairs & np.uint64(0xFFFFFFFF)).astype(np.int32)
        per_bucket = np.bincount((pairs >> np.uint64(32)).astype(np.int64), minlength=BUCKETS)
        offsets = np.zeros(BUCKETS + 1, np.int64)
        np.cumsum(per_bucket, out=offsets[1:])
        grams = np.bincount(postings, minlength=count).astype(np.int32)
        return cls(by_length, lengths[by_length], grams, offsets, postings)

    def candidates(
        self,
        key: str,
        threshold: float,
        exact_band: int = EXACT_BAND,
        count: int = CANDIDATES,
    ) -> slice | np.ndarray:
        """The ids (``by_length`` maps them to the keys' positions) of the keys that may
        reach ``fuzz.ratio`` >= ``threshold`` (in (0, 100]) with ``key``: every id of its
        length band, a slice, when ``key`` is at most ``SHORT`` characters long and the band
        holds at most ``exact_band`` keys; else the band's ``count`` best by shared
        trigrams, an array (in no order)."""
        share = threshold / 100.0
        slack = 1e-6  # the bounds' rounding (3 * 1.4 / 0.6 < 7) must not cut a key out
        shortest, longest = len(key) * share / (2.0 - share), len(key) * (2.0 - share) / share
        low = int(np.searchsorted(self.lengths, shortest - slack, "left"))
        high = int(np.searchsorted(self.lengths, longest + slack, "right"))
        if len(key) <= SHORT and high - low <= exact_band:
            return slice(low, high)
        buckets, real = _trigram_hashes(_padded(key))
        wanted = np.unique(buckets[real])
        held = []
        for bucket in wanted:
            ids = self.postings[self.offsets[bucket] : self.offsets[bucket + 1]]
            start, stop = ids.searchsorted((low, high))
            held.append(ids[start:stop])
        if not held:
            return np.empty(0, np.int64)
        shared = np.bincount(np.concatenate(held) - low, minlength=high - low)
        found = np.flatnonzero(shared)
        dice = shared[found] / (len(wanted) + self.grams[found + low])
        if len(found) > count:
            found = found[np.argpartition(-dice, count)[:count]]
        return found + low

    def save(self, path: Path, digest: str) -> None:
        """Write the index to ``path`` (all or nothing), for the file of SHA-256 ``digest``."""

        def write(tmp: Path) -> None:
            with open(tmp, "wb") as file:
                np.savez(
                    file,
                    format=np.int64(FORMAT),
                    digest=np.array(digest),
                    by_length=self.by_length,
                    lengths=self.lengths,
                    grams=self.grams,
                    offsets=self.offsets,
                    postings=self.postings,
                )

        atomic_write(path, write)

    @classmethod
    def load(cls, path: Path, digest: str, keys: int) -> NgramIndex | None:
        """The index saved at ``path`` when it is of this format, for the file of SHA-256
        ``digest``, over ``keys`` keys; None when not (or when it does not read)."""
        try:
            with np.load(path, allow_pickle=False) as saved:
                if int(saved["format"]) != FORMAT or str(saved["digest"]) != digest:
                    return None
                index = cls(*(saved[name] for name in NGRAM_ARRAYS))
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            return None
        return index if len(index) == keys and len(index.offsets) == BUCKETS + 1 else None

    @classmethod
    def cached(cls, file: str | os.PathLike[str], keys: Sequence[str]) -> NgramIndex:
        """The index of ``keys``, the keys of the memory file ``file`` in its order: read
        from its cache beside it when that was built from the file as it is now, else
        built and cached."""
        file = Path(file)
        cache = file.with_name(file.name + INDEX_SUFFIX)
        digest = file_digest(file)
        index = cls.load(cache, digest, len(keys))
        if index is None:
            index = cls.build(keys)
            try:
                index.save(cache, digest)
            except (OSError, ValueError) as error:
                logger.warning(f"the memory's index is not cached ({error}); built at each load")
        return index
