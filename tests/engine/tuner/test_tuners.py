"""Every tuner: finishes a run, finds a config, never measures one twice, reproduces with a seed."""

from __future__ import annotations

import logging
import tempfile
from typing import Any

import pytest

from tests.engine.tuner.tuner_helpers import StreamingMeasure, SyntheticMeasure, kernel_cost, make_task
from tunecli.engine.log.record import load_from_file
from tunecli.engine.tuner import GATuner, GridSearchTuner, RandomTuner
from tunecli.engine.tuner.callback import log_to_file
from tunecli.engine.tuner.tuner import Tuner
from tunecli.engine.tuner.tuner_kinds import TUNERS
from tunecli.engine.tuner.xgb_cost_model import LOSS_TYPES

#: Options that keep a registered tuner quick on the test task, by variant name; a tuner not
#: listed here is tested once, with its defaults.
QUICK_OPTIONS: dict[str, dict[str, dict[str, Any]]] = {
    "ga": {"ga": {"pop_size": 8, "elite_num": 2}},
    "xgb": {f"xgb_knob_{loss.replace('-', '_')}": {"plan_size": 8, "feature_type": "knob",
                                                   "loss_type": loss, "num_threads": 1}
            for loss in LOSS_TYPES},
}
#: Every registered tuner, in each of its variants: ``name -> (kind, options)``.
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    variant: (kind, options)
    for kind in TUNERS for variant, options in QUICK_OPTIONS.get(kind, {kind: {}}).items()
}
#: The cases whose proposals depend on the seed (grid search visits configs in index order).
SEEDED = [name for name, (kind, _) in CASES.items() if kind != "gridsearch"]


def make_tuner(name: str, task: Any, seed: int | None) -> Tuner:
    kind, options = CASES[name]
    return TUNERS[kind].make(task, seed=seed, **options)


@pytest.fixture(scope="module")
def task() -> Any:
    return make_task()


@pytest.mark.parametrize("name", CASES)
def test_tuner_finishes_with_a_best_config_and_no_repeats(name: str, task: Any, tmp_path) -> None:
    tuner = make_tuner(name, task, 0)
    measure = SyntheticMeasure(n_parallel=4)
    log = tmp_path / "run.log"
    tuner.tune(n_trial=24, measure_option=measure, callbacks=[log_to_file(str(log))])
    assert len(measure.measured) == 24
    assert len(set(measure.measured)) == 24
    assert tuner.best_flops > 0
    assert tuner.best_config.index in measure.measured
    best_inp, best_res = tuner.best_measure_pair
    assert best_res.costs[0] == pytest.approx(kernel_cost(tuner.best_config))
    assert tuner.best_flops == pytest.approx(task.flop / best_res.costs[0])
    assert [inp.config.index for inp, _ in load_from_file(log)] == measure.measured


@pytest.mark.parametrize("name", SEEDED)
def test_same_seed_gives_the_same_sequence(name: str, task: Any) -> None:
    runs = []
    for seed in (7, 7, 8):
        measure = SyntheticMeasure(n_parallel=4)
        make_tuner(name, task, seed).tune(n_trial=20, measure_option=measure)
        runs.append(measure.measured)
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


@pytest.mark.parametrize("name", CASES)
def test_resumed_run_skips_configs_in_the_log(name: str, task: Any, tmp_path) -> None:
    log = tmp_path / "resume.log"
    first = SyntheticMeasure(n_parallel=4)
    make_tuner(name, task, 1).tune(n_trial=12, measure_option=first, callbacks=[log_to_file(str(log))])
    tuner = make_tuner(name, task, 1)
    tuner.load_history(load_from_file(log), min_seed_records=500)
    second = SyntheticMeasure(n_parallel=4)
    tuner.tune(n_trial=12, measure_option=second)
    assert len(second.measured) == 12
    assert not set(first.measured) & set(second.measured)


@pytest.mark.parametrize("name", CASES)
def test_tuner_exhausts_a_small_space_without_repeats(name: str) -> None:
    small = make_task(n=8, parts=2)  # 4 x 4 x 2 = 32 configs
    measure = SyntheticMeasure(n_parallel=3)
    tuner = make_tuner(name, small, 3)
    tuner.tune(n_trial=100, measure_option=measure)
    assert sorted(measure.measured) == list(range(32))
    assert not tuner.has_next()


def test_grid_search_order_and_range(task: Any) -> None:
    measure = SyntheticMeasure(n_parallel=5)
    GridSearchTuner(task, range_idx=(100, 109)).tune(n_trial=50, measure_option=measure)
    assert measure.measured == list(range(100, 110))
    measure = SyntheticMeasure(n_parallel=5)
    RandomTuner(task, range_idx=(100, 109), seed=0).tune(n_trial=50, measure_option=measure)
    assert sorted(measure.measured) == list(range(100, 110))


@pytest.mark.parametrize("bad", [(5, 2000), (-1, 3), [0, 3], (7, 6)])
def test_index_tuner_rejects_bad_range(task: Any, bad: Any) -> None:
    with pytest.raises(Exception, match="range_idx"):
        RandomTuner(task, range_idx=bad)


def test_early_stopping_stops_after_no_improvement(task: Any) -> None:
    measure = SyntheticMeasure(n_parallel=2)
    tuner = GridSearchTuner(task)
    tuner.tune(n_trial=400, measure_option=measure, early_stopping=10)
    assert tuner.best_iter + 10 <= len(measure.measured) < tuner.best_iter + 10 + 2
    assert len(measure.measured) < 400


def test_all_failures_are_summed_up_in_the_warning_and_leave_no_file(task: Any, caplog, tmp_path,
                                                                     monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    tempfile.tempdir = None
    caplog.set_level(logging.WARNING, logger="autotvm")
    measure = SyntheticMeasure(n_parallel=4, fail_all=True)
    tuner = RandomTuner(task, seed=0)
    try:
        tuner.tune(n_trial=8, measure_option=measure)
    finally:
        tempfile.tempdir = None
    assert tuner.best_config is None and tuner.best_flops == 0
    messages = [r.getMessage() for r in caplog.records]
    message = next(m for m in messages if "Could not find any valid schedule" in m)
    assert "every config fails in this measurement" in message and "(x8)" in message
    assert list(tmp_path.iterdir()) == []
    assert logging.getLogger("autotvm").level == logging.WARNING  # the level caplog set is restored


def test_invalid_si_prefix_is_rejected_before_measuring(task: Any) -> None:
    measure = SyntheticMeasure()
    with pytest.raises(Exception, match="Invalid SI prefix"):
        RandomTuner(task).tune(n_trial=4, measure_option=measure, si_prefix="Q")
    assert measure.measured == []


def test_ga_rejects_elite_num_above_pop_size(task: Any) -> None:
    with pytest.raises(Exception, match="elite_num"):
        GATuner(task, pop_size=4, elite_num=5)


def test_history_of_a_changed_space_is_not_trusted(task: Any, tmp_path) -> None:
    log = tmp_path / "old.log"
    RandomTuner(task, seed=0).tune(n_trial=8, measure_option=SyntheticMeasure(),
                                   callbacks=[log_to_file(str(log))])
    trusting = RandomTuner(task, seed=0)
    trusting.load_history(load_from_file(log))
    assert len(trusting.visited) == 8
    text = log.read_text()
    for value in ("0", "1"):
        text = text.replace(f'"unroll", "ot", {value}', '"unroll", "ot", 7')
    log.write_text(text)  # as if the template's knob had other values when the log was written
    tuner = RandomTuner(task, seed=0)
    tuner.load_history(load_from_file(log))
    assert tuner.visited == set()


def log_lines(path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_log_to_file_writes_each_measurement_before_its_batch_ends(task: Any, tmp_path) -> None:
    # A kill during a batch must lose no finished measurement: Tuner.tune hands each result to
    # log_to_file (a streaming callback) as the measurement reports it; other callbacks keep
    # TVM's protocol: one call per batch.
    log = tmp_path / "stream.log"
    after_each_result: list[int] = []
    at_batch_end: list[tuple[int, int]] = []
    measure = StreamingMeasure(n_parallel=4, probe=lambda: after_each_result.append(log_lines(log)))

    def batch_callback(_tuner: Any, inputs: list, results: list) -> None:
        at_batch_end.append((len(results), log_lines(log)))

    RandomTuner(task, seed=0).tune(n_trial=10, measure_option=measure,
                                   callbacks=[log_to_file(str(log)), batch_callback])
    assert after_each_result == list(range(1, 11))  # record k is on disk when result k is reported
    assert at_batch_end == [(4, 4), (4, 8), (2, 10)]
    assert [inp.config.index for inp, _ in load_from_file(log)] == measure.measured


def test_streamed_records_are_written_once_in_report_order(task: Any, tmp_path) -> None:
    # Results may be reported out of order (RPC devices), twice, or not at all (a measurement
    # without the hook): each record is written exactly once, unreported ones at the batch end.
    log = tmp_path / "order.log"
    measure = StreamingMeasure(n_parallel=4, order=lambda n: [n - 1, 0, 0] if n > 2 else [])
    GridSearchTuner(task).tune(n_trial=6, measure_option=measure, callbacks=[log_to_file(str(log))])
    assert measure.measured == [0, 1, 2, 3, 4, 5]
    assert [inp.config.index for inp, _ in load_from_file(log)] == [3, 0, 1, 2, 4, 5]
