"""``--device``: a device name resolved and checked on this machine (``luong.common.devices``), and
the flag on every command that loads a model.

The machine's devices are stood in for by patching ``torch.cuda`` and ``torch.backends.mps``
(none, one GPU, two GPUs), so each case holds on any machine, with or without a GPU.
"""

from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import small_model

import luong.cli.serve as serve_command
from luong.cli import main
from luong.common import devices
from luong.common.devices import (
    KERNEL_CACHE,
    KERNEL_CACHE_VARIABLE,
    autocast,
    check_precision,
    keep_compiled_kernels,
    resolve_device,
)
from luong.training.distributed import World, pick_device
from luong.translation.translator import Translator

FORMS = "expected auto, cpu, cuda, cuda:N (N a device index, from 0) or mps"
NO_CUDA = "no CUDA device here (torch.cuda.is_available() is False)"


def gpus(monkeypatch: pytest.MonkeyPatch, count: int, mps: bool = False) -> list[int]:
    """Make torch see ``count`` CUDA devices (current: 0) and MPS or not; returns the list
    that ``torch.cuda.set_device`` calls append to."""
    chosen: list[int] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    return chosen


# -- the resolver ------------------------------------------------------------------------------


def test_without_a_gpu_auto_and_cpu_are_the_cpu_and_the_rest_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpus(monkeypatch, 0)
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    for name in ("cuda", "cuda:0", "cuda:1"):
        with pytest.raises(ValueError) as raised:
            resolve_device(name)
        assert str(raised.value) == f"device {name}: {NO_CUDA}"
    with pytest.raises(ValueError) as raised:
        resolve_device("mps", "--device")
    assert str(raised.value) == (
        "--device mps: no MPS device here (torch.backends.mps.is_available() is False)"
    )


def test_with_one_gpu_auto_is_it_and_a_higher_index_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gpus(monkeypatch, 1)
    assert resolve_device("auto") == torch.device("cuda", 0)
    assert resolve_device("cuda") == torch.device("cuda", 0)
    assert resolve_device("cuda:0") == torch.device("cuda", 0)
    with pytest.raises(ValueError) as raised:
        resolve_device("cuda:3", "--device")
    assert str(raised.value) == "--device cuda:3: only 1 CUDA device here (cuda:0)"
    gpus(monkeypatch, 2, mps=True)
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    assert resolve_device("mps") == torch.device("mps")
    with pytest.raises(ValueError) as raised:
        resolve_device("cuda:2")
    assert str(raised.value) == "device cuda:2: only 2 CUDA devices here (cuda:0 to cuda:1)"


@pytest.mark.parametrize(
    "name", ["gpu", "CPU", "", "cuda:", "cuda:x", "cuda:-1", "cuda:1.0", "cuda:N", " cpu", "mps:0"]
)
def test_a_name_of_no_form_lists_the_forms(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    gpus(monkeypatch, 1, mps=True)  # the form is refused whatever the machine has
    with pytest.raises(ValueError) as raised:
        resolve_device(name, "--device")
    assert str(raised.value) == f"--device: {FORMS}, got {name!r}"


def test_a_device_that_is_no_string_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="device: expected a device name \\(a str\\), got int"):
        resolve_device(0)  # type: ignore[arg-type]


def test_under_torchrun_cuda_is_the_local_ranks_gpu_and_cuda_n_is_gpu_n(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chosen = gpus(monkeypatch, 2)
    rank_one = World(rank=1, size=2, local_rank=1)
    assert pick_device("cuda", rank_one) == torch.device("cuda", 1)
    assert pick_device("auto", rank_one) == torch.device("cuda", 1)
    assert pick_device("cuda:0", rank_one) == torch.device("cuda", 0)
    assert chosen == [1, 1]  # set_device for the local rank's GPU alone
    assert pick_device("cpu", rank_one) == torch.device("cpu")


def test_fp16_is_for_cuda_alone() -> None:
    check_precision("fp16", torch.device("cuda", 0))
    check_precision("bf16", torch.device("cpu"))
    check_precision("fp32", torch.device("mps"))
    with pytest.raises(ValueError) as raised:
        check_precision("fp16", torch.device("cpu"), "--precision")
    assert str(raised.value) == (
        "--precision fp16: needs a CUDA device, and this runs on cpu; use bf16 (or fp32) here"
    )
    with pytest.raises(ValueError, match="precision: expected one of fp32, bf16, fp16, got 'fp8'"):
        check_precision("fp8", torch.device("cpu"))


def test_autocast_is_on_in_bf16_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devices, "bf16_units", lambda: True)  # the bf16 path on any CPU
    cpu = torch.device("cpu")
    with autocast("fp32", cpu):
        assert not torch.is_autocast_enabled("cpu")
    with autocast("bf16", cpu):
        assert torch.is_autocast_enabled("cpu")
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16
    with pytest.raises(ValueError, match="fp16: needs a CUDA device"):
        autocast("fp16", cpu)


# -- the commands --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two model folders of one architecture (two seeds), outside any run."""
    root = tmp_path_factory.mktemp("device")
    for seed in (0, 1):
        small_model(seed).save_pretrained(root / f"m{seed}")
    return root / "m0", root / "m1"


def command_lines(tmp: Path, first: Path, second: Path) -> dict[str, list[str]]:
    """Each command that loads a model, with its arguments (before ``--device``)."""
    (tmp / "in.txt").write_text("abc\ncab\n", encoding="utf-8")
    (tmp / "pairs.tsv").write_text("abc\t210\ncab\t102\n", encoding="utf-8")
    return {
        "translate": ["translate", str(first), "--input", str(tmp / "in.txt")],
        "ensemble": ["translate", str(first), str(second), "--input", str(tmp / "in.txt")],
        "eval": ["eval", str(first), "--data", str(tmp / "pairs.tsv")],
        "average": ["average", str(first), str(second), "--out", str(tmp / "avg")],
        "plot": ["plot", str(first), "abc", "--out", str(tmp / "plot.png")],
        "plot-scores": ["plot-scores", str(first), "--text", "abc", "--out", str(tmp / "s.png")],
        "serve": ["serve", str(first), "--port", "0"],
    }


COMMANDS = ["translate", "ensemble", "eval", "average", "plot", "plot-scores", "serve"]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_missing_device_is_one_line_before_the_models_load(
    command: str,
    folders: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gpus(monkeypatch, 0)
    loaded: list[Any] = []
    monkeypatch.setattr(
        "luong.model.seq2seq.Seq2Seq.from_pretrained", lambda *args, **kwargs: loaded.append(args)
    )
    args = command_lines(tmp_path, *folders)[command]
    assert main([*args, "--device", "cuda"]) == 1
    out, err = capsys.readouterr()
    assert err == f"luong: error: --device cuda: {NO_CUDA}\n" and out == ""
    assert main([*args, "--device", "cuda:1"]) == 1
    assert capsys.readouterr().err == f"luong: error: --device cuda:1: {NO_CUDA}\n"
    assert loaded == []  # refused before any model was read
    assert not (tmp_path / "avg").exists() and not (tmp_path / "plot.png").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_device_name_of_no_form_is_a_usage_error(
    command: str, folders: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = command_lines(tmp_path, *folders)[command]
    with pytest.raises(SystemExit) as exited:
        main([*args, "--device", "gpu"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].endswith(f"error: argument --device: {FORMS}, got 'gpu'"), err


def test_train_refuses_a_device_name_of_no_form_and_a_missing_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gpus(monkeypatch, 0)
    args = ["train", "dates", "--out", str(tmp_path / "run"), "--n-train", "40"]
    with pytest.raises(SystemExit) as exited:
        main([*args, "--device", "cuda:x"])
    assert exited.value.code == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith(f"error: argument --device: {FORMS}, got 'cuda:x'")
    )
    assert main([*args, "--device", "cuda:0"]) == 1
    assert capsys.readouterr().err == f"luong: error: device cuda:0: {NO_CUDA}\n"
    assert not (tmp_path / "run").exists()


def test_device_cpu_works_on_every_command(
    folders: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gpus(monkeypatch, 0)
    lines = command_lines(tmp_path, *folders)
    for command in ("translate", "ensemble", "eval"):
        assert main(lines[command]) == 0  # auto: the CPU here
        expected = capsys.readouterr().out
        assert main([*lines[command], "--device", "cpu"]) == 0
        assert capsys.readouterr().out == expected != "", command
    assert main([*lines["average"], "--device", "cpu"]) == 0
    assert "averaged 2 checkpoints (m0, m1) into" in capsys.readouterr().out
    assert (tmp_path / "avg" / "model.safetensors").is_file()
    for command, png in (("plot", "plot.png"), ("plot-scores", "s.png")):
        assert main([*lines[command], "--device", "cpu"]) == 0
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    served: list[Any] = []
    monkeypatch.setattr(serve_command, "create_app", lambda models, **kw: served.extend(models))
    monkeypatch.setattr(serve_command.uvicorn.Server, "run", lambda self: None)
    assert main([*lines["serve"], "--device", "cpu"]) == 0
    assert [m.translator.model.device for m in served] == [torch.device("cpu")]


# -- oneDNN's kernels kept (issue 50) ---------------------------------------------------------


def test_keep_compiled_kernels_asks_onednn_to_keep_more_than_its_default() -> None:
    environ: dict[str, str] = {}
    keep_compiled_kernels(environ)
    assert environ == {KERNEL_CACHE_VARIABLE: "16384"}
    assert KERNEL_CACHE_VARIABLE == "ONEDNN_PRIMITIVE_CACHE_CAPACITY"


def test_keep_compiled_kernels_leaves_a_users_setting() -> None:
    environ = {KERNEL_CACHE_VARIABLE: "64", "OTHER": "x"}
    keep_compiled_kernels(environ)
    assert environ == {KERNEL_CACHE_VARIABLE: "64", "OTHER": "x"}


def test_keep_compiled_kernels_refuses_what_is_no_mapping() -> None:
    with pytest.raises(TypeError, match="environ: expected a mutable mapping, got list"):
        keep_compiled_kernels([])  # type: ignore[arg-type]


def test_a_translator_sets_the_kernel_cache_before_it_decodes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(KERNEL_CACHE_VARIABLE, raising=False)
    Translator(small_model())
    assert os.environ[KERNEL_CACHE_VARIABLE] == str(KERNEL_CACHE)


def test_use_threads_sets_the_kernel_cache_before_a_command_computes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # oneDNN reads the variable at its first kernel only: every computing command's first
    # call (luong.cli's main) is use_threads.
    monkeypatch.delenv(KERNEL_CACHE_VARIABLE, raising=False)
    devices.use_threads(1)
    assert os.environ[KERNEL_CACHE_VARIABLE] == str(KERNEL_CACHE)


# -- freed memory kept (issue 50) -------------------------------------------------------------


class _Mallinfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (malloc.h, glibc 2.33 on): hblkhd, the bytes in blocks
    that malloc mapped with mmap of their own."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _mapped_bytes() -> int:
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _Mallinfo2
    return int(libc.mallinfo2().hblkhd)


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc"
)
def test_reuse_freed_memory_serves_a_search_steps_logits_from_the_heap() -> None:
    """A beam search's ``[k B, V]`` logits (74 MB for devtest at beam 5) are above the 32 MiB
    that M_MMAP_THRESHOLD can reach: with mmap off they come from the heap, whose freed pages
    the next step reuses, instead of a mapping of their own that is faulted in page by page
    and unmapped when freed."""
    devices.reuse_freed_memory()
    before = _mapped_bytes()
    logits = torch.empty(4644, 4000)  # 74 MB
    assert _mapped_bytes() == before  # no block of its own
    logits.fill_(0.5)
    assert float(logits.sum()) == 4644 * 4000 * 0.5
