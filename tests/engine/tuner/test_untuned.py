"""The untuned build's config as a config of the task's space: what tune measures first."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from tunecli.engine.log import tophub
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.log.record import load_from_file
from tunecli.engine.log.task_history import TaskHistory
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.space_entities import SplitEntity
from tunecli.engine.task.task import create
from tunecli.engine.tuner.untuned import nearest_index, untuned_config, with_records


def knobs(config: object) -> dict[str, str]:
    """Knob name -> entity text, a split by its inner factors (its outer one is what remains)."""
    return {name: repr(e.size[1:]) if isinstance(e, SplitEntity) else repr(e)
            for name, e in ((n, config[n]) for n in config)}  # type: ignore[index, attr-defined]


def test_a_workload_without_a_package_record_gets_the_index_of_its_fallback_config(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tophub.ENV_VAR, tophub.DISABLED)  # no package, so no nearest record either
    task = create("dense.x86", (8, 16, 4), "llvm")
    found = untuned_config(task)
    assert found is not None and found.source == "default" and found.exact
    fallback = FallbackConfigEntity()
    task.instantiate(fallback)  # what a build without records runs
    assert knobs(found.config) == knobs(fallback)
    assert task.config_space.get(found.config.index) is not None


def test_a_workload_of_the_shipped_package_gets_the_package_record() -> None:
    package = tophub.SHIPPED_DIR / "llvm.log"
    inp = next(inp for inp, _ in load_from_file(package) if inp.task.name == "dense.x86")
    task = create("dense.x86", inp.task.args, "llvm")
    found = untuned_config(task)
    assert found is not None and found.source == "package" and found.exact
    with task.target:
        answered = ApplyHistoryBest().query(task.target, task.workload)  # what the untuned build uses
    assert knobs(found.config) == knobs(answered)


def test_a_config_outside_the_space_maps_to_the_nearest_valid_index() -> None:
    space = create("dense.x86", (8, 16, 4), "llvm").config_space
    wanted = OrderedDict((name, s.entities[0]) for name, s in space.space_map.items())
    exact = nearest_index(space, dict(wanted))
    assert exact is not None and exact[1]
    name = next(n for n, s in space.space_map.items() if isinstance(s.entities[0], SplitEntity))
    inner = space.space_map[name].entities[0].size[1:]
    wanted[name] = SplitEntity([-1, *[f * 3 for f in inner]])  # factors the space does not have
    near = nearest_index(space, dict(wanted))
    assert near is not None and not near[1]
    assert space.is_index_valid(near[0])
    assert nearest_index(space, {"no such knob": SplitEntity([-1, 1])}) is None


def test_records_measured_after_a_history_extend_it() -> None:
    task = create("dense.x86", (8, 16, 4), "llvm")
    found = untuned_config(task)
    assert found is not None
    inp = MeasureInput(task.target, task, found.config)
    slow = (inp, MeasureResult((2e-3,), MeasureErrorNo.NO_ERROR, 0.1, 0.0))
    fast = (MeasureInput(task.target, task, task.config_space.get(0)),
            MeasureResult((1e-3,), MeasureErrorNo.NO_ERROR, 0.1, 0.0))
    history = with_records(with_records(TaskHistory(), [slow]), [fast, slow])
    assert (history.trials, history.best, history.since_best) == (2, fast, 0)
    assert history.configs == {found.config.index, 0} and len(history.records) == 3
    assert history.best_cost == pytest.approx(1e-3)


def test_the_untuned_measurement_is_marked_in_the_log(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """The line ``tune`` writes first says it is the untuned build's config (and where the untuned
    build takes it from), so apply_history_best can prefer it within the margin."""
    monkeypatch.setenv(tophub.ENV_VAR, tophub.DISABLED)
    from tunecli.engine.log.history_best import ApplyHistoryBest
    from tunecli.engine.measure import LocalBuilder, LocalRunner, measure_option
    from tunecli.engine.tuner.callback import log_to_file
    from tunecli.engine.tuner.untuned import measure_untuned

    task = create("dense.x86", (8, 16, 4), "llvm")
    log = tmp_path / "dense.log"
    option = measure_option(LocalBuilder(n_parallel=1), LocalRunner(number=1, repeat=1, cooldown_interval=0))
    [(inp, res)] = measure_untuned(task, TaskHistory(), option, [log_to_file(str(log))])
    assert res.ok and inp.config.untuned == "default"
    [(logged, _)] = list(load_from_file(log))
    assert logged.config.untuned == "default" and logged.config.index == untuned_config(task).config.index
    assert '"untuned": "default"' in log.read_text()
    with task.target:
        why = ApplyHistoryBest(str(log), pretuned=False).why(task.target, task.workload)
    assert why == "the untuned config (default), the fastest record"


def rematch_task_and_records(untuned_cost: float, challenger_cost: float) -> tuple[object, int, int, list]:
    """dense.x86's small task (no package: its fallback config is the untuned one), a log holding
    one record of its untuned config and one of another config, with the costs given."""
    task = create("dense.x86", (8, 16, 4), "llvm")
    found = untuned_config(task)
    assert found is not None and found.exact
    found.config.untuned = found.source
    challenger = next(i for i in range(len(task.config_space)) if i != found.config.index
                      and task.config_space.is_index_valid(i))
    records = [(MeasureInput(task.target, task, found.config),
                MeasureResult((untuned_cost,), MeasureErrorNo.NO_ERROR, 0.1, 1.0)),
               (MeasureInput(task.target, task, task.config_space.get(challenger)),
                MeasureResult((challenger_cost,), MeasureErrorNo.NO_ERROR, 0.1, 1.0))]
    return task, int(found.config.index), challenger, records


@pytest.fixture
def quick_option():
    from tunecli.engine.measure import LocalBuilder, LocalRunner, measure_option
    option = measure_option(LocalBuilder(n_parallel=1), LocalRunner(number=2, repeat=1, warmup_ms=1))
    try:
        yield option
    finally:
        option["builder"].close()
        option["runner"].close()


def test_a_challenger_is_rematched_only_when_it_beats_the_untuned_config_by_the_margin(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from tunecli.engine.tuner.untuned import rematch_inputs

    monkeypatch.setenv(tophub.ENV_VAR, tophub.DISABLED)
    task, untuned, challenger, records = rematch_task_and_records(1.0e-3, 0.5e-3)
    due = rematch_inputs(task, records)
    assert [int(inp.config.index) for inp in due] == [untuned, challenger]
    assert due[0].config.untuned == "default" and all(inp.task is task for inp in due)
    _, _, _, near = rematch_task_and_records(1.0e-3, 0.97e-3)  # within layout_choice.MARGIN
    assert rematch_inputs(task, near) == []
    assert rematch_inputs(task, records[1:]) == []  # no record of the untuned config: nothing to compare
    # both measured again already (a resumed tune): not again
    assert rematch_inputs(task, records + records) == []
    assert rematch_inputs(task, records + records[:1]) != []


def test_an_untuned_config_timed_in_a_busy_moment_is_measured_again_before_a_faster_record_wins(
        monkeypatch: pytest.MonkeyPatch, tmp_path, quick_option) -> None:
    """The untuned config's only record was timed while the machine was busy (20 s for a kernel of
    microseconds), a challenger's in a quiet moment (10 s): both are measured again in turns, the
    untuned config first, until the challenger no longer beats it by the margin."""
    from tunecli.engine.log.layout_choice import MARGIN
    from tunecli.engine.tuner.callback import log_to_file
    from tunecli.engine.tuner.untuned import REMATCH_TURNS, rematch_untuned

    monkeypatch.setenv(tophub.ENV_VAR, tophub.DISABLED)
    task, untuned, challenger, records = rematch_task_and_records(20.0, 10.0)
    log = tmp_path / "dense.log"
    new = rematch_untuned(task, records, quick_option, [log_to_file(str(log))], settle=0.0)
    assert [int(inp.config.index) for inp, _ in new[:2]] == [untuned, challenger]
    assert all(res.ok and res.mean_cost < 1.0 for _, res in new)
    logged = [int(inp.config.index) for inp, _ in load_from_file(log)]
    assert logged == [int(inp.config.index) for inp, _ in new]
    assert next(iter(load_from_file(log)))[0].config.untuned == "default"
    lowest = {untuned: 20.0, challenger: 10.0}
    for turn in range(len(new) // 2):  # the match ends at the first turn the challenger stops winning
        for inp, res in new[2 * turn:2 * turn + 2]:
            lowest[int(inp.config.index)] = min(lowest[int(inp.config.index)], res.mean_cost)
        still = lowest[challenger] < lowest[untuned] * (1 - MARGIN)
        assert still == (turn < len(new) // 2 - 1) or (still and len(new) == 2 * REMATCH_TURNS)
    with task.target:
        answered = ApplyHistoryBest(records + new, pretuned=False).query(task.target, task.workload)
    assert (int(answered.index) == untuned) == (lowest[challenger] >= lowest[untuned] * (1 - MARGIN))


def test_a_challenger_that_stays_faster_is_measured_in_alternating_turns_then_left_alone(
        monkeypatch: pytest.MonkeyPatch, quick_option) -> None:
    from tunecli.engine.tuner.untuned import REMATCH_TURNS, rematch_inputs, rematch_untuned

    monkeypatch.setenv(tophub.ENV_VAR, tophub.DISABLED)
    task, untuned, challenger, records = rematch_task_and_records(1e-3, 1e-12)  # no kernel is that fast
    new = rematch_untuned(task, records, quick_option, settle=0.0)
    order = [int(inp.config.index) for inp, _ in new]
    assert order == ([untuned, challenger, challenger, untuned] * REMATCH_TURNS)[:2 * REMATCH_TURNS]
    assert all(res.ok for _, res in new)
    assert rematch_inputs(task, records + new) == []  # both measured again: a resumed tune does not repeat it
    assert rematch_untuned(task, records + new, quick_option, settle=0.0) == []
