"""safetensors files, written all or nothing and read with errors that name them: a model's
weights, a checkpoint's optimizer state (``luong.common.files``' rules: a temporary name, fsync,
rename; nothing is ever pickled).

Apart from ``luong.common.files`` because it imports torch (``safetensors.torch``), which the
command line does not import before a command runs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file
from torch import Tensor

from luong.common.errors import LuongError
from luong.common.files import atomic_write

__all__ = [
    "read_tensor_metadata",
    "read_tensor_shapes",
    "read_tensors",
    "save_tensors",
    "write_tensors",
]


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
        raise LuongError(f"{path}: not a readable safetensors file ({error})") from None


def read_tensor_shapes(path: str | os.PathLike[str]) -> dict[str, tuple[int, ...]]:
    """The name and shape of every tensor in a safetensors file, from its header alone (no
    tensor is read), so a model can be checked against them before it is built.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a readable safetensors file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing")
    try:
        with safe_open(str(path), framework="pt") as file:
            names = file.keys()  # noqa: SIM118  (safe_open is not iterable)
            return {name: tuple(file.get_slice(name).get_shape()) for name in names}
    except (SafetensorError, OSError, ValueError) as error:
        raise LuongError(f"{path}: not a readable safetensors file ({error})") from None


def read_tensor_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """The metadata (string keys and values) of a safetensors file's header.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a readable safetensors file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing")
    try:
        with safe_open(str(path), framework="pt") as file:
            return dict(file.metadata() or {})
    except (SafetensorError, OSError, ValueError) as error:
        raise LuongError(f"{path}: not a readable safetensors file ({error})") from None
