"""The dynamic batcher (``luong.service.batcher``), without HTTP: requests that arrive together run
in one call, each gets its own results in order, keys never mix, close drains.

Every wait has a timeout (``TIMEOUT``): a batcher that packs or waits wrongly fails the test
in seconds instead of hanging it."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from luong.service.batcher import Batcher, BatcherStats

TIMEOUT = 5.0  # seconds; what takes longer has hung (each wait here takes milliseconds)


class Gate:
    """A ``run`` that records its calls and waits to be let go (``release``, at most
    ``TIMEOUT``): the requests submitted meanwhile queue up (no timing involved)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[int]]] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, key: str, items: list[int]) -> list[str]:
        self.calls.append((key, list(items)))
        self.entered.set()
        self.release.wait(TIMEOUT)
        return [f"{key}:{item * 10}" for item in items]


def test_requests_queued_during_a_call_run_together_each_with_its_own_results() -> None:
    gate = Gate()
    batcher: Batcher[str, int, str] = Batcher(gate, max_batch=100, max_wait=0)
    first = batcher.submit("a", [1])
    assert gate.entered.wait(TIMEOUT)  # the worker is inside the first call
    later = [batcher.submit("a", [i, i + 1]) for i in range(10, 50, 10)]
    other = batcher.submit("b", [7])
    assert batcher.queued == 5
    gate.release.set()
    assert first.result(timeout=TIMEOUT) == ["a:10"]
    assert [f.result(timeout=TIMEOUT) for f in later] == [
        [f"a:{i * 10}", f"a:{i * 10 + 10}"] for i in (10, 20, 30, 40)
    ]
    assert other.result(timeout=TIMEOUT) == ["b:70"]
    batcher.close(TIMEOUT)
    assert gate.calls == [("a", [1]), ("a", [10, 11, 20, 21, 30, 31, 40, 41]), ("b", [7])]
    assert batcher.stats == BatcherStats(requests=6, batches=3, merged=1, items=10, largest=4)


def test_max_batch_splits_between_whole_requests() -> None:
    gate = Gate()
    batcher: Batcher[str, int, str] = Batcher(gate, max_batch=4, max_wait=0)
    batcher.submit("a", [0])
    assert gate.entered.wait(TIMEOUT)
    futures = [batcher.submit("a", [i] * 3) for i in (1, 2)] + [batcher.submit("a", [3] * 6)]
    gate.release.set()
    assert [f.result(timeout=TIMEOUT) for f in futures] == [
        ["a:10"] * 3,
        ["a:20"] * 3,
        ["a:30"] * 6,
    ]
    batcher.close(TIMEOUT)
    assert [items for _, items in gate.calls] == [[0], [1, 1, 1], [2, 2, 2], [3] * 6]


def test_max_batch_packs_whole_requests_up_to_the_limit_and_not_one_item_more() -> None:
    # Queued behind a held call, in order: 1 + 3 items fill a call of 4 exactly; 2 + 3 would
    # be 5, so 2 runs alone, then 3; 4 items alone fill one; 1 left.
    gate = Gate()
    batcher: Batcher[str, int, str] = Batcher(gate, max_batch=4, max_wait=0)
    batcher.submit("a", [0])
    assert gate.entered.wait(TIMEOUT)
    sizes = [1, 3, 2, 3, 4, 1]
    futures = [batcher.submit("a", [n] * n) for n in sizes]
    gate.release.set()
    results = [f.result(timeout=TIMEOUT) for f in futures]
    assert results == [[f"a:{n * 10}"] * n for n in sizes]
    batcher.close(TIMEOUT)
    assert [items for _, items in gate.calls] == [
        [0],
        [1, 3, 3, 3],
        [2, 2],
        [3, 3, 3],
        [4, 4, 4, 4],
        [1],
    ]
    assert batcher.stats == BatcherStats(requests=7, batches=6, merged=1, items=15, largest=2)


class Recorder:
    """A ``run`` that records its calls and returns at once."""

    def __init__(self) -> None:
        self.calls: list[list[int]] = []

    def __call__(self, key: str, items: list[int]) -> list[int]:
        self.calls.append(list(items))
        return items


def test_a_full_batch_runs_at_once_and_one_item_more_is_not_waited_for() -> None:
    # A wait of a minute for company: a batch that is full (max_batch items waiting) must
    # not sit it out, and a request that would overfill it must not join it.
    recorder = Recorder()
    batcher: Batcher[str, int, int] = Batcher(recorder, max_batch=4, max_wait=60.0)
    first, second = batcher.submit("a", [1, 2]), batcher.submit("a", [3, 4])
    assert (first.result(timeout=TIMEOUT), second.result(timeout=TIMEOUT)) == ([1, 2], [3, 4])
    assert recorder.calls == [[1, 2, 3, 4]]
    full = batcher.submit("a", [5, 6, 7, 8])  # max_batch items in one request
    assert full.result(timeout=TIMEOUT) == [5, 6, 7, 8]
    three, two = batcher.submit("a", [9, 10, 11]), batcher.submit("a", [12, 13])  # 5 waiting
    assert three.result(timeout=TIMEOUT) == [9, 10, 11]
    # the last request queued while [9, 10, 11] ran: it has waited that call out, and runs
    # as soon as it ends, not a minute later
    assert two.result(timeout=TIMEOUT) == [12, 13]
    assert recorder.calls == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11], [12, 13]]
    batcher.close(TIMEOUT)
    assert not batcher.queued


def test_many_threads_each_get_their_own_results_in_order() -> None:
    batcher: Batcher[int, int, int] = Batcher(
        lambda key, items: [key * 1000 + i for i in items], max_batch=32, max_wait=0.002
    )

    def client(n: int) -> list[int]:
        return batcher.submit(n % 3, list(range(n, n + 5))).result(timeout=TIMEOUT)

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(client, range(200)))
    batcher.close(TIMEOUT)
    assert results == [[(n % 3) * 1000 + i for i in range(n, n + 5)] for n in range(200)]
    stats = batcher.stats
    assert (stats.requests, stats.items) == (200, 1000)


def test_an_error_in_run_goes_to_every_request_of_the_call_and_the_worker_goes_on() -> None:
    def run(key: str, items: list[int]) -> list[int]:
        if key == "bad":
            raise ValueError(f"bad items {items}")
        return items

    batcher: Batcher[str, int, int] = Batcher(run, max_wait=0)
    with pytest.raises(ValueError, match=r"bad items \[1\]"):
        batcher.submit("bad", [1]).result(timeout=TIMEOUT)
    assert batcher.submit("good", [2, 3]).result(timeout=TIMEOUT) == [2, 3]
    wrong: Batcher[str, int, int] = Batcher(lambda key, items: [1], max_wait=0)
    with pytest.raises(RuntimeError, match="run gave 1 results for 2 items"):
        wrong.submit("k", [1, 2]).result(timeout=TIMEOUT)
    batcher.close(TIMEOUT)
    wrong.close(TIMEOUT)


def test_close_runs_what_is_queued_then_refuses() -> None:
    gate = Gate()
    batcher: Batcher[str, int, str] = Batcher(gate, max_wait=0)
    running = batcher.submit("a", [1])
    assert gate.entered.wait(TIMEOUT)
    queued = batcher.submit("b", [2])
    closer = threading.Thread(target=batcher.close, daemon=True)
    closer.start()
    gate.release.set()
    closer.join(TIMEOUT)
    assert not closer.is_alive()
    assert (running.result(timeout=TIMEOUT), queued.result(timeout=TIMEOUT)) == (["a:10"], ["b:20"])
    assert batcher.closed
    with pytest.raises(RuntimeError, match="the batcher is closed: it takes no more requests"):
        batcher.submit("a", [1])
    assert (
        batcher.submit("a", []).result(timeout=TIMEOUT) == []
    )  # nothing to run: no refusal needed


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_batch": 0}, ValueError, "max_batch: expected an int >= 1, got 0"),
        ({"max_batch": True}, ValueError, "max_batch: expected an int >= 1, got True"),
        (
            {"max_wait": -1},
            ValueError,
            "max_wait: expected a finite number of seconds >= 0, got -1",
        ),
        (
            {"max_wait": float("nan")},
            ValueError,
            "max_wait: expected a finite number of seconds >= 0, got nan",
        ),
    ],
)
def test_bad_options_are_named(options: dict[str, object], error: type, message: str) -> None:
    with pytest.raises(error) as raised:
        Batcher(lambda key, items: items, **options)  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="run: expected a callable, got int"):
        Batcher(3)  # type: ignore[arg-type]
    batcher: Batcher[str, str, str] = Batcher(lambda key, items: items)
    with pytest.raises(TypeError, match="items: expected a sequence, got str"):
        batcher.submit("k", "abc")
    batcher.close(TIMEOUT)


@pytest.mark.parametrize("fails", [False, True])
def test_a_request_is_counted_before_its_answer_is_out(fails: bool) -> None:
    # A done-callback runs the moment the answer is set (on the worker): the counters must
    # already hold the request, so a client that asks /health after its answer sees it.
    def run(key: str, items: list[int]) -> list[int]:
        if fails:
            raise ValueError("no")
        return items

    batcher: Batcher[str, int, int] = Batcher(run, max_batch=4, max_wait=0)
    seen: list[BatcherStats] = []
    future = batcher.submit("k", [1, 2])
    future.add_done_callback(lambda _: seen.append(batcher.stats))
    with pytest.raises(ValueError) if fails else contextlib.nullcontext():
        assert future.result(timeout=60) == [1, 2]
    batcher.close()
    assert [(s.requests, s.batches, s.items) for s in seen] == [(1, 1, 2)]
