"""remeasure_top: the k best distinct configs of a task measured again, really, once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tunecli.engine.log.record import load_from_file
from tunecli.engine.measure import LocalBuilder, LocalRunner, measure_option
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.task.task import create
from tunecli.engine.tuner.callback import log_to_file
from tunecli.engine.tuner.remeasure import remeasure_candidates, remeasure_top


@pytest.fixture
def option() -> Iterator[dict]:
    opt = measure_option(LocalBuilder(n_parallel=1), LocalRunner(number=2, repeat=2, cooldown_interval=0))
    try:
        yield opt
    finally:
        opt["builder"].close()
        opt["runner"].close()


def logged(task, costs: dict[int, float | None]) -> list[tuple]:
    """Records of ``task``: config index -> logged cost (None: a failed run)."""
    return [(MeasureInput(task.target, task, task.config_space.get(index)),
             MeasureResult((cost,), 0, cost, 1.0) if cost is not None else MeasureResult((1e9,), 4, 0.1, 1.0))
            for index, cost in costs.items()]


def test_candidates_are_the_k_best_distinct_configs_not_measured_again() -> None:
    task = create("tutorial/matmul", (16, 16, 16, "float32"), "llvm")
    records = logged(task, {3: 4e-3, 5: 1e-3, 7: 2e-3, 9: None, 11: 3e-3})
    other = create("tutorial/matmul", (32, 32, 32, "float32"), "llvm")
    records += logged(other, {1: 1e-6})  # another task's record never counts
    assert [inp.config.index for inp in remeasure_candidates(task, records, 3)] == [5, 7, 11]
    assert [inp.config.index for inp in remeasure_candidates(task, records, 10)] == [5, 7, 11, 3]
    assert remeasure_candidates(task, records, 0) == []
    # config 5 measured again (slower this time): still among the 3 best, skipped
    again = records + logged(task, {5: 9e-3})
    assert [inp.config.index for inp in remeasure_candidates(task, again, 3)] == [7, 11]
    (inp,) = remeasure_candidates(task, records, 1)
    assert inp.task is task and inp.target == task.target


def test_remeasure_top_appends_the_same_configs_and_never_twice(tmp_path: Path, option: dict) -> None:
    task = create("tutorial/matmul", (16, 16, 16, "float32"), "llvm")
    records = logged(task, {0: 5e-3, 4: 1e-3, 8: 2e-3, 12: 3e-3})
    log = tmp_path / "t.log"
    seen: list[tuple] = []
    def keep(_tuner: None, inputs: list, results: list) -> None:
        seen.extend(zip(inputs, results, strict=True))

    new = remeasure_top(task, records, 2, option, callbacks=[log_to_file(str(log)), keep], settle=0.05)
    assert [inp.config.index for inp, _ in new] == [4, 8]
    assert all(res.ok and 0 < res.mean_cost < 1 for _, res in new)
    assert [(inp.config.index, res.costs) for inp, res in load_from_file(log)] == \
        [(inp.config.index, res.costs) for inp, res in new]
    assert seen == new
    assert remeasure_top(task, records + new, 2, option, settle=0.05) == []
    assert [inp.config.index for inp, _ in remeasure_top(task, records + new, 3, option, settle=0.05)] == [12]
