"""Where, on how many threads and in what precision a model computes: a device name resolved
on this machine, the CPU threads of the process, and the autocast context of a precision.

    resolve_device("auto")     # CUDA when present, else the CPU
    resolve_device("cuda:1")   # on a machine with one GPU: ValueError, "device cuda:1: only
                               # 1 CUDA device here (cuda:0)"
    with autocast("bf16", device):
        ...                    # matrix products in bfloat16 (torch.autocast)

Every command that loads a model resolves its ``--device`` here first, so a device the
machine lacks is one line before anything is read (``luong translate --device cuda``:
``--device cuda: no CUDA device here (torch.cuda.is_available() is False)``).

Threads: every command that computes takes ``--threads N`` (``use_threads``); without it, a
process computes on ``OMP_NUM_THREADS`` threads when that is set, else on one
(``default_threads``). One, because machines are shared: on two quiet cores a second thread
made a training step 1.0x (dates) to 1.66x (the translation preset) faster, but beside two
busy processes 1.5x slower, and 15x to 29x slower on a busier machine (OpenMP's threads spin
while they wait for each other, and each loses its core in turn); one thread never
collapses (``benchmarks/threads.py``, docs/performance.md).
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Mapping, MutableMapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError
from luong.config.choices import PRECISIONS, device_form

__all__ = [
    "AUTOCAST_DTYPES",
    "KERNEL_CACHE",
    "KERNEL_CACHE_VARIABLE",
    "THREADS_VARIABLE",
    "autocast",
    "available_cpus",
    "bf16_units",
    "check_precision",
    "computes_in",
    "default_threads",
    "keep_compiled_kernels",
    "precision_note",
    "resolve_device",
    "reuse_freed_memory",
    "use_threads",
]

KERNEL_CACHE_VARIABLE = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"
"""oneDNN's environment variable for how many compiled kernels (primitives) it keeps."""

KERNEL_CACHE = 16384
"""The kernels luong asks oneDNN to keep (its default: 1,024)."""

THREADS_VARIABLE = "OMP_NUM_THREADS"
"""The environment variable whose value is the default thread count (OpenMP's own)."""

# The dtype autocast computes in for each precision but fp32 (which runs without autocast).
AUTOCAST_DTYPES: dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_device(device: str, name: str = "device") -> torch.device:
    """The torch device a device name means on this machine, checked: ``"auto"`` is the
    current CUDA device when there is one, else the CPU; ``"cuda"`` the current CUDA device,
    ``"cuda:N"`` the one of index N; ``"mps"`` Apple's GPU.

    Args:
        device: one of the forms of ``luong.config.choices.DEVICES``.
        name: what the messages call it (the command line says ``"--device"``).

    Raises:
        TypeError: ``device`` is not a string.
        ValueError: a name of no form (the message lists them), or a device this machine
            lacks: ``device cuda: no CUDA device here (torch.cuda.is_available() is False)``,
            ``device cuda:3: only 1 CUDA device here (cuda:0)``.
    """
    if not isinstance(device, str):
        raise LuongTypeError(f"{name}: expected a device name (a str), got {type(device).__name__}")
    kind, index = device_form(device, name)
    if kind == "cpu" or (kind == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if kind == "mps":
        if not torch.backends.mps.is_available():
            raise LuongError(
                f"{name} mps: no MPS device here (torch.backends.mps.is_available() is False)"
            )
        return torch.device("mps")
    if not torch.cuda.is_available():
        raise LuongError(
            f"{name} {device}: no CUDA device here (torch.cuda.is_available() is False)"
        )
    count = torch.cuda.device_count()
    if index is None:
        return torch.device("cuda", torch.cuda.current_device())
    if index >= count:
        present = "cuda:0" if count == 1 else f"cuda:0 to cuda:{count - 1}"
        raise LuongError(
            f"{name} {device}: only {count} CUDA device{'s' * (count != 1)} here ({present})"
        )
    return torch.device("cuda", index)


def check_precision(precision: str, device: torch.device, name: str = "precision") -> None:
    """Raise ValueError unless ``precision`` is one of ``PRECISIONS`` and runs on ``device``:
    fp16 is for CUDA alone (its gradient scaler and float16 kernels are CUDA's; on the CPU,
    bf16 has float32's range and needs no scaler)."""
    if precision not in PRECISIONS:
        raise LuongError(f"{name}: expected one of {', '.join(PRECISIONS)}, got {precision!r}")
    if not isinstance(device, torch.device):
        raise LuongTypeError(f"device: expected a torch.device, got {type(device).__name__}")
    if precision == "fp16" and device.type != "cuda":
        raise LuongError(
            f"{name} fp16: needs a CUDA device, and this runs on {device.type}; "
            "use bf16 (or fp32) here"
        )


def bf16_units() -> bool:
    """Whether this CPU multiplies bfloat16 in units of its own: AVX-512 BF16 (its dot
    products: 4.3 to 4.7 times float32's rate on the translation preset's shapes here, one
    thread, docs/performance.md) or AMX. Elsewhere oneDNN converts bfloat16 to float32 and
    back around float32 products, slower than float32 alone."""
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, probe, lambda: False)()) for probe in probes)


def computes_in(precision: str, device: torch.device) -> str:
    """The precision a model asked to compute in ``precision`` on ``device`` computes in:
    the same, but for bf16 on a CPU without bfloat16 units (``bf16_units``), fp32.

    Raises:
        ValueError: ``check_precision``'s.
    """
    check_precision(precision, device)
    if precision == "bf16" and device.type == "cpu" and not bf16_units():
        return "fp32"
    return precision


def precision_note(precision: str, device: torch.device) -> str | None:
    """The line that says a precision asked for is not the one computed in here
    (``computes_in``), or None when it is."""
    if computes_in(precision, device) == precision:
        return None
    return (
        "warning: this CPU has no bfloat16 units (AVX-512 BF16 or AMX), so bf16 would be "
        "slower than fp32 here: computing in fp32"
    )


def autocast(precision: str, device: torch.device) -> AbstractContextManager[Any]:
    """The context a forward pass in ``precision`` runs in on ``device``: ``torch.autocast``
    to bfloat16 (bf16) or float16 (fp16), nothing for fp32, nor for bf16 where it computes in
    fp32 (``computes_in``). Autocast state is per thread: enter it in the thread that runs
    the model.

    Raises:
        ValueError: ``check_precision``'s.
    """
    precision = computes_in(precision, device)
    if precision == "fp32":
        return nullcontext()
    return torch.autocast(device.type, AUTOCAST_DTYPES[precision])


def reuse_freed_memory() -> None:
    """Let glibc's malloc keep the large buffers a process frees for its next allocations
    (``mallopt``: every block from the heap rather than ``mmap``, and the heap's top not
    given back below 1 GiB), as a caching allocator does; elsewhere nothing.

    Why: a training step allocates its logits, their float32 copy and their gradient anew
    (``[N, V]``, 8 to 17 MB each for the translation preset), a beam search its logits and
    log-probabilities at every step (``[k B, V]``: 74 MB for 929 sentences, beam 5, 4,000
    pieces); by default glibc maps each such block afresh and unmaps it when freed, and
    touching the new pages faulted them in one by one: the loss's ``x - max`` took 34 ms of a
    180 ms float32 step, its bf16 copy 27 ms of a 100 ms bf16 step, and a beam-5 decoding of
    devtest faulted 250,000 pages (docs/performance.md, "The allocator"). The heap serves
    blocks of up to 32 MiB (``M_MMAP_THRESHOLD``, glibc's ceiling for it on 64-bit machines)
    and, with ``mmap`` off (``M_MMAP_MAX`` 0), the larger ones too: a thread's arena that
    cannot hold one hands it to the main heap. A process keeps its peak memory instead, as
    PyTorch's own allocators do on a GPU. Calling it again changes nothing."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return
    libc = ctypes.CDLL(None)
    # M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_MMAP_MAX (malloc.h)
    trim_threshold, mmap_threshold, mmap_max = -1, -3, -4
    libc.mallopt(mmap_threshold, 32 << 20)
    libc.mallopt(mmap_max, 0)
    libc.mallopt(trim_threshold, 1 << 30)


def keep_compiled_kernels(environ: MutableMapping[str, str] | None = None) -> None:
    """Let oneDNN keep ``KERNEL_CACHE`` compiled kernels rather than its default 1,024, unless
    ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` is already set in ``environ`` (default
    ``os.environ``). oneDNN reads it when it compiles its first kernel and never again (set
    after one bf16 product, the 1,200 products below took 54 s the second time all the same),
    so it is called before a process's first product: by ``use_threads`` (every computing
    command, before it runs), ``load_model`` (an int8 folder's weights are prepacked as it
    loads), the ``Trainer`` and the ``Translator``.

    Why: bfloat16 and int8 products run through oneDNN, which compiles a kernel for each
    shape it meets, and a training's or a search's batches have thousands of shapes (tokens,
    rows, steps). With 1,024 kept, kernels were evicted and compiled again: on a CPU with AMX
    units, 1,200 bf16 products of distinct shapes took 12 s the first time and 56 s the second
    (16 GB resident), 3.6 s the second time with 16,384 kept (2.2 GB); the translation
    preset's bf16 step over 200 batches seen before, 176 against 128 ms
    (docs/performance.md). float32 products (MKL) compile nothing."""
    target = os.environ if environ is None else environ
    if not isinstance(target, MutableMapping):
        raise LuongTypeError(f"environ: expected a mutable mapping, got {type(target).__name__}")
    target.setdefault(KERNEL_CACHE_VARIABLE, str(KERNEL_CACHE))


def default_threads(environ: Mapping[str, str] | None = None) -> int:
    """The CPU threads a luong process computes on unless told: ``OMP_NUM_THREADS`` of
    ``environ`` (default ``os.environ``) when it is set (the first number of an OpenMP list
    such as ``4,2``), else 1.

    Raises:
        ValueError: ``OMP_NUM_THREADS`` set to something other than a positive integer.
    """
    value = (os.environ if environ is None else environ).get(THREADS_VARIABLE, "").strip()
    if not value:
        return 1
    first = value.split(",")[0].strip()
    if not first.isascii() or not first.isdigit() or int(first) < 1:
        raise LuongError(f"{THREADS_VARIABLE}: expected a positive integer, got {value!r}")
    return int(first)


def available_cpus() -> int:
    """The CPUs this process may run on: its affinity mask (``os.sched_getaffinity``: a
    container's or ``taskset``'s share, not the machine's count), else ``os.cpu_count()``
    where the system has no affinity, at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows: no affinity masks
        return max(1, os.cpu_count() or 1)


def use_threads(threads: int | None = None) -> int:
    """Compute on ``threads`` CPU threads from now on (torch's intra-op threads, for the
    whole process), at most ``available_cpus()``: more threads than CPUs only wait for each
    other (``luong translate --threads 1000`` took twice as long as on one); None:
    ``default_threads()``. Returns the number set (``luong`` says so when it is fewer than
    ``--threads`` asked).

        luong.use_threads(2)   # a quiet machine of your own: the translation preset's
                               # training step 1.66x faster on two cores than on one

    Raises:
        TypeError: ``threads`` not an integer.
        ValueError: ``threads`` below 1.
    """
    if threads is None:
        threads = default_threads()
    threads = min(check_positive_int("threads", threads), available_cpus())
    keep_compiled_kernels()  # before the process's first product: oneDNN reads it only then
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads
