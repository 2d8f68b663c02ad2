"""A dynamic batcher: requests that arrive together are run together, on one worker thread.

A request is a key and a list of items (the key holds what items must share to run in one
call: decoding options, say). ``submit`` queues it and returns a future at once. The worker
takes the oldest request, waits up to ``max_wait`` seconds from its arrival for more with the
same key, then runs all of them (up to ``max_batch`` items, whole requests only) in one call
of ``run(key, items)`` and hands each request its own slice of the results, in order. While
a call runs, new requests queue; the next call takes them as soon as it ends, whatever
``max_wait`` (they have waited the call out), so under load the batches fill by themselves.
Requests of other keys wait their turn.

``close`` stops taking requests, runs the queued ones (a graceful shutdown drains) and joins
the worker. Nothing of luong is imported: the batcher knows items, not models.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Generic, TypeVar

from luong.common.checks import check_positive_int
from luong.common.errors import LuongError, LuongTypeError

__all__ = ["Batcher", "BatcherStats"]

K = TypeVar("K", bound=Hashable)
I = TypeVar("I")  # noqa: E741
O = TypeVar("O")  # noqa: E741


@dataclass(frozen=True)
class BatcherStats:
    """What the worker has done so far."""

    requests: int  # requests run (whole, each in one call)
    batches: int  # calls of ``run``
    merged: int  # calls that ran more than one request
    items: int  # items run
    largest: int  # the most requests one call ran


@dataclass
class _Request(Generic[K, I, O]):
    key: K
    items: list[I]
    future: Future[list[O]]
    arrived: float


class Batcher(Generic[K, I, O]):
    """Run ``run(key, items) -> results`` (one result per item, in order) on batches of
    requests that share a key, on a worker thread started here.

    Args:
        run: the batched function; what it raises goes to every request of the call.
        max_batch: the most items a call takes (a request larger than it runs alone).
        max_wait: seconds the oldest request waits for company (0: none; it still merges
            with what queued while the worker was busy).
        name: the worker thread's name.

    Raises:
        TypeError: ``run`` is not callable.
        ValueError: ``max_batch < 1`` or ``max_wait`` negative or not finite.
    """

    def __init__(
        self,
        run: Callable[[K, list[I]], list[O]],
        *,
        max_batch: int = 64,
        max_wait: float = 0.005,
        name: str = "luong-batcher",
    ) -> None:
        if not callable(run):
            raise LuongTypeError(f"run: expected a callable, got {type(run).__name__}")
        check_positive_int("max_batch", max_batch)
        if (
            isinstance(max_wait, bool)
            or not isinstance(max_wait, int | float)
            or not 0 <= max_wait < float("inf")
        ):
            raise LuongError(
                f"max_wait: expected a finite number of seconds >= 0, got {max_wait!r}"
            )
        self._run = run
        self.max_batch = max_batch
        self.max_wait = float(max_wait)
        self._pending: list[_Request[K, I, O]] = []
        self._changed = threading.Condition()
        self._closed = False
        self._stats = BatcherStats(0, 0, 0, 0, 0)
        self._call_ended = -float("inf")  # when the last call ended (time.monotonic)
        self._worker = threading.Thread(target=self._loop, name=name, daemon=True)
        self._worker.start()

    @property
    def stats(self) -> BatcherStats:
        with self._changed:
            return self._stats

    @property
    def queued(self) -> int:
        """Requests waiting for the worker (not yet in a call)."""
        with self._changed:
            return len(self._pending)

    @property
    def closed(self) -> bool:
        with self._changed:
            return self._closed

    def submit(self, key: K, items: Sequence[I]) -> Future[list[O]]:
        """Queue a request; its future gets ``run``'s results for ``items``, in order (an
        empty list at once for no items), or the exception ``run`` raised.

        Raises:
            TypeError: ``items`` is not a sequence.
            RuntimeError: the batcher is closed.
        """
        if isinstance(items, str) or not isinstance(items, Sequence):
            raise LuongTypeError(f"items: expected a sequence, got {type(items).__name__}")
        future: Future[list[O]] = Future()
        if not items:
            future.set_result([])
            return future
        with self._changed:
            if self._closed:
                raise RuntimeError("the batcher is closed: it takes no more requests")
            self._pending.append(_Request(key, list(items), future, time.monotonic()))
            self._changed.notify_all()
        return future

    def close(self, timeout: float | None = None) -> None:
        """Take no more requests, run those queued, and wait for the worker to end."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._worker.join(timeout)

    def _loop(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            self._call(batch)

    def _next_batch(self) -> list[_Request[K, I, O]] | None:
        """The next requests to run together; None once closed and drained."""
        with self._changed:
            while not self._pending and not self._closed:
                self._changed.wait()
            if not self._pending:
                return None
            first = self._pending[0]
            # A request that queued while a call ran has waited that call out: it runs now,
            # with what queued beside it, however long max_wait is.
            waited = first.arrived <= self._call_ended
            deadline = first.arrived + (0.0 if waited else self.max_wait)
            while not self._closed and self._waiting_items(first.key) < self.max_batch:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            batch: list[_Request[K, I, O]] = []
            size = 0
            for request in self._pending:
                if request.key != first.key:
                    continue
                if batch and size + len(request.items) > self.max_batch:
                    break
                batch.append(request)
                size += len(request.items)
            taken = {id(request) for request in batch}
            self._pending = [r for r in self._pending if id(r) not in taken]
            return batch

    def _waiting_items(self, key: K) -> int:
        return sum(len(r.items) for r in self._pending if r.key == key)

    def _call(self, batch: list[_Request[K, I, O]]) -> None:
        items = [item for request in batch for item in request.items]
        failed: Exception | None = None
        try:
            results = self._run(batch[0].key, items)
            if len(results) != len(items):
                raise RuntimeError(f"run gave {len(results)} results for {len(items)} items")
        except Exception as error:  # every waiting request hears of it
            failed = error
        # The counters first: a client that has its answer and then asks /health sees its
        # request counted.
        with self._changed:
            self._call_ended = time.monotonic()
            s = self._stats
            self._stats = BatcherStats(
                requests=s.requests + len(batch),
                batches=s.batches + 1,
                merged=s.merged + (len(batch) > 1),
                items=s.items + len(items),
                largest=max(s.largest, len(batch)),
            )
        if failed is not None:
            for request in batch:
                request.future.set_exception(failed)
            return
        start = 0
        for request in batch:
            request.future.set_result(results[start : start + len(request.items)])
            start += len(request.items)
