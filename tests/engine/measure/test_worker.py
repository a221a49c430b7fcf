"""Persistent worker processes: calls, failures as outcomes, replacement and recycling."""

from __future__ import annotations

import os
import time

import pytest

from tunecli.engine.measure.worker import CallStatus, Worker
from tunecli.engine.measure.worker_pool import WorkerPool

H = "tests.engine.measure.measure_helpers"


@pytest.fixture(scope="module")
def worker():
    w = Worker(max_jobs=None, preload=[H], name="test-worker")
    yield w
    w.close()


def test_call_returns_value_in_another_process(worker):
    out = worker.call(f"{H}:square", 3.0, timeout=5)
    assert out.status is CallStatus.OK and out.value == 9.0
    child = worker.call(f"{H}:pid", None, timeout=5).value
    assert child == worker.pid and child != os.getpid()


def test_exception_is_reported_and_worker_survives(worker):
    before = worker.pid
    out = worker.call(f"{H}:boom", "kaputt", timeout=5)
    assert out.status is CallStatus.RAISED
    assert "ValueError: kaputt" in out.detail
    assert worker.pid == before
    out = worker.call(f"{H}:unpicklable", None, timeout=5)
    assert out.status is CallStatus.RAISED and worker.pid == before
    out = worker.call(f"{H}:unloadable", None, timeout=5)
    assert out.status is CallStatus.RAISED and "refusing to be unpickled" in out.detail
    assert worker.call(f"{H}:square", 4.0, timeout=5).value == 16.0 and worker.pid == before


def test_crash_is_reported_and_worker_replaced(worker):
    before, restarts = worker.pid, worker.restarts
    start = time.perf_counter()
    out = worker.call(f"{H}:segfault", None, timeout=30)
    assert time.perf_counter() - start < 5  # seen as EOF, not as a timeout
    assert out.status is CallStatus.DIED and "SIGSEGV" in out.detail
    assert worker.restarts == restarts + 1
    assert worker.call(f"{H}:square", 2.0, timeout=5).value == 4.0
    assert worker.pid != before


def test_hang_times_out_and_worker_replaced(worker):
    before = worker.pid
    worker.call(f"{H}:square", 1.0, timeout=5)  # make sure the child is ready: start-up is not timed
    start = time.perf_counter()
    out = worker.call(f"{H}:nap", 30.0, timeout=0.5)
    assert out.status is CallStatus.TIMEOUT
    assert 0.5 <= time.perf_counter() - start < 3
    assert worker.pid != before
    assert worker.call(f"{H}:nap", 0.01, timeout=5).value == 0.01


@pytest.mark.parametrize("keeps_state", [True, False])
def test_a_child_killed_between_calls(keeps_state):
    """A child holding state (a remote session's) that dies between calls makes the next call end
    DIED, however soon its death is seen; a stateless child is replaced without a word."""
    import signal

    w = Worker(preload=[H], name="test-state", keeps_state=keeps_state)
    try:
        first = w.call(f"{H}:pid", None, timeout=30).value
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while w._proc.is_alive() and time.monotonic() < deadline:  # its death already seen
            time.sleep(0.01)
        out = w.call(f"{H}:square", 3.0, timeout=30)
        if keeps_state:
            assert out.status is CallStatus.DIED and "SIGKILL after its last call" in out.detail
            assert w.call(f"{H}:square", 3.0, timeout=30).value == 9.0  # then a fresh child serves
        else:
            assert out.status is CallStatus.OK and out.value == 9.0
        assert w.pid != first
    finally:
        w.close()


def test_worker_recycled_after_max_jobs():
    w = Worker(max_jobs=2, preload=[H])
    try:
        pids = [w.call(f"{H}:pid", None, timeout=30).value for _ in range(5)]
    finally:
        w.close()
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4]
    assert w.restarts == 2


def test_start_up_does_not_count_against_the_timeout():
    w = Worker(preload=[H, "numpy"])
    try:
        out = w.call(f"{H}:square", 5.0, timeout=0.05)
    finally:
        w.close()
    assert out.status is CallStatus.OK and out.value == 25.0


def test_pool_runs_in_parallel_and_isolates_failures():
    pool = WorkerPool(2, preload=[H], name="test-pool")
    try:
        pool.start()
        for w in pool.workers:  # wait until both children are up
            w.call(f"{H}:pid", None, timeout=30)
        payloads = [0.3, 0.3, "x", 0.3]  # nap("x") raises TypeError
        start = time.perf_counter()
        got = {}
        for index, out in pool.map_unordered(f"{H}:nap", payloads, timeout=5):
            got[index] = out
        elapsed = time.perf_counter() - start
        assert sorted(got) == [0, 1, 2, 3]
        assert got[2].status is CallStatus.RAISED and "TypeError" in got[2].detail
        assert all(got[i].value == 0.3 for i in (0, 1, 3))
        assert elapsed < 0.3 * 3 + 0.25  # two at a time, not one after another
    finally:
        pool.close()


def test_pool_consumer_stopping_early_abandons_running_calls():
    pool = WorkerPool(1, preload=[H])
    try:
        gen = pool.map_unordered(f"{H}:nap", [0.01, 30.0], timeout=60)
        first = next(gen)
        assert first[0] == 0
        gen.close()  # the 30 s nap is running: its child is stopped
        assert pool.workers[0].call(f"{H}:square", 3.0, timeout=30).value == 9.0
    finally:
        pool.close()
