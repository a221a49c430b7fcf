"""Rounds of several tasks at once on a backend with lanes: the scheduler spends the budget as before.

The lanes here measure with the known latency curves of ``test_task_scheduler`` (``CurveMeasure``)
after a short pause, and record when each batch was in flight; the real cluster's lanes (its
nodes) are tested in ``tests/engine/cluster/test_concurrent_tuning.py``.
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import pytest

from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.tuner.concurrent_rounds import concurrent_lanes
from tunecli.engine.tuner.task_scheduler import TaskScheduler
from tunecli.errors import TuneError

from .test_task_scheduler import DENSE_A, DENSE_B, MATMUL, CurveMeasure, random_tuner, task


class CurveLanes:
    """A runner with ``lanes`` lanes, each measuring a batch with ``measure`` after ``pause`` seconds."""

    def __init__(self, measure: CurveMeasure, lanes: int = 2, pause: float = 0.02,
                 fail_on: int | None = None, pauses: dict[str, float] | None = None) -> None:
        self.measure, self.pause, self.fail_on = measure, pause, fail_on
        self.pauses = pauses or {}  # a longer or shorter pause on some lanes
        self.lanes = [f"lane{i}" for i in range(lanes)]
        self.spans: list[tuple[tuple, tuple, float, float]] = []  # (lanes, task, start, end)
        self.calls = itertools.count()
        self.lock = threading.Lock()

    def concurrent_lanes(self, _task: Any) -> list[str]:
        return list(self.lanes)

    def lane_option(self, lanes: tuple[str, ...]) -> Any:
        def measure_batch(inputs: list[MeasureInput]) -> list[MeasureResult]:
            if next(self.calls) == self.fail_on:
                raise TuneError(f"{lanes} was lost")
            start = time.monotonic()
            time.sleep(self.pauses.get(lanes[0], self.pause))
            with self.lock:
                results = self.measure(inputs)
            self.spans.append((lanes, (inputs[0].task.name, inputs[0].task.args), start, time.monotonic()))
            return results

        measure_batch.n_parallel = 4  # type: ignore[attr-defined]
        return measure_batch


def overlapping(spans: list[tuple]) -> list[tuple[tuple, tuple]]:
    """Pairs of batches that were in flight at the same time."""
    return [(a, b) for a, b in itertools.combinations(spans, 2) if a[2] < b[3] and b[2] < a[3]]


def curves_of(*tasks: Any, curve: Any = lambda k: 1e-3 / (k + 1)) -> dict:
    return {(t.name, t.args): curve for t in tasks}


def test_only_a_runner_with_lanes_runs_rounds_at_once() -> None:
    lanes = CurveLanes(CurveMeasure({}))
    assert concurrent_lanes({"builder": None, "runner": lanes}) is lanes
    assert concurrent_lanes({"builder": None, "runner": object()}) is None
    assert concurrent_lanes(CurveMeasure({})) is None  # a measure_batch callable: one by one


def test_rounds_of_different_tasks_are_in_flight_at_once_and_the_budget_is_spent_exactly() -> None:
    tasks = [task(DENSE_A), task(DENSE_B), task(MATMUL)]
    lanes = CurveLanes(CurveMeasure(curves_of(*tasks)), pause=0.1)  # longer than a round's thread start-up
    s = TaskScheduler(tasks, random_tuner, budget=40, round_trials=4)
    rounds: list[int] = []
    streamed: list[Any] = []
    s.tune({"runner": lanes}, callbacks=[lambda tuner, ins, res: streamed.extend(ins)],
           round_callbacks=[lambda sch, i, ins, res: rounds.append(i)])
    assert s.spent == 40 and sum(lanes.measure.counts.values()) == 40 and len(streamed) == 40
    assert sum(t.trials for t in s.tasks) == 40 and len(s.history) == 40 and len(rounds) == 10
    started = [span[1] for span in sorted(lanes.spans, key=lambda span: span[2])]
    assert len(set(started[:3])) == 3  # the warm-up still reaches every task first
    both = overlapping(lanes.spans)
    assert any(a[1] != b[1] for a, b in both), lanes.spans  # two tasks' batches at once
    assert all(a[1] != b[1] for a, b in both)  # never two batches of one task
    assert all(t.running == 0 for t in s.tasks)


def test_fewer_tasks_than_lanes_share_the_lanes_out() -> None:
    tasks = [task(DENSE_A), task(MATMUL)]
    lanes = CurveLanes(CurveMeasure(curves_of(*tasks)), lanes=5)
    s = TaskScheduler(tasks, random_tuner, budget=24, round_trials=4)
    s.tune({"runner": lanes})
    assert s.spent == 24
    warm_up: dict[tuple, tuple] = {}  # each task's first round (another task's may start later)
    for lanes_of, name, _, _ in sorted(lanes.spans, key=lambda span: span[2]):
        warm_up.setdefault(name, lanes_of)
    assert set(warm_up.values()) == {("lane0", "lane2", "lane4"), ("lane1", "lane3")}
    for a, b in overlapping(lanes.spans):
        assert not set(a[0]) & set(b[0])  # a lane serves one round at a time


def test_round_robin_with_two_lanes_still_gives_the_tasks_turns() -> None:
    tasks = [task(DENSE_A), task(DENSE_B), task(MATMUL)]
    s = TaskScheduler(tasks, random_tuner, budget=36, policy="round-robin", round_trials=4)
    s.tune({"runner": CurveLanes(CurveMeasure(curves_of(*tasks)), pause=0.1)})
    trials = [t.trials for t in s.tasks]
    assert sum(trials) == 36 and max(trials) - min(trials) <= 4  # at most one round apart


def test_the_last_rounds_are_cut_to_the_budget_left_with_rounds_in_flight() -> None:
    tasks = [task(DENSE_A), task(MATMUL)]
    lanes = CurveLanes(CurveMeasure(curves_of(*tasks)))
    s = TaskScheduler(tasks, random_tuner, budget=11, policy="round-robin", round_trials=4)
    sizes: list[int] = []
    s.tune({"runner": lanes}, round_callbacks=[lambda sch, i, ins, res: sizes.append(len(res))])
    assert s.spent == 11 and sum(sizes) == 11 and sorted(sizes) == [3, 4, 4]


def test_per_task_early_stopping_and_exhausted_spaces_with_rounds_at_once() -> None:
    a, m = task(DENSE_A), task(MATMUL)  # m has 25 configs
    measure = CurveMeasure({(a.name, a.args): lambda k: 1e-3 if k == 0 else 2e-3,
                            (m.name, m.args): lambda k: 1e-3 / (k + 1)})
    s = TaskScheduler([a, m], random_tuner, budget=100, round_trials=4, early_stopping=6)
    s.tune({"runner": CurveLanes(measure)})
    assert s.tasks[0].done == "early stopped" and s.tasks[0].trials == 8  # best at 1, then 7 worse
    assert s.tasks[1].done == "space exhausted" and s.tasks[1].trials == 25
    assert s.spent == 33 < s.budget


def test_a_round_that_raises_stops_the_tune_after_the_rounds_in_flight() -> None:
    tasks = [task(DENSE_A), task(DENSE_B), task(MATMUL)]
    lanes = CurveLanes(CurveMeasure(curves_of(*tasks)), pause=0.1, fail_on=3)
    s = TaskScheduler(tasks, random_tuner, budget=40, round_trials=4)
    counted: list[int] = []
    with pytest.raises(TuneError, match="was lost"):
        s.tune({"runner": lanes}, round_callbacks=[lambda sch, i, ins, res: counted.append(len(res))])
    assert s.spent == sum(counted) == sum(lanes.measure.counts.values()) == 12  # 3 rounds, none lost
    assert len(s.history) == 12


def test_an_interrupted_tune_calls_no_callback_from_the_rounds_still_in_flight() -> None:
    tasks = [task(DENSE_A), task(DENSE_B), task(MATMUL)]
    lanes = CurveLanes(CurveMeasure(curves_of(*tasks)), lanes=3, pause=0.4, pauses={"lane0": 0.01})
    s = TaskScheduler(tasks, random_tuner, budget=60, round_trials=4)
    streamed: list[Any] = []

    def interrupt(_scheduler: Any, _index: int, _inputs: list, _results: list) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        s.tune({"runner": lanes}, callbacks=[lambda tuner, ins, res: streamed.extend(ins)],
               round_callbacks=[interrupt])
    seen = len(streamed)
    time.sleep(0.6)  # the two other warm-up rounds end meanwhile
    assert len(lanes.spans) == 3 and len(streamed) == seen == 4
