"""The task scheduler: which task each round goes to, how the budget is spent, resume and transfer.

The scheduler's arithmetic is tested on real tasks whose measurements follow known latency
curves (``CurveMeasure``: the k-th trial of a task costs ``curve(k)``), so that every choice can
be computed by hand; the real measurement is in ``tests/engine/job/test_tune_job.py`` and
``tests/commands/test_tune_budget.py``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from tunecli.engine.log.task_history import task_history
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.task.task import create
from tunecli.engine.tuner import RandomTuner
from tunecli.engine.tuner.task_scheduler import NO_LATENCY, SCHEDULER_POLICIES, TaskScheduler, gradient
from tunecli.errors import TuneError

DENSE_A = ("dense.x86", (8, 16, 4, "float32"))      # 120 configs, 1024 flop
DENSE_B = ("dense.x86", (16, 16, 8, "float32"))     # 240 configs, 4096 flop
MATMUL = ("tutorial/matmul", (16, 16, 16, "float32"))  # 25 configs, 8192 flop


def task(workload: tuple) -> Any:
    return create(*workload, "llvm")


class CurveMeasure:
    """``measure_batch`` whose k-th measurement of a task costs ``curves[task.name, task.args](k)``."""

    n_parallel = 4

    def __init__(self, curves: dict[tuple, Callable[[int], float]]):
        self.curves = curves
        self.counts: Counter = Counter()
        self.order: list[tuple] = []

    def __call__(self, inputs: list[MeasureInput]) -> list[MeasureResult]:
        results = []
        for inp in inputs:
            key = (inp.task.name, inp.task.args)
            cost = self.curves[key](self.counts[key])
            self.counts[key] += 1
            self.order.append(key)
            if math.isinf(cost):
                results.append(MeasureResult.failure(MeasureErrorNo.RUNTIME_DEVICE, "fails", 0.0))
            else:
                results.append(MeasureResult((cost,), MeasureErrorNo.NO_ERROR, cost, 0.0))
        return results


def random_tuner(t: Any) -> RandomTuner:
    return RandomTuner(t, seed=0)


def record(t: Any, index: int, cost: float) -> tuple:
    return MeasureInput(t.target, t, t.config_space.get(index)), MeasureResult((cost,), 0, cost, 0.0)


def rounds_of(scheduler: TaskScheduler, measure: CurveMeasure, **kwargs: Any) -> list[int]:
    """Run ``scheduler`` on ``measure``; return the task index of every round."""
    chosen: list[int] = []
    scheduler.tune(measure, round_callbacks=[lambda s, i, ins, res: chosen.append(i)], **kwargs)
    return chosen


def trials_after_each_round(scheduler: TaskScheduler, measure: CurveMeasure) -> list[list[int]]:
    """Run ``scheduler`` on ``measure``; return every task's trials after each round."""
    after: list[list[int]] = []
    scheduler.tune(measure, round_callbacks=[lambda s, *_: after.append([u.trials for u in s.tasks])])
    return after


# ------------------------------------------------------------------ the gradient, by hand
def test_gradient_combines_backward_and_forward_estimates_by_weight() -> None:
    a, m = task(DENSE_A), task(MATMUL)
    s = TaskScheduler([a, m], random_tuner, budget=100, weights=[3, 1])
    ta, tm = s.tasks
    ta.best_cost, ta.rounds, ta.history = 2.0, 4, [10.0, 6.0, 4.0, 3.0, 2.0]
    tm.best_cost, tm.rounds, tm.history = 5.0, 1, [5.0]
    # a: backward (2 - 6) / 3, forward (2 - 2/4) - 2 = -0.5; weight 3
    assert gradient(s, 0) == pytest.approx(3 * (0.2 * (-4 / 3) + 0.8 * -0.5))
    # m: no window of history yet (backward 0), forward (5 - 5/1) - 5 = -5; weight 1
    assert gradient(s, 1) == pytest.approx(0.8 * -5)
    assert s.next_task() == 1  # -4.0 < -2.0
    ta.weight = 7  # -4.67 < -4.0
    assert s.next_task() == 0


def test_forward_estimate_assumes_reaching_half_the_speed_of_a_similar_task() -> None:
    a, b = task(DENSE_A), task(DENSE_B)  # same template: one similarity group
    s = TaskScheduler([a, b], random_tuner, budget=100)
    ta, tb = s.tasks
    ta.best_cost, ta.rounds, ta.history = 1e-6, 10, [1e-6]   # 1024 flop in 1 us: 1.024 GFLOPS
    tb.best_cost, tb.rounds, tb.history = 1e-3, 10, [1e-3]   # 4096 flop in 1 ms: far slower
    # b could run at 1.024 / 2 GFLOPS: 4096 / 0.512e9 s, better than its own rate 1e-3 - 1e-4
    assert gradient(s, 1) == pytest.approx(0.8 * (2 * 4096 / (1024 / 1e-6) - 1e-3))
    assert s.similar(1) == [0, 1]


def test_a_task_much_slower_than_its_group_after_many_more_rounds_leaves_the_group() -> None:
    a, b = task(DENSE_A), task(DENSE_B)
    s = TaskScheduler([a, b], random_tuner, budget=100)
    ta, tb = s.tasks
    ta.best_cost, ta.rounds = 1e-6, 1
    tb.best_cost, tb.rounds = 1e-3, 7  # more than 5 rounds beyond a's, still > 2x slower per flop
    s._leave_group(1)
    assert s.similar(1) == [1] and s.similar(0) == [0]


def test_ties_go_to_the_task_with_the_fewest_trials() -> None:
    tasks = [task(DENSE_A), task(DENSE_B), task(MATMUL)]
    s = TaskScheduler(tasks, random_tuner, budget=100)
    # flat, and each as fast per flop as the others (no similarity estimate): nothing tells them apart
    for t, trials in zip(s.tasks, (8, 5, 6), strict=True):
        cost = t.task.flop / 1024
        t.best_cost, t.rounds, t.history, t.trials, t.curve = cost, 1, [cost], trials, [cost] * trials
    assert len({gradient(s, i) for i in range(3)}) == 1
    assert s.next_task() == 1
    s.tasks[1].trials = 9
    assert s.next_task() == 2


def test_the_forward_estimate_is_the_improvement_per_trial_over_the_later_half_of_its_trials() -> None:
    a, m = task(DENSE_A), task(MATMUL)  # different templates: no similarity estimate
    s = TaskScheduler([a, m], random_tuner, budget=100, round_trials=4, weights=[5, 1])
    ta, tm = s.tasks
    # a: heavy and slow, but flat over its later half (trials 5-8); m: 1 us better per trial there
    ta.best_cost, ta.rounds, ta.history, ta.trials = 1e-3, 2, [2e-3, 1e-3], 8
    ta.curve = [4e-3, 3e-3, 2e-3, 1e-3] + [1e-3] * 4
    tm.best_cost, tm.rounds, tm.history, tm.trials = 1e-4, 2, [1.04e-4, 1e-4], 8
    tm.curve = [2e-4, 1.5e-4, 1.2e-4, 1.04e-4, 1.03e-4, 1.02e-4, 1.01e-4, 1e-4]
    assert gradient(s, 0) == pytest.approx(5 * (0.8 * 0.0))
    assert gradient(s, 1) == pytest.approx(0.8 * -(1.04e-4 - 1e-4) / 4 * 4)
    assert s.next_task() == 1  # Ansor's g / t would give a: 5 * 1e-3 / 2 > 1e-4 / 2
    tm.curve = [1e-4] * 8  # m flat too: a tie, the fewest trials (a, index first)
    assert s.next_task() == 0


# ------------------------------------------------------------------ alternatives of one operator
def test_alternatives_count_once_at_the_fastest_in_the_objective() -> None:
    a, b, m = task(DENSE_A), task(DENSE_B), task(MATMUL)
    s = TaskScheduler([a, b, m], random_tuner, budget=100, weights=[4, 4, 1], alternatives=[(0, 1)])
    for t, cost in zip(s.tasks, (3e-3, 2e-3, 1e-3), strict=True):
        t.best_cost = cost
    assert s.objective == pytest.approx(4 * min(3e-3, 2e-3) + 1 * 1e-3)
    s.tasks[1].best_cost = math.inf  # an alternative without a valid config: the other one's latency
    assert s.objective == pytest.approx(4 * 3e-3 + 1e-3)
    s.tasks[0].best_cost = math.inf  # no config for the operator: unknown
    assert s.objective == math.inf


def test_a_slower_alternative_gains_only_by_the_estimate_that_beats_the_faster() -> None:
    a, b, m = task(DENSE_A), task(DENSE_B), task(MATMUL)
    s = TaskScheduler([a, b, m], random_tuner, budget=100, weights=[4, 4, 1], alternatives=[(0, 1)])
    ta, tb, tm = s.tasks
    ta.best_cost, ta.rounds, ta.history = 1e-3, 2, [1e-3]
    tb.best_cost, tb.rounds, tb.history = 3e-3, 4, [3e-3]
    tm.best_cost, tm.rounds, tm.history = 1e-3, 1, [1e-3]
    # b alone would gain 4 * 0.8 * -3e-3/4; its estimate 2.4 ms is still slower than a's 1 ms
    assert gradient(s, 1) == 0.0
    assert gradient(s, 0) == pytest.approx(4 * 0.8 * -1e-3 / 2)  # the faster: Ansor's formula
    tb.rounds = 1  # estimate 3 - 0.8 * 3 = 0.6 ms: 0.4 ms better than a
    assert gradient(s, 1) == pytest.approx(4 * (3e-3 - 0.8 * 3e-3 - 1e-3))


def test_an_alternative_without_a_valid_config_is_tuned_as_a_task_alone() -> None:
    a, b, m = task(DENSE_A), task(DENSE_B), task(MATMUL)
    s = TaskScheduler([a, b, m], random_tuner, budget=100, weights=[4, 4, 1], alternatives=[(0, 1)])
    ta, tb, tm = s.tasks
    ta.best_cost, ta.rounds, ta.history = 1e-3, 1, [1e-3]
    tb.rounds, tb.history = 1, [NO_LATENCY]  # its warm-up round found no valid config
    tm.best_cost, tm.rounds, tm.history = 1e-3, 1, [1e-3]
    assert gradient(s, 1) == pytest.approx(4 * 0.8 * -NO_LATENCY)  # unknown: not known to be slower
    assert s.next_task() == 1
    assert s.objective == pytest.approx(4 * 1e-3 + 1e-3)  # a build runs a's config meanwhile


def test_a_flat_slower_alternative_gets_no_round_after_the_warm_up() -> None:
    a, b, m = task(DENSE_A), task(DENSE_B), task(MATMUL)
    curves = {(a.name, a.args): lambda k: 1e-3 * (1 + 1 / (k + 1)), (b.name, b.args): lambda k: 5e-3,
              (m.name, m.args): lambda k: 2e-3 * (1 + 1 / (k + 1))}
    s = TaskScheduler([a, b, m], random_tuner, budget=36, round_trials=4, alternatives=[(0, 1)],
                      min_share=0)
    chosen = rounds_of(s, CurveMeasure(curves))
    assert chosen[:3] == [0, 1, 2]
    assert 1 not in chosen[3:] and len(chosen) == 9  # 5 ms, flat: it would not beat a's 1 ms
    assert s.tasks[0].best_cost < 1.2e-3 and s.tasks[2].best_cost < 2.4e-3


# ------------------------------------------------------------------ rounds and budget
def test_warm_up_gives_every_task_a_round_then_the_gradient_chooses() -> None:
    a, m = task(DENSE_A), task(MATMUL)
    # a flat (no gain expected), m still improving: after the warm-up m gets the rounds, except the
    # one that keeps a at its minimum share (half the mean trials)
    measure = CurveMeasure({(a.name, a.args): lambda k: 1e-3, (m.name, m.args): lambda k: 2.5e-3 / (k + 1)})
    s = TaskScheduler([a, m], random_tuner, budget=28, round_trials=4, min_share=0.5)
    chosen = rounds_of(s, measure)
    assert chosen == [0, 1] + [1, 1, 1, 0, 1]
    assert s.spent == 28 and sum(measure.counts.values()) == 28
    assert (s.tasks[0].trials, s.tasks[1].trials) == (8, 20)
    assert s.objective == pytest.approx(1e-3 + 2.5e-3 / 20)


def test_no_task_falls_below_its_minimum_share_of_the_trials() -> None:
    a, m = task(DENSE_A), task(MATMUL)
    # a keeps improving, m is flat: the gradient alone gives a every round after the warm-up
    curves = {(a.name, a.args): lambda k: 1e-3 / (k + 1), (m.name, m.args): lambda k: 1e-3}
    for share in (0.0, 0.5, 0.75):
        s = TaskScheduler([a, m], random_tuner, budget=64, round_trials=4, min_share=share)
        after = trials_after_each_round(s, CurveMeasure(curves))
        if share == 0:
            assert s.tasks[1].trials == 4  # its warm-up round only
        for trials in after[2:]:  # after the warm-up, never a round short of the share
            assert trials[1] >= share * sum(trials) / 2 - 4
        assert s.tasks[1].trials >= share * 32 - 4


def test_round_robin_takes_turns_and_round_trials_is_bounded_by_the_budget_share() -> None:
    tasks = [task(DENSE_A), task(DENSE_B), task(MATMUL)]
    measure = CurveMeasure({(t.name, t.args): (lambda k: 1e-3 / (k + 1)) for t in tasks})
    s = TaskScheduler(tasks, random_tuner, budget=20, policy="round-robin", round_trials=64)
    chosen = rounds_of(s, measure)
    assert s.max_round == 6  # 20 // 3: the warm-up reaches every task
    assert chosen == [0, 1, 2, 0]
    assert [t.trials for t in s.tasks] == [6 + 2, 6, 6]


def test_weights_shift_trials_toward_heavy_tasks() -> None:
    a, b = task(DENSE_A), task(DENSE_B)  # b 4 times a's flop: the same speed, no similarity estimate
    curve = lambda k: 1e-3 * (1 + 4 / (k + 1))  # noqa: E731
    trials = {}
    for policy in SCHEDULER_POLICIES:
        measure = CurveMeasure({(a.name, a.args): lambda k: curve(k) / 4, (b.name, b.args): curve})
        s = TaskScheduler([a, b], random_tuner, budget=64, weights=[1, 8], policy=policy,
                          round_trials=4, min_share=0)
        rounds_of(s, measure)
        trials[policy] = [t.trials for t in s.tasks]
    assert trials["round-robin"] == [32, 32]
    light, heavy = trials["gradient"]
    assert heavy >= 3 * light and light + heavy == 64


def test_a_task_without_a_valid_config_is_tuned_until_it_has_one() -> None:
    a, m = task(DENSE_A), task(MATMUL)
    measure = CurveMeasure({(a.name, a.args): lambda k: 1e-3 / (k + 1),
                            (m.name, m.args): lambda k: math.inf if k < 6 else 1e-3})
    s = TaskScheduler([a, m], random_tuner, budget=16, round_trials=2)
    chosen = rounds_of(s, measure)
    assert chosen[:5] == [0, 1, 1, 1, 1]  # m keeps the rounds until its 7th trial is valid
    assert s.tasks[1].best_cost == 1e-3 and math.isfinite(s.objective)


def test_per_task_early_stopping_and_exhausted_spaces_leave_the_schedule() -> None:
    a, m = task(DENSE_A), task(MATMUL)  # m has 25 configs
    measure = CurveMeasure({(a.name, a.args): lambda k: 1e-3 if k == 0 else 2e-3,
                            (m.name, m.args): lambda k: 1e-3 / (k + 1)})
    s = TaskScheduler([a, m], random_tuner, budget=100, round_trials=4, early_stopping=6)
    rounds_of(s, measure)
    assert s.tasks[0].done == "early stopped" and s.tasks[0].trials == 8  # best at 1, then 7 worse
    assert s.tasks[1].done == "space exhausted" and s.tasks[1].trials == 25
    assert s.spent == 33 < s.budget


def test_every_measured_batch_reaches_the_callbacks() -> None:
    a, m = task(DENSE_A), task(MATMUL)
    measure = CurveMeasure({(a.name, a.args): lambda k: 1e-3, (m.name, m.args): lambda k: 1e-3})
    streamed: list[Any] = []
    rounds: list[tuple] = []
    s = TaskScheduler([a, m], random_tuner, budget=10, policy="round-robin", round_trials=3)
    s.tune(measure, callbacks=[lambda tuner, ins, res: streamed.extend(i.task for i in ins)],
           round_callbacks=[lambda sch, i, ins, res: rounds.append((i, len(ins), len(res)))])
    assert rounds == [(0, 3, 3), (1, 3, 3), (0, 3, 3), (1, 1, 1)]
    assert streamed == [a] * 3 + [m] * 3 + [a] * 3 + [m]


# ------------------------------------------------------------------ resume and transfer
def test_records_in_the_log_count_for_their_task() -> None:
    a, m = task(DENSE_A), task(MATMUL)
    other = task(DENSE_B)  # not a task of this run: its records count for no task
    history = [record(a, i, 1e-3 + i * 1e-6) for i in range(8)] + [record(other, 0, 1e-6),
                                                                    record(a, 3, 5e-3)]
    s = TaskScheduler([a, m], random_tuner, budget=20, policy="round-robin", round_trials=4,
                      history=history)
    ta, tm = s.tasks
    assert (ta.previous, ta.trials, ta.rounds, ta.best_cost) == (8, 8, 2, 1e-3)
    assert (tm.previous, tm.rounds, tm.best_cost) == (0, 0, math.inf)
    measure = CurveMeasure({(a.name, a.args): lambda k: 1e-4, (m.name, m.args): lambda k: 1e-3})
    chosen = rounds_of(s, measure)
    assert chosen == [1, 0, 1]  # the warm-up skips a task the log already tuned
    assert s.spent == 20 and sum(measure.counts.values()) == 12
    assert (ta.trials, ta.best_cost, tm.trials) == (12, 1e-4, 8)
    assert set(range(8)) <= ta.tuner.visited and len(ta.tuner.visited) == 12  # the log's never again


def test_an_implausible_record_counts_as_a_trial_but_not_as_the_best() -> None:
    a, m = task(DENSE_A), task(MATMUL)
    fast, normal = record(a, 0, 1e-12), record(a, 1, 1e-3)
    history = [fast, normal]
    trusted = [False, True]  # what log.task_history.task_histories says of a record faster than any machine
    s = TaskScheduler([a, m], random_tuner, budget=20, history=history,
                      task_histories=[task_history(a, history, trusted), task_history(m, history, trusted)])
    assert (s.tasks[0].trials, s.tasks[0].best_cost) == (2, 1e-3)


def test_a_config_measured_again_is_one_trial_at_its_lowest_cost() -> None:
    a, m = task(DENSE_A), task(MATMUL)
    history = [record(a, 0, 2e-3), record(a, 1, 3e-3), record(a, 1, 1e-3)]  # config 1 re-measured
    s = TaskScheduler([a, m], random_tuner, budget=20, history=history)
    assert (s.tasks[0].previous, s.tasks[0].trials, s.tasks[0].best_cost) == (2, 2, 1e-3)


def test_a_tuner_starts_from_every_record_known_at_its_first_round() -> None:
    a, m = task(DENSE_A), task(MATMUL)
    seen: dict[str, int] = {}

    class Recording(RandomTuner):
        def resume(self, history: Any, data_set: Any = (), min_seed_records: int = 500) -> None:
            data = list(data_set)
            seen[self.task.name] = len(data)
            super().resume(history, data, min_seed_records)

    history = [record(task(DENSE_B), 0, 1e-3)]
    measure = CurveMeasure({(a.name, a.args): lambda k: 1e-3, (m.name, m.args): lambda k: 1e-3})
    s = TaskScheduler([a, m], lambda t: Recording(t, seed=0), budget=8, policy="round-robin",
                      round_trials=3, history=history)
    rounds_of(s, measure)
    # m's tuner (its first round comes after a's) also gets a's records of this run
    assert seen == {"dense.x86": 1, "tutorial/matmul": 1 + 3}


def test_tuners_started_before_their_template_had_enough_records_transfer_later() -> None:
    from tests.engine.tuner.tuner_helpers import SyntheticMeasure, make_task
    from tunecli.engine.tuner import XGBTuner

    tasks = [make_task(n=n, parts=2) for n in (64, 32, 16)]  # one template, three shapes
    transferred: list[list[bool]] = []

    def after_round(s: TaskScheduler, *_: Any) -> None:
        transferred.append([u.tuner is not None and u.tuner.transferred for u in s.tasks])

    measure = SyntheticMeasure()
    s = TaskScheduler(tasks, lambda t: XGBTuner(t, plan_size=8, num_threads=1, seed=0, min_seed_records=16),
                      budget=48, policy="round-robin", round_trials=8)
    s.tune(measure, round_callbacks=[after_round])
    # the third task starts from the 16 records of the first two; they get them at their next round
    assert transferred == [[False] * 3, [False] * 3, [False, False, True], [True, False, True], [True] * 3,
                           [True] * 3]
    assert len(measure.measured) == 48 and [t.trials for t in s.tasks] == [16, 16, 16]


# ------------------------------------------------------------------ bad arguments
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"budget": 1}, "a budget of 1 trials is less than one trial per task (2 tasks)"),
    ({"policy": "greedy"}, "unknown task scheduler 'greedy' (registered: gradient, round-robin)"),
    ({"weights": [1, 0]}, "expected one positive weight per task"),
    ({"weights": [1]}, "expected one positive weight per task"),
    ({"round_trials": 0}, "round_trials must be >= 1"),
    ({"min_share": 1.5}, "min_share must be between 0 and 1, got 1.5"),
    ({"alternatives": [(0, 1), (1,)]}, "alternatives: a task of [1] is in more than one group"),
])
def test_bad_arguments_are_refused(kwargs: dict, message: str) -> None:
    options = {"budget": 10, **kwargs}
    with pytest.raises(TuneError, match=re.escape(message)):
        TaskScheduler([task(DENSE_A), task(MATMUL)], random_tuner, **options)
