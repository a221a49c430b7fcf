"""Alternative tasks of one operator: the operator costs its fastest task, and a slower task only
gains once it would beat the faster one."""

from __future__ import annotations

import math

import pytest

from tunecli.engine.tuner.alternatives import latency_change, operator_groups, weighted_latency
from tunecli.errors import TuneError


def test_every_task_is_in_one_group() -> None:
    assert operator_groups(5, [(1, 2)]) == [(1, 2), (0,), (3,), (4,)]
    assert operator_groups(2) == [(0,), (1,)]


@pytest.mark.parametrize(("alternatives", "message"), [
    ([(0, 1), (1, 2)], "a task of [1, 2] is in more than one group"),
    ([(0, 0)], "a task of [0, 0] is in more than one group"),
    ([(0, 3)], "[0, 3] is not a group of task indices 0..2"),
    ([()], "[] is not a group of task indices 0..2"),
])
def test_bad_groups_are_refused(alternatives: list, message: str) -> None:
    with pytest.raises(TuneError, match=message.replace("[", r"\[").replace("]", r"\]")):
        operator_groups(3, alternatives)


def test_an_operator_counts_once_at_its_fastest_task() -> None:
    # a convolution called 4 times (direct 3 ms, Winograd 2 ms) and a dense layer called once
    groups = operator_groups(3, [(0, 1)])
    assert weighted_latency([3e-3, 2e-3, 1e-3], [4, 4, 1], groups) == pytest.approx(4 * 2e-3 + 1e-3)
    assert weighted_latency([3e-3, 2e-3, 1e-3], [4, 4, 1], operator_groups(3)) == pytest.approx(
        4 * 3e-3 + 4 * 2e-3 + 1e-3)  # as independent tasks: both counted


def test_an_alternative_without_a_config_leaves_the_other_ones_latency() -> None:
    groups = operator_groups(3, [(0, 1)])
    assert weighted_latency([3e-3, math.inf, 1e-3], [4, 4, 1], groups) == pytest.approx(4 * 3e-3 + 1e-3)
    assert weighted_latency([math.inf, math.inf, 1e-3], [4, 4, 1], groups) == math.inf


def test_calls_only_one_alternative_can_run_count_at_its_own_latency() -> None:
    # the direct task also has 2 calls of its own (a job's listed task of the same workload)
    groups = operator_groups(2, [(0, 1)])
    assert weighted_latency([3e-3, 2e-3], [6, 4], groups) == pytest.approx(4 * 2e-3 + 2 * 3e-3)
    assert weighted_latency([3e-3, math.inf], [4, 6], groups) == math.inf  # 2 calls only it can run


def test_a_slower_alternative_gains_only_what_beats_the_faster() -> None:
    groups = operator_groups(2, [(0, 1)])
    latencies, weights = [3e-3, 2e-3], [4, 4]
    assert latency_change(latencies, weights, groups, 0, -0.5e-3) == 0.0  # 2.5 ms: still slower
    assert latency_change(latencies, weights, groups, 0, -1.5e-3) == pytest.approx(4 * -0.5e-3)
    assert latency_change(latencies, weights, groups, 1, -0.5e-3) == pytest.approx(4 * -0.5e-3)
    # a task alone: its weight times the change
    assert latency_change(latencies, weights, operator_groups(2), 0, -0.5e-3) == 4 * -0.5e-3


def test_the_change_is_the_difference_of_the_weighted_latency() -> None:
    groups = operator_groups(4, [(0, 1, 2)])
    latencies, weights = [3e-3, 2e-3, 5e-3, 1e-3], [4.0, 4.0, 5.0, 2.0]
    before = weighted_latency(latencies, weights, groups)
    for index in range(4):
        for delta in (-0.5e-3, -1.5e-3, -4.5e-3):
            after = list(latencies)
            after[index] += delta
            assert latency_change(latencies, weights, groups, index, delta) == pytest.approx(
                weighted_latency(after, weights, groups) - before)
