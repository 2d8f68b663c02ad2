"""A prepared corpus's manifest (``luong prepare``): its format, its file name and the SHA-256
it records of each file, shared by the writer (``luong.data.prepare``) and the reader
(``luong.data.prepared``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["FORMAT", "MANIFEST", "sha256_file"]

FORMAT = "luong-prepared-1"
"""The ``format`` of a prepared corpus's manifest."""
MANIFEST = "manifest.json"


def sha256_file(path: Path) -> str:
    """The SHA-256 (hex) of a file, read in blocks of 1 MiB: what a manifest records."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
