"""Timing contenders in turn: the comparison ``apply`` makes (tuned vs default vs numpy, a tuned
network vs the untuned one vs onnxruntime).

Each contender is timed ``repeat`` rounds of one repeat each, the contenders taking turns, with a
pause of ``SETTLE_S`` after each round, so a slow moment of the machine is shared rather than
charged to one of them, and the threads of one are idle when the next starts.  A contender that
fails is not run again: its reply is its failure.  A contender's time is the median of its
rounds (:func:`median_seconds`), which one slow round does not move.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping

from tunecli.engine.measure.timing import MeasureReply
from tunecli.engine.measure.timing_options import TimingOptions

#: Seconds of rest after each timing round, so the threads of one contender are idle when the
#: next one starts: OpenBLAS's threads spin for about 2**28 cycles after a call (its default
#: thread timeout), the thread pool's for about 50 us; a shorter pause lets them take a core from the next.
SETTLE_S = 0.5

#: ``measure(timing) -> MeasureReply``: one round of a contender, timed with ``timing``.
Contender = Callable[[TimingOptions], MeasureReply]


def time_interleaved(contenders: Mapping[str, Contender], timing: TimingOptions) -> dict[str, MeasureReply]:
    """Time each contender ``timing.repeat`` times, one round each in turn with a pause between.

    Parameters
    ----------
    contenders : mapping of str to callable
        ``measure(timing) -> MeasureReply`` by name, in the order they take turns.
    timing : TimingOptions
        Each round uses it with ``repeat=1`` (its own warm-up, ``number`` runs).

    Returns
    -------
    dict of str to MeasureReply
        Per contender: the costs of all its rounds, or its first failure.
    """
    one_round = timing.with_values(repeat=1)
    costs: dict[str, list[float]] = {name: [] for name in contenders}
    failed: dict[str, MeasureReply] = {}
    for _ in range(timing.repeat):
        for name, measure in contenders.items():
            if name in failed:
                continue
            reply = measure(one_round)
            if reply.error_no:
                failed[name] = reply
            else:
                costs[name].extend(reply.costs)
            time.sleep(SETTLE_S)
    return {name: failed.get(name) or MeasureReply(tuple(costs[name])) for name in contenders}


def median_seconds(reply: MeasureReply | None) -> float | None:
    """The median cost of a contender's reply; None when it failed, was not timed or has no cost."""
    if reply is None or reply.error_no or not reply.costs:
        return None
    return float(statistics.median(reply.costs))
