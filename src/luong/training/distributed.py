"""Data-parallel training across processes: PyTorch's DistributedDataParallel under torchrun.

    torchrun --nproc-per-node 2 -m luong train dates --out runs/dates-ddp

torchrun sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``;
``setup`` reads them and joins the process group (``nccl`` on CUDA, ``gloo`` on the CPU). A
plain ``luong train`` has no ``WORLD_SIZE`` and runs as one process with no group at all.

Each rank takes every ``world``-th batch of the epoch's length-bucketed batch order, so the
effective batch is ``batch_size x world`` and the steps per epoch fall by ``world``. DDP
averages the gradients, so the learning rate is not scaled for you: the linear scaling rule
(``lr x world``, with warm-up) is a good start when ``world`` is large.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from luong.common.devices import resolve_device
from luong.common.errors import LuongError
from luong.config.choices import device_form

T = TypeVar("T")  # a batch, however it is held

__all__ = ["World", "pick_device", "setup", "shard"]

# How long rank 0 waits for the others to join (seconds): the environment variable, or the
# default. torchrun starts every rank at once, so minutes are plenty.
RENDEZVOUS_SECONDS = "LUONG_RENDEZVOUS_SECONDS"
DEFAULT_RENDEZVOUS_SECONDS = "300"


@dataclass(frozen=True)
class World:
    """This process's place among the training processes."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    owns_group: bool = False  # whether ``setup`` created the process group (and ends it)

    @property
    def main(self) -> bool:
        """Rank 0 writes checkpoints, logs, progress bars and metrics, and evaluates."""
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.size > 1

    def broadcast(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank (picklable Python objects, through the group)."""
        if not self.active:
            return value
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def gather(self, value: Any) -> list[Any]:
        """Every rank's ``value``, in rank order, on every rank."""
        if not self.active:
            return [value]
        values: list[Any] = [None] * self.size
        dist.all_gather_object(values, value)
        return values

    def share_weights(self, model: torch.nn.Module) -> None:
        """Copy rank 0's parameters and buffers into every rank's ``model``."""
        if not self.active:
            return
        with torch.no_grad():
            for tensor in model.state_dict().values():
                dist.broadcast(tensor, src=0)

    def reduce_step(
        self, loss: torch.Tensor, norm: torch.Tensor, flag: torch.Tensor
    ) -> tuple[bool, float, bool]:
        """One all-reduce per step: whether loss and gradient norm are finite on every rank,
        the loss averaged over ranks, and whether any rank raised ``flag``."""
        stats = torch.stack([t.detach().float().reshape(()).cpu() for t in (loss, norm, flag)])
        if self.active:
            stats = stats.to(_group_device())
            dist.all_reduce(stats)
            stats = stats.cpu() / self.size
        finite = bool(torch.isfinite(stats[:2]).all())
        return finite, float(stats[0]), bool(stats[2] > 0)

    def close(self) -> None:
        if self.owns_group and dist.is_initialized():
            # A DistributedDataParallel wrapper sits in reference cycles: collect it while its
            # process group still exists, not at interpreter exit (an abort in gloo).
            gc.collect()
            dist.destroy_process_group()


def _group_device() -> torch.device:
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def pick_device(device: str, world: World) -> torch.device:
    """The device of this rank (``luong.common.devices.resolve_device``): under torchrun,
    ``"auto"`` and ``"cuda"`` take the GPU of the rank's local rank; ``"cuda:N"`` is GPU N
    on every rank.

    Raises:
        ValueError: a name of no form, or a device this machine lacks (the message says
            which).
    """
    resolved = resolve_device(device)
    if resolved.type != "cuda" or device_form(device)[1] is not None:
        return resolved
    index = world.local_rank % torch.cuda.device_count()
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def setup(device: str = "auto") -> World:
    """Join the process group torchrun describes, or return a one-process world.

    Raises:
        ValueError: torchrun's environment variables are malformed, or the processes they
            describe did not all join within ``LUONG_RENDEZVOUS_SECONDS`` (default 300).
    """
    try:
        size = int(os.environ.get("WORLD_SIZE", "1"))
        rank = int(os.environ.get("RANK", "0"))
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    except ValueError as error:
        raise LuongError(f"torchrun environment: {error}") from None
    if size <= 1:
        return World()
    if not 0 <= rank < size:
        raise LuongError(f"torchrun environment: RANK {rank} outside WORLD_SIZE {size}")
    if dist.is_initialized():
        return World(dist.get_rank(), dist.get_world_size(), local_rank, owns_group=False)
    kind, index = device_form(device)
    use_cuda = kind == "cuda" or (kind == "auto" and torch.cuda.is_available())
    if use_cuda and torch.cuda.is_available():
        index = local_rank % torch.cuda.device_count() if index is None else index
        torch.cuda.set_device(index)
    store = _rendezvous(rank, size)
    dist.init_process_group(
        backend="nccl" if use_cuda else "gloo", store=store, rank=rank, world_size=size
    )
    return World(rank, size, local_rank, owns_group=True)


def _rendezvous(rank: int, size: int) -> dist.Store:
    """Meet the other ranks at ``MASTER_ADDR:MASTER_PORT`` (``env://``, as
    ``init_process_group`` would) within ``LUONG_RENDEZVOUS_SECONDS``: a ``WORLD_SIZE`` left
    over in the shell of a plain ``luong train`` otherwise waits for ranks that never come.

    Raises:
        ValueError: the ranks did not all join in time, or the variables are missing.
    """
    names = ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT")
    where = " ".join(f"{name}={os.environ.get(name, '(unset)')}" for name in names)
    advice = (
        "for one process, unset WORLD_SIZE, RANK, MASTER_ADDR and MASTER_PORT; for several, "
        "start them all with torchrun"
    )
    if "RANK" not in os.environ:  # torchrun sets it for every process
        raise LuongError(f"torchrun environment ({where}): RANK is missing; {advice}")
    value = os.environ.get(RENDEZVOUS_SECONDS, DEFAULT_RENDEZVOUS_SECONDS)
    try:
        seconds = float(value)
    except ValueError:
        raise LuongError(f"{RENDEZVOUS_SECONDS}: expected seconds, got {value!r}") from None
    try:
        store, _, _ = next(
            dist.rendezvous("env://", rank, size, timeout=timedelta(seconds=seconds))
        )
    except dist.DistStoreError:  # the wait timed out
        raise LuongError(
            f"torchrun environment ({where}): the {size} processes did not all join within "
            f"{seconds:g} s; {advice}"
        ) from None
    except (RuntimeError, ValueError) as error:  # a bad address or port, a missing variable
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise LuongError(f"torchrun environment ({where}): {reason}; {advice}") from None
    # What init_process_group does with the store it meets through: the process group's
    # own (long) timeout from now on, and its keys apart from torchrun's.
    store.set_timeout(dist.default_pg_timeout)
    return dist.PrefixStore("default_pg", store)


def shard(batches: list[T], world: World) -> list[T]:
    """This rank's share of an epoch's batches: every ``size``-th one from ``rank``, after
    dropping the last ``len % size`` so every rank takes the same number of steps."""
    usable = len(batches) - len(batches) % world.size
    return batches[world.rank : usable : world.size]
