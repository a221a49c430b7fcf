"""Timing of compiled functions with the semantics of TVM's ``time_evaluator``."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence

from tunecli.errors import ArgumentError

GOLDEN_RATIO = 1.618


def time_calls(func: Callable[..., object], args: Sequence[object], number: int = 10, repeat: int = 1,
               min_repeat_ms: float = 0.0, warmup: int = 1,
               before_repeat: Callable[[], None] | None = None, warmup_ms: float = 0.0) -> list[float]:
    """Time ``func(*args)`` like TVM: ``warmup`` untimed calls, then ``repeat`` batches.

    Parameters
    ----------
    func : callable
        Any callable, typically a ctypes function taking data pointers.
    args : sequence
        Arguments passed to each call.
    number : int
        Calls per batch; the reported time of a batch is its mean per call.
    repeat : int
        Number of batches (results).
    min_repeat_ms : float
        When > 0, a batch shorter than this is rerun with ``number`` grown to
        ``max(min_repeat_ms / per_call_ms + 1, number * 1.618)`` until it lasts that long; the
        grown ``number`` is kept for later batches.
    warmup : int
        Untimed calls before the first batch.
    before_repeat : callable, optional
        Called (untimed) before each batch, e.g. to flush caches.
    warmup_ms : float
        After the ``warmup`` calls, keep calling (untimed) until this many milliseconds have
        passed since the warm-up began.

    Returns
    -------
    list of float
        Mean seconds per call of each batch.
    """
    if number < 1 or repeat < 1 or min_repeat_ms < 0 or warmup < 0 or warmup_ms < 0:
        raise ArgumentError(f"timer: need number >= 1, repeat >= 1, min_repeat_ms >= 0, warmup >= 0 and "
                            f"warmup_ms >= 0, got number={number}, repeat={repeat}, "
                            f"min_repeat_ms={min_repeat_ms}, warmup={warmup}, warmup_ms={warmup_ms}")
    warm_until = time.perf_counter() + warmup_ms / 1e3
    for _ in range(warmup):
        func(*args)
    while time.perf_counter() < warm_until:
        func(*args)
    results = []
    for _ in range(repeat):
        if before_repeat is not None:
            before_repeat()
        elapsed = 0.0
        while True:
            if elapsed > 0.0:
                per_call_ms = max(elapsed * 1e3 / number, 1e-9)
                number = max(int(min_repeat_ms / per_call_ms) + 1, int(number * GOLDEN_RATIO))
            start = time.perf_counter()
            for _ in range(number):
                func(*args)
            elapsed = time.perf_counter() - start
            if elapsed * 1e3 >= min_repeat_ms:
                break
        results.append(elapsed / number)
    return results


def cooldown_pause(interval_ms: float, every: int = 1) -> Callable[[], None] | None:
    """A ``before_repeat`` for :func:`time_calls` that sleeps ``interval_ms`` before every ``every``-th
    batch after the first (TVM's ``cooldown_interval_ms`` and ``repeats_to_cooldown``); None when
    ``interval_ms`` is 0."""
    if interval_ms < 0 or every < 1:
        raise ArgumentError(f"timer: need cooldown_interval_ms >= 0 and repeats_to_cooldown >= 1, got "
                            f"{interval_ms} and {every}")
    if interval_ms == 0:
        return None
    batches = itertools.count()

    def pause() -> None:
        k = next(batches)
        if k > 0 and k % every == 0:
            time.sleep(interval_ms / 1e3)

    return pause
