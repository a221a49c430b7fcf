"""time_calls: TVM's time_evaluator loop (warm-up, repeats, number grown to min_repeat_ms, warmup_ms)."""

from __future__ import annotations

import time

import pytest

from tunecli.engine.runtime.timer import cooldown_pause, time_calls
from tunecli.errors import ArgumentError


def test_time_calls_follows_tvm_semantics():
    calls = []

    def func(x):
        calls.append(x)
        time.sleep(0.001)

    costs = time_calls(func, [7], number=2, repeat=3, min_repeat_ms=0)
    assert len(costs) == 3 and len(calls) == 1 + 2 * 3  # one warm-up call, then repeat × number
    assert all(0.0009 < c < 0.05 for c in costs)
    calls.clear()
    costs = time_calls(func, [7], number=1, repeat=2, min_repeat_ms=15)
    assert len(costs) == 2 and len(calls) > 1 + 2 * 10  # number grew until a batch lasted 15 ms
    with pytest.raises(ArgumentError):
        time_calls(func, [7], number=0)


def test_time_calls_warms_up_for_warmup_ms():
    calls = []

    def func(x):
        calls.append(time.perf_counter())
        time.sleep(0.001)

    start = time.perf_counter()
    time_calls(func, [7], number=1, repeat=1, warmup=0, warmup_ms=30)
    untimed = calls[:-1]  # the last call is the timed round
    # the warm-up starts after ``start``: its last call is within 30 ms of its first, not of ``start``
    assert len(untimed) > 5 and untimed[-1] - untimed[0] < 0.03 <= calls[-1] - start
    with pytest.raises(ArgumentError, match="warmup_ms"):
        time_calls(func, [7], warmup_ms=-1)


def test_cooldown_pause_sleeps_before_every_nth_batch_after_the_first():
    starts = []
    pause = cooldown_pause(50, every=2)

    def before() -> None:
        pause()
        starts.append(time.perf_counter())

    time_calls(lambda: None, (), number=1, repeat=5, before_repeat=before)
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert [g >= 0.05 for g in gaps] == [False, True, False, True]
    assert cooldown_pause(0) is None
    with pytest.raises(ArgumentError, match="need cooldown_interval_ms >= 0 and repeats_to_cooldown >= 1"):
        cooldown_pause(1, every=0)
