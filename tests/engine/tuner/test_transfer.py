"""Transfer learning: records of a template's other tasks (other shapes, other knob structures)
train the XGB tuner's base model, rows tell the tasks apart by their workload's features so that
the task's own measurements override the other shapes where it differs, and a transferred tuner
still measures every trial asked."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from tests.engine.tuner.tuner_helpers import SyntheticMeasure, kernel_cost, make_task
from tunecli.engine.log.record import load_from_file
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.task.knob_features import knob_features
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.task import create
from tunecli.engine.tuner import RandomTuner, XGBTuner
from tunecli.engine.tuner.callback import log_to_file
from tunecli.engine.tuner.features import transfer_features, workload_features
from tunecli.engine.tuner.model_based_tuner import MIN_SEED_RECORDS
from tunecli.engine.tuner.xgb_cost_model import scale_per_group
from tunecli.errors import TuneError


def every_config_records(task: Any) -> list[tuple]:
    """(input, result) of every config of ``task`` (costs of ``SyntheticMeasure``)."""
    space = task.config_space
    inputs = [MeasureInput(task.target, task, space.get(i)) for i in range(len(space))]
    return list(zip(inputs, SyntheticMeasure()(inputs), strict=True))


def test_transfer_features_of_own_configs_are_the_knob_features() -> None:
    task = make_task(n=16, parts=3)
    space = task.config_space
    for i in range(0, len(space), 3):
        np.testing.assert_array_equal(transfer_features(space, space.get(i)), knob_features(space, [i])[0])


def test_transfer_features_match_knobs_by_name() -> None:
    mine = ConfigSpace()
    mine.define_split("tile_x", 16, num_outputs=2)
    mine.define_knob("tile_oh", [1, 2])
    mine.define_split("tile_y", 16, num_outputs=3)
    other = ConfigSpace()  # another layer: no tile_oh, an unroll knob, tile_y in two parts
    other.define_split("tile_y", 8, num_outputs=2)
    other.define_knob("unroll_kw", [True, False])
    other.define_split("tile_x", 32, num_outputs=2)
    config = other.get(other.knob2point([1, 0, 2]))  # tile_y [-1, 2], unroll True, tile_x [-1, 4]
    row = transfer_features(mine, config)
    assert len(row) == len(knob_features(mine, [0])[0]) == 2 + 1 + 3
    np.testing.assert_array_equal(row[:2], [-1, 4])  # tile_x: matched by name, not by position
    assert np.isnan(row[2:]).all()  # tile_oh missing there, tile_y split in another number of parts


def test_workload_features_are_the_numbers_of_the_arguments_and_the_flop_count() -> None:
    import tunecli.engine.ops.registry  # noqa: F401 - registers dense.x86

    dense = create("dense.x86", (1, 1000, 1024, "float32"), "llvm")  # the dtype is no number
    expected = [math.log2(2), math.log2(1001), math.log2(1025), math.log2(1 + 2 * 1000 * 1024)]
    np.testing.assert_allclose(workload_features(dense), expected, rtol=1e-6)
    task = make_task(n=64, parts=2)
    np.testing.assert_allclose(workload_features(task, flop=7.0), [math.log2(65), math.log2(3), 3.0])


def test_rows_of_a_transferred_model_end_with_their_workloads_features() -> None:
    source, task = make_task(n=32, parts=2), make_task(n=64, parts=2)
    width = len(knob_features(task.config_space, [0])[0])
    tuner = XGBTuner(task, plan_size=8, num_threads=1, seed=0)
    assert tuner.cost_model.context is None  # no transfer: knob features alone
    assert tuner.cost_model._get_feature([0, 1]).shape == (2, width)
    tuner.load_history(every_config_records(source), min_seed_records=50)
    base = tuner.cost_model.base_model
    hist_x, _ = base.history
    np.testing.assert_array_equal(hist_x[:, width:], np.tile(workload_features(source), (len(hist_x), 1)))
    np.testing.assert_array_equal(tuner.cost_model.context, workload_features(task))
    rows = tuner.cost_model._get_feature([0, 1])
    np.testing.assert_array_equal(rows[:, :width], knob_features(task.config_space, [0, 1]))
    np.testing.assert_array_equal(rows[:, width:], np.tile(workload_features(task), (2, 1)))


def _records_best_at(task: Any, best_x: int, indices: Any) -> list[tuple]:
    """(input, result) of ``indices`` of ``task``, costs best at inner ``tile_x`` ``best_x``
    (and inner ``tile_y`` 4)."""
    records = []
    for i in indices:
        config = task.config_space.get(int(i))
        y, x = config["tile_y"].size[-1], config["tile_x"].size[-1]
        cost = 1e-3 * (1 + (math.log2(x) - math.log2(best_x)) ** 2 + 0.2 * (math.log2(y) - 2) ** 2)
        records.append((MeasureInput(task.target, task, config),
                        MeasureResult((cost,), MeasureErrorNo.NO_ERROR, 0.0, 0.0)))
    return records


@pytest.mark.parametrize("seed", [0, 1])
def test_own_measurements_override_the_other_shapes_where_this_shape_differs(seed: int) -> None:
    # the other shapes are best at inner tile_x 8, this one at 2: once measured, its own rows
    # (told apart by the workload's features) win over the records of every config of the others
    history = []
    for n in (16, 32):
        source = make_task(n=n, parts=2)
        history += _records_best_at(source, 8, range(len(source.config_space)))
    task = make_task(n=64, parts=2)
    space = task.config_space
    tuner = XGBTuner(task, plan_size=8, num_threads=1, seed=seed)
    tuner.load_history(history, min_seed_records=50)
    assert all(space.get(i)["tile_x"].size[-1] == 8 for i in tuner.trials[:4])  # what the others teach
    own = _records_best_at(task, 2, [i for i in range(len(space)) if space.get(i)["tile_y"].size[-1] == 1])
    tuner.update([inp for inp, _ in own], [res for _, res in own])
    assert [space.get(i)["tile_x"].size[-1] for i in tuner.trials[:2]] == [2, 2]


def test_scores_are_scaled_by_the_best_of_their_workload() -> None:
    scaled = scale_per_group([2.0, 4.0, 30.0, 10.0, 0.0, 0.0], ["a", "a", "b", "b", "c", "c"])
    np.testing.assert_allclose(scaled, [0.5, 1.0, 1.0, 1 / 3, 0.0, 0.0])


def test_history_of_another_knob_structure_trains_the_base_model(tmp_path) -> None:
    log = tmp_path / "parts3.log"
    RandomTuner(make_task(n=32, parts=3), seed=0).tune(n_trial=24, measure_option=SyntheticMeasure(),
                                                       callbacks=[log_to_file(str(log))])
    tuner = XGBTuner(make_task(n=64, parts=2), plan_size=8, num_threads=1, seed=0)
    tuner.load_history(load_from_file(log), min_seed_records=24)
    assert tuner.cost_model.base_model is not None and len(tuner.trials) == 8


def test_base_model_from_another_shape_plans_the_optimum_first() -> None:
    # kernel_cost is best for inner tiles 4 x 8, unrolled, whatever the size: a model trained on
    # every config of the 32 x 32 task knows where that is in the 64 x 64 task's space.
    task = make_task(n=64, parts=2)
    optimum = min(kernel_cost(task.config_space.get(i)) for i in range(len(task.config_space)))
    measure = SyntheticMeasure(n_parallel=8)
    tuner = XGBTuner(task, plan_size=8, num_threads=1, seed=0)
    tuner.load_history(every_config_records(make_task(n=32, parts=2)), min_seed_records=50)
    tuner.tune(n_trial=8, measure_option=measure)
    assert task.flop / tuner.best_flops == pytest.approx(optimum)
    assert len(task.config_space) > 8 * 4  # not found by exhausting the space


def test_transfer_starts_at_the_tuners_min_seed_records() -> None:
    records = every_config_records(make_task(n=32, parts=3))  # 882 records of another shape
    task = make_task(n=64, parts=2)

    def transferred(n_records: int, **options: Any) -> bool:
        tuner = XGBTuner(task, plan_size=8, num_threads=1, seed=0, **options)
        tuner.load_history(records[:n_records])
        return tuner.cost_model.base_model is not None

    assert MIN_SEED_RECORDS == XGBTuner(task).min_seed_records == 100  # TVM's 500: ~3 tasks' logs
    assert transferred(100) and not transferred(99)
    assert transferred(50, min_seed_records=50) and not transferred(49, min_seed_records=50)
    tuner = XGBTuner(task, plan_size=8, num_threads=1, seed=0)
    tuner.load_history(records[:300], min_seed_records=500)  # a caller's own minimum wins
    assert tuner.cost_model.base_model is None
    with pytest.raises(TuneError, match="min_seed_records must be >= 1, got 0"):
        XGBTuner(task, min_seed_records=0)


@pytest.mark.parametrize("n_trial", [5, 8, 20])
def test_a_transferred_tuner_measures_every_trial_asked(n_trial: int) -> None:
    task = make_task(n=64, parts=2)
    own = every_config_records(task)[::3]  # this task measured before: never proposed again
    history = every_config_records(make_task(n=32, parts=2)) + own
    measure = SyntheticMeasure(n_parallel=4)
    tuner = XGBTuner(task, plan_size=8, num_threads=1, seed=1)
    tuner.load_history(history, min_seed_records=50)
    assert tuner.cost_model.base_model is not None
    tuner.tune(n_trial=n_trial, measure_option=measure)
    measured = set(measure.measured)
    assert len(measure.measured) == len(measured) == n_trial
    assert not measured & {int(inp.config.index) for inp, _ in own}


@pytest.mark.parametrize("feature_type", ["itervar", "curve"])
def test_loop_nest_models_transfer_too(feature_type: str) -> None:
    task = make_task(n=16, parts=2)
    measure = SyntheticMeasure(n_parallel=4)
    tuner = XGBTuner(task, plan_size=4, feature_type=feature_type, num_threads=1, seed=0)
    tuner.load_history(every_config_records(make_task(n=32, parts=2)), min_seed_records=20)
    assert tuner.cost_model.base_model is not None and tuner.search_model.base_model is not None
    tuner.tune(n_trial=12, measure_option=measure)
    assert len(set(measure.measured)) == 12 and tuner.best_flops > 0


@pytest.mark.parametrize("seed", [0, 2, 4])
def test_a_model_transferred_after_own_fits_plans_the_next_trials_at_once(seed: int) -> None:
    task = make_task(n=64, parts=2)
    space = task.config_space
    optimum = min(kernel_cost(space.get(i)) for i in range(len(space)))

    def best_of_next_three() -> float:
        return min(kernel_cost(space.get(i)) for i in tuner.trials[:3]) / optimum

    tuner = XGBTuner(task, plan_size=8, num_threads=1, seed=seed)
    tuner.tune(n_trial=8, measure_option=SyntheticMeasure())  # fitted on its own 8 measurements
    assert tuner.train_ct == 1 and not tuner.transferred and best_of_next_three() > 3
    tuner.load_history(every_config_records(make_task(n=32, parts=2)), min_seed_records=50)
    assert tuner.transferred and tuner.train_ct == 2  # refitted with the other shape's records
    assert best_of_next_three() == pytest.approx(1.0)  # and the plan is the transferred model's


def test_a_late_transfer_counts_only_the_records_of_other_tasks() -> None:
    task = make_task(n=64, parts=2)
    tuner = XGBTuner(task, plan_size=8, num_threads=1, seed=0, min_seed_records=50)
    own = every_config_records(task)[:60]  # this task's own records are no transfer
    others = every_config_records(make_task(n=32, parts=2))
    tuner.transfer_late(own + others[:49])
    assert not tuner.transferred
    tuner.transfer_late(own + others[:50])
    assert tuner.transferred
