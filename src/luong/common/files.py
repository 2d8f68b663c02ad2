"""Files written all or nothing, and read with errors that name them: text, JSON, folders.

The bottom floor of the package: it imports nothing of luong, nor torch (safetensors files
are ``luong.common.tensor_files``, on these rules). Every file is written to a
temporary name in its own folder, flushed, fsynced and renamed over the final name, so a
reader sees the old file or the new one, never half of one. A folder is built under a
temporary name and renamed into place when complete (what a killed writer leaves of one is
removed by the next writer of that folder). A symbolic link is written through (its target
replaced, the link kept), and what is not a regular file (a device such as ``/dev/null``, a
FIFO, a folder) is refused, never renamed over. Nothing is ever pickled. A write that
fails (a full disk) raises ``OSError`` naming the final file; ``locked`` keeps a folder to one
writer at a time.

Lines, one rule for every reader (``luong translate``'s input, tab-separated pairs): a line
ends at ``\\n``, and a ``\\r`` just before it belongs to the line end (``\\r\\n``); a lone
``\\r`` is a character of its line, never a line end. A final newline ends the last line (no
empty line after it), a missing one loses nothing, and a UTF-8 byte-order mark at the very
start of the input is dropped. N lines in, N lines out.

Reads are bounded where a sane limit exists, so ``/dev/zero`` or a 50 GB sparse file is an
error, not a machine out of memory: a line holds at most ``MAX_LINE_BYTES`` (1 MiB, a
thousand times the longest sentence a model reads), a JSON file (a vocabulary, a config) at
most ``MAX_JSON_BYTES`` (64 MiB: a million-word vocabulary takes 20), a text file read whole
(a TOML config) at most ``MAX_TEXT_BYTES`` (1 MiB). Data files (pairs, inputs) have no size
limit: they are read a line at a time.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import stat
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from luong.common.errors import LuongError, LuongTypeError
from luong.common.folder_files import LOCK

__all__ = [
    "folder_list",
    "shown_names",
    "clear_stale_partials",
    "nul_problem",
    "stale_write_leftovers",
    "BOM",
    "MAX_JSON_BYTES",
    "MAX_LINE_BYTES",
    "MAX_TEXT_BYTES",
    "FolderLocked",
    "atomic_write",
    "iter_lines",
    "locked",
    "read_bounded",
    "read_json",
    "read_text_lines",
    "text_lines",
    "write_folder",
    "write_json",
    "write_text",
    "writable_path",
]

BOM = b"\xef\xbb\xbf"  # UTF-8's byte-order mark, dropped at the start of an input

MAX_LINE_BYTES = 1 << 20
"""The longest line a reader takes, its line end not counted (1 MiB)."""

MAX_JSON_BYTES = 64 << 20
"""The largest JSON file ``read_json`` (and a vocabulary) takes (64 MiB)."""

MAX_TEXT_BYTES = 1 << 20
"""The largest text file read whole, such as a TOML config (1 MiB)."""


def shown_names(names: Sequence[str]) -> str:
    """``names`` as a message shows what a folder holds: the first three, then how many
    more (``"a, b, c and 2 more"``)."""
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def folder_list(name: str, folders: object) -> list[Path]:
    """``folders`` as a list of paths: a sequence of folder names (a str or a path alone is
    refused, so a folder named "runs/a" is never read as the folders "r", "u", ...).

    Raises:
        TypeError: ``folders`` is a single name or not a sequence of names.
        ValueError: the sequence is empty.
    """
    if isinstance(folders, str | os.PathLike) or not isinstance(folders, Sequence):
        raise LuongTypeError(f"{name}: expected a sequence of model folders, got {type(folders)}")
    if not folders:
        raise LuongError(f"{name}: expected at least one model folder, got none")
    for folder in folders:
        if not isinstance(folder, str | os.PathLike):
            raise LuongTypeError(f"{name}: expected folder names (str or path), got {type(folder)}")
    return [Path(folder) for folder in folders]


def iter_lines(
    stream: BinaryIO, name: str, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[bytes]:
    """The lines of a binary stream, line ends removed (the module docstring's rule), read one
    at a time; no line is read past ``max_line_bytes``.

    Raises:
        ValueError: ``NAME:LINE: longer than N bytes``, before more of it is read.
    """
    number = 0
    while True:
        # At most the limit and a b"\r\n": a longer line is refused unread.
        line = stream.readline(max_line_bytes + 2)
        if not line:
            return
        number += 1
        if line.endswith(b"\n"):  # only b"\n" ends a line; a lone b"\r" stays inside it
            line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
        if number == 1 and line.startswith(BOM):
            line = line[len(BOM) :]
        if len(line) > max_line_bytes:
            raise LuongError(
                f"{name}:{number}: line longer than {max_line_bytes} bytes; expected a text "
                "file of one sentence a line"
            )
        yield line


def text_lines(stream: BinaryIO, name: str, *, allow_nul: bool = True) -> Iterator[str]:
    """The lines of a binary stream as UTF-8 text (``iter_lines``); with ``allow_nul`` False,
    a line that holds a NUL byte is refused (the sources of a translation: a binary file's
    byte, no text's, which a model would translate as text).

    Raises:
        ValueError: ``NAME:LINE: not valid UTF-8 (...)``, a NUL byte where refused, or a
            line too long.
    """
    for number, line in enumerate(iter_lines(stream, name), start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise LuongError(f"{name}:{number}: not valid UTF-8 ({error.reason})") from None
        if not allow_nul and "\x00" in text:
            raise LuongError(f"{name}:{number}: {nul_problem(line)}")
        yield text


def nul_problem(line: bytes) -> str:
    """What is wrong with a line that holds a NUL byte, and where."""
    return f"a NUL byte (byte {line.index(0) + 1} of the line); expected text, not binary data"


def read_text_lines(path: str | os.PathLike[str], *, allow_nul: bool = True) -> list[str]:
    """The lines of a UTF-8 text file (``text_lines``, ``allow_nul`` as there).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a directory, or a line that is not UTF-8, too long or (without
            ``allow_nul``) holds a NUL byte (``FILE:LINE: ...``).
    """
    name = os.fspath(path)
    try:
        with open(path, "rb") as stream:
            return list(text_lines(stream, name, allow_nul=allow_nul))
    except FileNotFoundError:
        raise FileNotFoundError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise LuongError(f"{name}: is a directory, expected a text file") from None


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
    which is fsynced and renamed over ``path``.

    A symbolic link is written through: its target is replaced (atomically, in the target's
    folder) and the link stays a link. Only a regular file is replaced: a folder, a device
    (``/dev/null``), a FIFO or a socket at ``path`` (or at its link's target) is refused
    before anything is written, since a rename would put a file in its place.

    Raises:
        ValueError: ``path`` (or the file it links to) is not a regular file.
        OSError: the write failed (a full disk), naming ``path``.
    """
    path = writable_path(path)
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


def writable_path(path: str | os.PathLike[str]) -> Path:
    """The file that writing ``path`` replaces: ``path``, or the target of the symbolic
    link(s) ``path`` is (a dangling link: the file it names, created).

    Raises:
        ValueError: that file exists and is not a regular file (a folder, a device, a FIFO,
            a socket), or a loop of links; the message names ``path``.
    """
    given = Path(path)
    target = Path(os.path.realpath(given)) if given.is_symlink() else given
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target
    except OSError as error:  # a loop of links, a folder we may not enter
        raise LuongError(f"{given}: cannot be written ({error.strerror})") from None
    if stat.S_ISREG(mode):
        return target
    shown = f"{given} (a link to {target})" if target != given else str(given)
    raise LuongError(
        f"{shown}: {_kind(mode)}, not a regular file; name a regular file to write (luong "
        "writes a file whole and renames it into place, which would replace this)"
    )


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a special file"


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


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of a file of at most ``limit`` bytes: the size is checked before anything is
    read (a sparse file is refused unread), and no more than ``limit + 1`` bytes are read
    (a device such as ``/dev/zero`` reports no size).

    Raises:
        FileNotFoundError: no such file.
        ValueError: larger than ``limit``, or a directory (the message names the file).
    """
    name = os.fspath(path)
    try:
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            raw = file.read(limit + 1) if size <= limit else b""
    except FileNotFoundError:
        raise FileNotFoundError(f"{name}: missing") from None
    except IsADirectoryError:
        raise LuongError(f"{name}: is a directory, expected a file") from None
    if size > limit or len(raw) > limit:
        shown = f"{size} bytes" if size > limit else f"more than {limit} bytes"
        raise LuongError(f"{name}: {shown}, above the limit of {limit} bytes for such a file")
    return raw


def read_json(path: str | os.PathLike[str], limit: int = MAX_JSON_BYTES) -> Any:
    """Parse a JSON file of at most ``limit`` bytes; a missing, unreadable, oversized or
    malformed file raises naming it.

    Raises:
        FileNotFoundError: no such file.
        ValueError: too large, not UTF-8 or not JSON (the message names the file).
    """
    path = Path(path)
    raw = read_bounded(path, limit)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise LuongError(f"{path}: not valid JSON ({error})") from None
    except RecursionError:
        raise LuongError(f"{path}: not valid JSON (nested too deep)") from None


def write_folder(folder: str | os.PathLike[str], fill: Callable[[Path], None]) -> Path:
    """Build a folder all or nothing: ``fill(tmp)`` writes into a temporary sibling, which is
    renamed to ``folder`` (replacing an older one) once complete; returns the folder written
    (a symbolic link ``folder`` is written through: its target is replaced, the link stays).

    The sibling is ``.partial-NAME.PID.ID``, and its writer holds a lock on the file
    ``.partial-NAME.PID.ID.lock`` beside it until the folder is in place. A writer that was
    killed (``kill -9``) leaves both; the next ``write_folder`` of the same folder removes
    them, and leaves alone a sibling whose writer still holds its lock (another process at
    work). Nothing but these luong names is touched.
    """
    folder = Path(folder)
    if folder.name in ("", ".."):  # '', '.', '..', '/': no name to build beside and rename
        raise LuongError(
            f"{os.fspath(folder)!r}: names no folder of its own; give the folder to write by "
            "its name (out/corpus), as it is built beside its place and renamed into it"
        )
    if folder.is_symlink():
        folder = Path(os.path.realpath(folder))
    folder.parent.mkdir(parents=True, exist_ok=True)
    clear_stale_partials(folder)
    tmp = folder.with_name(f"{PARTIAL}{folder.name}.{os.getpid()}.{uuid.uuid4().hex}")
    lock = tmp.with_name(f"{tmp.name}{LOCK}")
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as error:  # the lock's name is luong's own: name the folder asked for
        raise type(error)(error.errno, error.strerror, os.fspath(folder)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # a fresh name: never held by another
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
    finally:
        # After the rename: a process that finds the lock free finds no folder to remove.
        lock.unlink(missing_ok=True)
        os.close(fd)
    return folder


PARTIAL = ".partial-"  # write_folder's temporary sibling .partial-NAME.PID.ID, and its lock
# beside it, .partial-NAME.PID.ID.lock (LOCK), held while the folder is written


def clear_stale_partials(folder: str | os.PathLike[str]) -> list[Path]:
    """Remove what killed writers of ``folder`` left beside it: each ``.partial-NAME.PID.ID``
    folder (and its ``.lock`` file) whose lock no process holds. A folder of that name with
    no lock file (written by a luong from before the locks) is removed when no process
    ``PID`` runs. Returns the folders removed.
    """
    folder = Path(folder)
    prefix = f"{PARTIAL}{folder.name}."
    try:
        names = {
            entry.name.removesuffix(LOCK)
            for entry in folder.parent.iterdir()
            if entry.name.startswith(prefix)
        }
    except FileNotFoundError:
        return []
    removed = []
    for name in sorted(names):
        match = re.fullmatch(r"(\d+)\.[0-9a-f]{32}", name[len(prefix) :])
        if match is None:
            continue  # another folder's (NAME.x), or not luong's
        partial = folder.with_name(name)
        lock = folder.with_name(f"{name}{LOCK}")
        if lock.exists():
            if _take_lock(lock, partial):
                removed.append(partial)
        elif partial.is_dir() and not partial.is_symlink() and not _running(int(match.group(1))):
            shutil.rmtree(partial, ignore_errors=True)
            removed.append(partial)
    return removed


_WRITE_LEFTOVER = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)\.[0-9a-f]{32}\.tmp")
"""The temporary name ``atomic_write`` gives a file while it writes it."""


def stale_write_leftovers(folder: str | os.PathLike[str]) -> list[Path]:
    """The files of ``folder`` that ``atomic_write`` began and its process, killed (SIGKILL,
    a power cut) before its rename, never finished: named ``.NAME.PID.HEX.tmp`` with PID no
    longer running. None of them is a user's file, and none is a file the folder holds."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(
        path
        for path in folder.iterdir()
        if (match := _WRITE_LEFTOVER.fullmatch(path.name)) and not _running(int(match["pid"]))
    )


def _take_lock(lock: Path, partial: Path) -> bool:
    """Remove ``partial`` and ``lock`` if no process holds ``lock``; False if one does (or
    the lock is gone: its writer finished)."""
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # its writer is at work
        shutil.rmtree(partial, ignore_errors=True)
        lock.unlink(missing_ok=True)
        return True
    finally:
        os.close(fd)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except OverflowError:
        return False
    return True


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
