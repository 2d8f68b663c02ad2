"""Tests of ``luong.common.files`` and ``luong.common.tensor_files``: files written all or nothing,
bounded reads, the one rule for lines, JSON and safetensors round trips, the folder lock and
``folder_list``.

Oracles: a write that fails (an exception in the middle, a real file-size limit, an
interrupt) leaves the previous file whole and no temporary file behind; a round trip gives
back what was written (the JSON bytes as written, every tensor bit for bit); the lines of a
table of byte strings, against the module docstring's rule; the exact error messages, which
name the file (and the line).
"""

from __future__ import annotations

import errno
import fcntl
import io
import json
import os
import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

from luong.common.files import (
    BOM,
    MAX_JSON_BYTES,
    MAX_LINE_BYTES,
    FolderLocked,
    atomic_write,
    folder_list,
    iter_lines,
    locked,
    read_bounded,
    read_json,
    read_text_lines,
    text_lines,
    write_folder,
    write_json,
    write_text,
)
from luong.common.folder_files import LOCK
from luong.common.tensor_files import read_tensor_shapes, read_tensors, write_tensors


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """No file of this process may grow past ``limit`` bytes (a full disk, as a write sees
    it: the write fails with EFBIG; SIGXFSZ, which would kill the process, is ignored)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


def names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


# --- atomic writes -------------------------------------------------------------------------------


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("old")

    def fail(tmp: Path) -> None:
        tmp.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, fail)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_a_failed_write_names_the_final_file_not_the_temporary_one(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("old")

    def no_space(tmp: Path) -> None:
        tmp.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")  # as write() raises it: no name

    with pytest.raises(OSError) as raised:
        atomic_write(path, no_space)
    assert (raised.value.errno, raised.value.filename) == (errno.ENOSPC, str(path))
    assert str(raised.value) == f"[Errno 28] No space left on device: '{path}'"

    def temporary_named(tmp: Path) -> None:
        raise OSError(errno.EIO, "Input/output error", str(tmp))

    with pytest.raises(OSError) as raised:
        atomic_write(path, temporary_named)
    assert (raised.value.errno, raised.value.filename) == (errno.EIO, str(path))

    def another_file_named(tmp: Path) -> None:
        (tmp_path / "source.bin").read_bytes()  # the error is about the file read

    with pytest.raises(FileNotFoundError) as missing:
        atomic_write(path, another_file_named)
    assert missing.value.filename == str(tmp_path / "source.bin")
    assert path.read_text() == "old" and names(tmp_path) == ["f.txt"]


def test_an_interrupt_in_the_middle_of_a_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_text("old")

    def interrupted(tmp: Path) -> None:
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, interrupted)
    assert path.read_text() == "old" and names(tmp_path) == ["f.txt"]


def test_writes_past_a_file_size_limit_fail_whole_naming_the_file(tmp_path: Path) -> None:
    text, tensors, folder = tmp_path / "t.txt", tmp_path / "w.safetensors", tmp_path / "best"
    write_text(text, "old")
    write_tensors(tensors, {"w": torch.ones(3)}, {"format": "old"})
    write_folder(folder, lambda tmp: (tmp / "a").write_text("old"))
    with file_size_limit(512):
        with pytest.raises(OSError) as raised:
            write_text(text, "x" * 4096)
        assert (raised.value.errno, raised.value.filename) == (errno.EFBIG, str(text))
        # safetensors reports it in its own words; the error is an OSError all the same.
        with pytest.raises(OSError) as raised:
            write_tensors(tensors, {"w": torch.zeros(4096)}, {"format": "new"})
        assert (raised.value.errno, raised.value.filename) == (errno.EFBIG, str(tensors))
        with pytest.raises(OSError) as raised:
            write_folder(folder, lambda tmp: (tmp / "a").write_text("y" * 4096))
        assert raised.value.errno == errno.EFBIG
    assert text.read_text() == "old"
    assert torch.equal(read_tensors(tensors)["w"], torch.ones(3))
    assert (folder / "a").read_text() == "old"
    assert names(tmp_path) == ["best", "t.txt", "w.safetensors"]
    assert names(folder) == ["a"]


def test_written_files_get_the_umask_permissions(tmp_path: Path) -> None:
    # Not the 0600 of mkstemp, nor the owner-only files safetensors creates.
    with umask(0o027):
        write_text(tmp_path / "a.txt", "a")
        write_json(tmp_path / "b.json", {"b": 1})
        write_tensors(tmp_path / "c.safetensors", {"c": torch.zeros(2)}, {})
        write_folder(tmp_path / "d", lambda tmp: (tmp / "e").write_text("e"))
    for name in ("a.txt", "b.json", "c.safetensors", "d/e"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o640, name
    assert (tmp_path / "d").stat().st_mode & 0o777 == 0o750


# --- folders -------------------------------------------------------------------------------------


def test_write_folder_replaces_a_folder_whole(tmp_path: Path) -> None:
    folder = tmp_path / "best"
    write_folder(folder, lambda tmp: (tmp / "a").write_text("1"))
    with pytest.raises(RuntimeError):
        write_folder(folder, lambda tmp: ((tmp / "a").write_text("2"), _raise()))
    assert (folder / "a").read_text() == "1"
    write_folder(folder, lambda tmp: (tmp / "b").write_text("3"))
    assert sorted(p.name for p in folder.iterdir()) == ["b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best"]


def _raise() -> None:
    raise RuntimeError("cut short")


def test_write_folder_makes_its_parents_and_survives_an_interrupt(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b" / "best"
    assert write_folder(folder, lambda tmp: (tmp / "x").write_text("1")) == folder
    with pytest.raises(KeyboardInterrupt):
        write_folder(folder, lambda tmp: ((tmp / "x").write_text("2"), _interrupt()))
    assert (folder / "x").read_text() == "1"
    assert names(folder.parent) == ["best"]  # no .partial- or .old- folder left


def _interrupt() -> None:
    raise KeyboardInterrupt


def test_locked_keeps_a_folder_to_one_holder_at_a_time(tmp_path: Path) -> None:
    with locked(tmp_path) as path:
        assert path == tmp_path / LOCK
        assert path.read_text() == f"{os.getpid()}\n"
        # flock belongs to an open file: a second open, even in this process, is refused.
        with pytest.raises(FolderLocked) as raised, locked(tmp_path):
            pass
        assert raised.value.pid == str(os.getpid())
        assert str(raised.value) == f"{path}: held by process {os.getpid()}"
        assert isinstance(raised.value, OSError)
    # Released at the end of the block, also when the block raises; the file stays.
    with pytest.raises(ValueError, match="inside"), locked(tmp_path):
        raise ValueError("inside")
    with locked(tmp_path):
        pass
    assert (tmp_path / LOCK).read_text() == f"{os.getpid()}\n"


def test_a_lock_held_without_a_pid_is_named_with_a_question_mark(tmp_path: Path) -> None:
    fd = os.open(tmp_path / LOCK, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(FolderLocked) as raised, locked(tmp_path):
            pass
        assert (raised.value.pid, str(raised.value)) == (
            "",
            f"{tmp_path / LOCK}: held by process ?",
        )
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("folders", "error", "message"),
    [
        ("runs/a", TypeError, "models: expected a sequence of model folders, got <class 'str'>"),
        (
            Path("runs/a"),
            TypeError,
            "models: expected a sequence of model folders, got <class 'pathlib.PosixPath'>",
        ),
        (3, TypeError, "models: expected a sequence of model folders, got <class 'int'>"),
        ([], ValueError, "models: expected at least one model folder, got none"),
        (["a", 3], TypeError, "models: expected folder names (str or path), got <class 'int'>"),
        ([b"a"], TypeError, "models: expected folder names (str or path), got <class 'bytes'>"),
    ],
)
def test_folder_list_refuses_a_single_name_and_names_what_came(
    folders: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        folder_list("models", folders)
    assert str(raised.value) == message


def test_folder_list_gives_paths_in_order() -> None:
    assert folder_list("models", ("b", Path("a"), "b")) == [Path("b"), Path("a"), Path("b")]


# --- bounded reads -------------------------------------------------------------------------------


def test_read_bounded_takes_the_limit_and_refuses_one_byte_more(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"12345678")
    assert read_bounded(path, 8) == b"12345678"
    with pytest.raises(ValueError) as raised:
        read_bounded(path, 7)
    assert str(raised.value) == f"{path}: 8 bytes, above the limit of 7 bytes for such a file"


def test_read_bounded_refuses_a_sparse_file_unread_and_dev_zero_after_the_limit(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sparse.json"
    with open(path, "wb") as file:
        file.truncate(2**40)  # a terabyte, all of it a hole: reading it would never end
    with pytest.raises(ValueError) as raised:
        read_bounded(path, MAX_JSON_BYTES)
    assert str(raised.value) == (
        f"{path}: 1099511627776 bytes, above the limit of 67108864 bytes for such a file"
    )
    with pytest.raises(ValueError) as raised:  # a device reports no size
        read_bounded("/dev/zero", 16)
    assert (
        str(raised.value)
        == "/dev/zero: more than 16 bytes, above the limit of 16 bytes for such a file"
    )


def test_read_bounded_names_a_missing_file_or_a_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as missing:
        read_bounded(tmp_path / "none", 10)
    assert str(missing.value) == f"{tmp_path}/none: missing"
    with pytest.raises(ValueError) as folder:
        read_bounded(tmp_path, 10)
    assert str(folder.value) == f"{tmp_path}: is a directory, expected a file"


# --- lines ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        (b"", []),
        (b"\n", [""]),
        (b"a", ["a"]),  # no final newline: nothing lost
        (b"a\n", ["a"]),  # a final newline ends the last line, no empty line after it
        (b"a\n\n", ["a", ""]),
        (b"\n\na", ["", "", "a"]),
        (b"a\r\nb\r\n", ["a", "b"]),  # \r\n is one line end
        (b"a\r\nb\nc", ["a", "b", "c"]),  # mixed
        (b"a\rb\n", ["a\rb"]),  # a lone \r is a character of its line
        (b"a\r", ["a\r"]),  # also at the very end
        (b"a\r\r\n", ["a\r"]),  # only the \r just before \n belongs to the line end
        (BOM + b"a\n", ["a"]),  # a byte-order mark at the start is dropped
        (BOM + b"\n", [""]),
        (b"a\n" + BOM + b"b\n", ["a", "\ufeffb"]),  # ... only there
        (b"a\x0bb\x0cc\x1cd\n", ["a\x0bb\x0cc\x1cd"]),  # str.splitlines' breaks are not ours
        ("é\u2028x\u0085y\n".encode(), ["é\u2028x\u0085y"]),
    ],
)
def test_the_one_rule_for_lines(data: bytes, lines: list[str], tmp_path: Path) -> None:
    assert list(text_lines(io.BytesIO(data), "f")) == lines
    assert list(iter_lines(io.BytesIO(data), "f")) == [line.encode() for line in lines]
    path = tmp_path / "in.txt"
    path.write_bytes(data)
    assert read_text_lines(path) == lines


def test_a_line_may_hold_the_limit_and_no_more_and_is_refused_unread() -> None:
    limit = 4
    assert list(iter_lines(io.BytesIO(b"abcd\r\nabcd\nab\rc"), "f", limit)) == [
        b"abcd",
        b"abcd",
        b"ab\rc",
    ]
    for data, line in ((b"abcde\n", 1), (b"ok\nabc\rd\n", 2), (b"ok\r\nok\nabcde", 3)):
        with pytest.raises(ValueError) as raised:
            list(iter_lines(io.BytesIO(data), "in.txt", limit))
        assert str(raised.value) == (
            f"in.txt:{line}: line longer than 4 bytes; expected a text file of one sentence a line"
        )
    # An endless line: no more than the limit and a line end is read before the refusal.
    stream = io.BytesIO(b"x" * (MAX_LINE_BYTES * 8))
    with pytest.raises(ValueError, match=r"^stdin:1: line longer than 1048576 bytes"):
        list(iter_lines(stream, "stdin"))
    assert stream.tell() == MAX_LINE_BYTES + 2


def test_text_lines_names_the_line_that_is_not_utf8(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as raised:
        list(text_lines(io.BytesIO(b"ok\n\xffx\n"), "in.txt"))
    assert str(raised.value) == "in.txt:2: not valid UTF-8 (invalid start byte)"
    path = tmp_path / "in.txt"
    path.write_bytes("ok\né\n".encode() + b"\xc3\n")
    with pytest.raises(ValueError) as raised:
        read_text_lines(path)
    assert str(raised.value) == f"{path}:3: not valid UTF-8 (unexpected end of data)"


def test_read_text_lines_names_a_missing_file_or_a_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as missing:
        read_text_lines(tmp_path / "none.txt")
    assert str(missing.value) == f"{tmp_path}/none.txt: no such file"
    with pytest.raises(ValueError) as folder:
        read_text_lines(tmp_path)
    assert str(folder.value) == f"{tmp_path}: is a directory, expected a text file"


# --- JSON ----------------------------------------------------------------------------------------


def test_json_round_trip_keeps_the_text_as_written(tmp_path: Path) -> None:
    data = {
        "symbols": ["é", "²", "\u0301", "€", "\t"],
        "n": [1, 2.5, None, True],
        "nested": {"a": {}},
    }
    path = tmp_path / "v.json"
    write_json(path, data)
    assert read_json(path) == data
    raw = path.read_bytes()
    assert "é".encode() in raw and b"\\u00e9" not in raw  # non-ASCII written as is
    assert raw == (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode()
    write_json(path, [])  # replaced whole
    assert path.read_text() == "[]\n"


JSON_ERRORS = [
    (b'{"a": 1,}', "Expecting property name enclosed in double quotes: line 1 column 9 (char 8)"),
    (b'{"a": "\xff"}', "'utf-8' codec can't decode byte 0xff in position 7: invalid start byte"),
    (b"", "Expecting value: line 1 column 1 (char 0)"),
    (b"[" * 100_000 + b"]" * 100_000, "nested too deep"),
]


@pytest.mark.parametrize(("content", "problem"), JSON_ERRORS)
def test_read_json_names_the_file_and_the_problem(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "v.json"
    path.write_bytes(content)
    with pytest.raises(ValueError) as raised:
        read_json(path)
    assert str(raised.value) == f"{path}: not valid JSON ({problem})"


def test_read_json_takes_its_limit_and_no_byte_more(tmp_path: Path) -> None:
    path = tmp_path / "v.json"
    path.write_bytes(b"[" + b"1," * 20 + b"1]")  # 43 bytes
    assert read_json(path, limit=43) == [1] * 21
    with pytest.raises(ValueError) as raised:
        read_json(path, limit=42)
    assert str(raised.value) == f"{path}: 43 bytes, above the limit of 42 bytes for such a file"


def test_read_json_of_no_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as missing:
        read_json(tmp_path / "v.json")
    assert str(missing.value) == f"{tmp_path}/v.json: missing"


# --- safetensors ---------------------------------------------------------------------------------


def test_tensors_round_trip_bit_for_bit_with_their_metadata(tmp_path: Path) -> None:
    gen = torch.Generator().manual_seed(0)
    tensors = {
        "w": torch.randn(3, 5, generator=gen),
        "w_t": torch.randn(5, 3, generator=gen).t(),  # not contiguous: saved as a copy
        "double": torch.randn(4, generator=gen, dtype=torch.float64),
        "ids": torch.tensor([0, -1, 2**62], dtype=torch.int64),
        "mask": torch.tensor([True, False]),
        "half": torch.randn(2, 2, generator=gen).bfloat16(),
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0, 4),
    }
    path = tmp_path / "m.safetensors"
    write_tensors(path, tensors, {"format": "luong", "note": "é"})
    loaded = read_tensors(path)
    assert loaded.keys() == tensors.keys()
    for name, tensor in tensors.items():
        assert loaded[name].dtype == tensor.dtype and loaded[name].shape == tensor.shape, name
        assert torch.equal(loaded[name], tensor), name
    assert read_tensor_shapes(path) == {name: tuple(t.shape) for name, t in tensors.items()}
    with safe_open(str(path), framework="pt") as file:
        assert file.metadata() == {"format": "luong", "note": "é"}
    assert names(tmp_path) == ["m.safetensors"]


def test_files_that_are_not_safetensors_are_named(tmp_path: Path) -> None:
    whole = tmp_path / "whole.safetensors"
    write_tensors(whole, {"w": torch.ones(64)}, {})
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(whole.read_bytes()[:-10])  # the last 10 bytes of the data missing
    other = tmp_path / "config.json"
    other.write_text('{"a": 1}')
    for path in (cut, other):  # the header checks that the data is all there, too
        for read in (read_tensors, read_tensor_shapes):
            with pytest.raises(ValueError, match=f"^{path}: not a readable safetensors file"):
                read(path)
    for read in (read_tensors, read_tensor_shapes):
        with pytest.raises(FileNotFoundError) as missing:
            read(tmp_path / "none.safetensors")
        assert str(missing.value) == f"{tmp_path}/none.safetensors: missing"
        with pytest.raises(FileNotFoundError):
            read(tmp_path)  # a folder is no tensor file


def test_a_folder_that_cannot_be_written_is_named_not_its_lock() -> None:
    """``luong corpus --out /proc/cx`` said ``No such file or directory:
    '/proc/.partial-cx.17127.028c6f....lock'``, a name of luong's own; now the folder asked for."""
    with pytest.raises(FileNotFoundError) as raised:
        write_folder(Path("/proc") / "cx", lambda tmp: None)
    assert str(raised.value) == "[Errno 2] No such file or directory: '/proc/cx'"
