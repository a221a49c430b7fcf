"""Model-based tuning: XGBoost cost model, simulated annealing, transfer learning."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.engine.tuner.tuner_helpers import SyntheticMeasure, kernel_cost, make_task
from tunecli.engine.log.record import load_from_file
from tunecli.engine.measure.result import MeasureInput
from tunecli.engine.tuner import GATuner, GridSearchTuner, RandomTuner, XGBTuner
from tunecli.engine.tuner.callback import log_to_file
from tunecli.engine.tuner.model_based_tuner import submodular_pick
from tunecli.engine.tuner.sa_optimizer import SimulatedAnnealingOptimizer
from tunecli.engine.tuner.xgb_cost_model import XGBoostCostModel, average_recall, get_rank
from tunecli.errors import TuneError


@pytest.fixture(scope="module")
def task() -> Any:
    return make_task()


def measured_pairs(task: Any, indices: list[int]) -> tuple[list, list]:
    inputs = [MeasureInput(task.target, task, task.config_space.get(i)) for i in indices]
    return inputs, SyntheticMeasure()(inputs)


def test_xgb_search_beats_chance(task: Any) -> None:
    # One config of 1568 reaches the optimum (0.8 ms); 80 random trials find it with p = 5 %.
    optimum = min(kernel_cost(task.config_space.get(i)) for i in range(len(task.config_space)))
    tuner = XGBTuner(task, plan_size=16, feature_type="knob", num_threads=1, seed=0)
    tuner.tune(n_trial=80, measure_option=SyntheticMeasure(n_parallel=4))
    assert task.flop / tuner.best_flops == pytest.approx(optimum)


@pytest.mark.parametrize("feature_type", ["itervar", "curve"])
def test_loop_nest_features_drive_a_run(feature_type: str) -> None:
    small = make_task(n=16, parts=2)  # 5 x 5 x 2 = 50 configs
    measure = SyntheticMeasure(n_parallel=4)
    tuner = XGBTuner(small, plan_size=8, feature_type=feature_type, num_threads=1, seed=0)
    tuner.tune(n_trial=24, measure_option=measure)
    assert len(set(measure.measured)) == 24 and tuner.best_flops > 0
    assert tuner.train_ct >= 2


def test_update_alone_replays_history(task: Any) -> None:
    tuner = XGBTuner(task, plan_size=64, feature_type="knob", num_threads=1, seed=0)
    inputs, results = measured_pairs(task, [3, 5, 8, 13, 21])
    tuner.update(inputs, results)
    assert len(tuner.xs) == len(tuner.ys) == len(tuner.visited) == 5
    assert tuner.visited == {3, 5, 8, 13, 21}


def test_transfer_learning_needs_min_seed_records(task: Any, tmp_path) -> None:
    log = tmp_path / "other_shape.log"
    other = make_task(n=32, parts=3)
    RandomTuner(other, seed=0).tune(n_trial=10, measure_option=SyntheticMeasure(),
                                    callbacks=[log_to_file(str(log))])
    records = list(load_from_file(log))
    assert len(records) == 10
    tuner = XGBTuner(task, plan_size=8, feature_type="knob", num_threads=1, seed=0)
    tuner.load_history(records, min_seed_records=10)
    assert tuner.cost_model.base_model is not None
    assert len(tuner.trials) > 0 and not tuner.visited  # other shape: planned, nothing marked
    tuner = XGBTuner(task, plan_size=8, feature_type="knob", num_threads=1, seed=0)
    tuner.load_history(records, min_seed_records=11)
    assert tuner.cost_model.base_model is None
    tuner.tune(n_trial=8, measure_option=SyntheticMeasure())
    assert tuner.best_flops > 0


def test_base_model_guides_and_is_dropped_when_enough_own_samples(task: Any, tmp_path) -> None:
    log = tmp_path / "other.log"
    RandomTuner(make_task(n=32, parts=3), seed=1).tune(n_trial=16, measure_option=SyntheticMeasure(),
                                                       callbacks=[log_to_file(str(log))])
    tuner = XGBTuner(task, plan_size=8, feature_type="knob", num_threads=1, seed=1)
    tuner.load_history(load_from_file(log), min_seed_records=16)
    base = tuner.cost_model.base_model
    assert base is not None and base.upper_model is tuner.cost_model
    tuner.tune(n_trial=16, measure_option=SyntheticMeasure())
    assert tuner.cost_model.base_model is base  # discount 1/2^(16/64) is still large
    tuner.cost_model._sample_size = 300
    assert tuner.cost_model._base_model_discount() < 0.05


def fitted_model(task: Any) -> tuple[XGBoostCostModel, list[int]]:
    model = XGBoostCostModel(task, "knob", "reg", num_threads=1, rng=np.random.default_rng(0))
    xs = list(range(0, 1568, 7))
    ys = [task.flop / kernel_cost(task.config_space.get(i)) for i in xs]
    model.fit(xs, ys, plan_size=16)
    return model, xs


def test_sa_returns_unvisited_maxima_best_first(task: Any) -> None:
    model, xs = fitted_model(task)
    sa = SimulatedAnnealingOptimizer(task, n_iter=60, early_stop=20, rng=np.random.default_rng(0),
                                     exhaustive_below=0)
    exclusive = set(xs[:50])
    found = sa.find_maximums(model, 16, exclusive)
    assert 0 < len(found) <= 16 and not set(found) & exclusive
    scores = model.predict(found)
    assert list(scores) == sorted(scores, reverse=True)


def test_a_small_space_is_scored_whole(task: Any) -> None:
    model, xs = fitted_model(task)
    exclusive = set(xs[:50])
    whole = len(task.config_space)
    sa = SimulatedAnnealingOptimizer(task, rng=np.random.default_rng(0), exhaustive_below=whole)
    found = sa.find_maximums(model, 16, exclusive)
    rest = [i for i in range(len(task.config_space)) if i not in exclusive]
    scores = model.predict(rest)
    assert found == [rest[i] for i in np.argsort(-scores, kind="stable")[:16]]


def test_diversity_filter_plans_distinct_knobs(task: Any) -> None:
    measure = SyntheticMeasure(n_parallel=4)
    tuner = XGBTuner(task, plan_size=8, feature_type="knob", num_threads=1, diversity_filter_ratio=2, seed=0)
    tuner.tune(n_trial=24, measure_option=measure)
    assert len(set(measure.measured)) == 24
    assert submodular_pick(np.zeros(3), [[0, 0], [0, 0], [1, 1]], 2) == [0, 2]


def test_recall_metric() -> None:
    assert get_rank(np.array([0.1, 0.9, 0.5])).tolist() == [2, 0, 1]
    labels = np.array([3.0, 2.0, 1.0, 0.0])
    assert average_recall(labels, labels, 4) > average_recall(-labels, labels, 4)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"loss_type": "hinge"}, "Invalid loss type"),
    ({"feature_type": "pixels"}, "Invalid feature type"),
    ({"optimizer": "adam"}, "optimizer must be"),
    ({"diversity_filter_ratio": 0.5}, "diversity_filter_ratio"),
    ({"first_fit": 0}, "first_fit"),
    ({"plan_size": 16, "first_fit": 17}, "first_fit"),
])
def test_xgb_tuner_rejects_bad_options(task: Any, kwargs: dict, message: str) -> None:
    with pytest.raises(TuneError, match=message):
        XGBTuner(task, **kwargs)


@pytest.mark.parametrize(("first_fit", "fitted_at"), [
    (None, [8, 16, 32, 64, 96]),  # XGBTuner's default: 8, then each doubling, then plan_size apart
    (32, [32, 64, 96]),  # first_fit=plan_size is TVM's schedule: every plan_size
])
def test_the_model_is_fitted_early_then_every_plan(task: Any, first_fit: int | None, fitted_at: list) -> None:
    tuner = XGBTuner(task, plan_size=32, num_threads=1, seed=0, first_fit=first_fit)
    sizes: list[int] = []
    fit = tuner.cost_model.fit
    tuner.cost_model.fit = lambda xs, ys, plan_size: (sizes.append(len(xs)), fit(xs, ys, plan_size))
    measure = SyntheticMeasure(n_parallel=4)
    tuner.tune(n_trial=100, measure_option=measure)
    assert sizes == fitted_at and len(set(measure.measured)) == 100


@pytest.mark.parametrize("cls", [RandomTuner, GridSearchTuner, GATuner])
def test_mark_visited_is_respected(task: Any, cls: type) -> None:
    tuner = cls(task, seed=0) if cls is not GridSearchTuner else cls(task)
    tuner.mark_visited(range(0, 1568, 2))
    measure = SyntheticMeasure(n_parallel=4)
    tuner.tune(n_trial=40, measure_option=measure)
    assert all(i % 2 == 1 for i in measure.measured) and len(set(measure.measured)) == 40


def test_xgb_defaults_are_knob_features_and_one_thread(task: Any) -> None:
    # TVM's default is itervar; ours is knob (a lowering per config is too slow in Python for the
    # annealer's tens of thousands of predictions), and xgboost runs on one thread.
    tuner = XGBTuner(task)
    assert tuner.cost_model.fea_type == "knob" and tuner.search_model is None
    assert tuner.cost_model.xgb_params["nthread"] == 1


def test_itervar_model_reranks_what_annealing_a_knob_model_finds(task: Any) -> None:
    # The loop-nest features are computed (one lowering each) only for measured configs and for
    # the rerank_factor * plan_size candidates of each plan — never for every config annealed.
    tuner = XGBTuner(task, plan_size=8, feature_type="itervar", rerank_factor=2, seed=0)
    assert tuner.search_model is not None and tuner.search_model.fea_type == "knob"
    measure = SyntheticMeasure(n_parallel=4)
    tuner.tune(n_trial=40, measure_option=measure)
    assert tuner.train_ct >= 4 and len(set(measure.measured)) == 40
    assert len(tuner.cost_model.feature_cache) <= 40 + tuner.train_ct * 2 * 8
    assert tuner.best_flops > 0
    plain = XGBTuner(task, plan_size=8, feature_type="itervar", rerank_factor=None)
    assert plain.search_model is None  # TVM's way: anneal the itervar model itself
