"""Files written all or nothing, and read with errors that name them: text, JSON, safetensors.

The bottom floor of the package: it imports nothing of luong. Every file is written to a
temporary name in its own folder, flushed, fsynced and renamed over the final name, so a
reader sees the old file or the new one, never half of one. A folder is built under a
temporary name and renamed into place when complete. Nothing is ever pickled. A write that
fails (a full disk) raises ``OSError`` naming the final file; ``locked`` keeps a folder to one
writer at a time.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor

__all__ = [
    "LOCK",
    "FolderLocked",
    "atomic_write",
    "locked",
    "read_json",
    "read_tensors",
    "save_tensors",
    "write_folder",
    "write_json",
    "write_tensors",
    "write_text",
]


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries (a rename inside it) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def file_mode() -> int:
    """The permissions a new file gets under the process' umask (0o644 for umask 022)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> None:
    """Write ``path`` all or nothing: ``write(tmp)`` fills a temporary file in the same folder,
    which is fsynced and renamed over ``path``."""
    path = Path(path)
    # A fresh name, created by ``write`` itself: the file gets the usual permissions (the
    # umask's), not mkstemp's owner-only 0600.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        write(tmp)
        os.chmod(tmp, file_mode())  # safetensors creates its files owner-only
        with open(tmp, "rb+") as handle:
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        raise _named(error, path, tmp) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def _named(error: OSError, path: Path, tmp: Path) -> OSError:
    """``error`` naming ``path``, not the temporary file ``tmp`` nor nothing (a failed
    ``write`` names no file: "[Errno 28] No space left on device")."""
    if error.strerror is None or error.filename not in (None, str(tmp)):
        return error
    return OSError(error.errno, error.strerror, str(path))


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Atomically write UTF-8 text."""

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    atomic_write(path, write)


def write_json(path: str | os.PathLike[str], data: Any) -> None:
    """Atomically write ``data`` as indented UTF-8 JSON (non-ASCII kept as written)."""
    write_text(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def read_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file; a missing, unreadable or malformed file raises naming it.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not UTF-8 or not JSON (the message names the file).
    """
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    except RecursionError:
        raise ValueError(f"{path}: not valid JSON (nested too deep)") from None


def save_tensors(
    path: str | os.PathLike[str], tensors: dict[str, Tensor], metadata: dict[str, str]
) -> None:
    """Write a safetensors file in place (contiguous CPU copies of ``tensors``); for a file
    inside a folder that ``write_folder`` builds. ``write_tensors`` is the atomic one.

    Raises:
        OSError: the file cannot be written (a full disk); the message names it.
    """
    flat = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
    try:
        save_file(flat, os.fspath(path), metadata=metadata)
    except SafetensorError as error:
        # "Error while serializing: I/O error: No space left on device (os error 28)"
        found = re.search(r"I/O error: (.*) \(os error (\d+)\)", str(error))
        if found is None:
            raise OSError(f"{path}: cannot write ({error})") from None
        raise OSError(int(found.group(2)), found.group(1), os.fspath(path)) from None


def write_tensors(
    path: str | os.PathLike[str], tensors: dict[str, Tensor], metadata: dict[str, str]
) -> None:
    """Atomically write a safetensors file (contiguous CPU copies of ``tensors``).

    Raises:
        OSError: the file cannot be written (a full disk); the message names it, and the
            previous file, if any, is kept.
    """
    atomic_write(path, lambda tmp: save_tensors(tmp, tensors, metadata))


def read_tensors(path: str | os.PathLike[str]) -> dict[str, Tensor]:
    """Load a safetensors file; a missing, truncated or foreign file raises naming it.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a readable safetensors file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as error:
        raise ValueError(f"{path}: not a readable safetensors file ({error})") from None


def write_folder(folder: str | os.PathLike[str], fill: Callable[[Path], None]) -> Path:
    """Build a folder all or nothing: ``fill(tmp)`` writes into a temporary sibling, which is
    renamed to ``folder`` (replacing an older one) once complete."""
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".partial-{folder.name}.{os.getpid()}.{uuid.uuid4().hex}")
    tmp.mkdir()  # the umask's permissions, not mkdtemp's 0700
    try:
        fill(tmp)
        for path in tmp.iterdir():
            os.chmod(path, file_mode())  # safetensors creates its files owner-only
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
        fsync_dir(tmp)
        if folder.exists():
            # Replace in two renames so a kill in between leaves one complete copy.
            old = folder.with_name(f".old-{folder.name}")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(folder, old)
            os.replace(tmp, folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(folder.parent)
    return folder


LOCK = ".lock"


class FolderLocked(OSError):
    """Another process holds the folder's lock (``locked``)."""

    def __init__(self, message: str, pid: str) -> None:
        super().__init__(message)
        self.pid = pid  # the holder's process id, as it wrote it ("" when unknown)


@contextmanager
def locked(folder: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold ``folder/.lock`` exclusively for the block (``fcntl.flock``), the holder's pid
    written in it; yields its path. The kernel releases the lock when the holder ends,
    however it ends (SIGKILL included): a lock file left by a dead process blocks nothing.

    Raises:
        FolderLocked: another process holds the lock (the message names it and its pid).
    """
    path = Path(folder) / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            raise FolderLocked(f"{path}: held by process {pid or '?'}", pid) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the lock
