"""XGBTuner: a model-based tuner with an XGBoost cost model and simulated annealing."""

from __future__ import annotations

from typing import Any

from tunecli.engine.tuner.model_based_tuner import ModelBasedTuner, ModelOptimizer
from tunecli.engine.tuner.sa_optimizer import SimulatedAnnealingOptimizer
from tunecli.engine.tuner.xgb_cost_model import XGBoostCostModel
from tunecli.errors import TuneError


class XGBTuner(ModelBasedTuner):
    """Tuner using an XGBoost cost model (TVM's ``XGBTuner``).

    Parameters
    ----------
    task : Task
    plan_size : int
        Trials per plan; the model is refitted after each ``plan_size`` measurements.
    feature_type : {"itervar", "knob", "curve"}
    loss_type : {"reg", "rank", "rank-binary"}
    num_threads : int, optional
        Threads used by xgboost.
    optimizer : "sa" or ModelOptimizer
    diversity_filter_ratio : float, optional
    log_interval : int
    seed : int, optional
    """

    def __init__(self, task: Any, plan_size: int = 64, feature_type: str = "itervar", loss_type: str = "reg",
                 num_threads: int | None = None, optimizer: str | ModelOptimizer = "sa",
                 diversity_filter_ratio: float | None = None, log_interval: int = 50,
                 seed: int | None = None):
        super().__init__(task, None, None, plan_size, diversity_filter_ratio, seed=seed)
        self.cost_model = XGBoostCostModel(task, feature_type=feature_type, loss_type=loss_type,
                                           num_threads=num_threads, log_interval=log_interval // 2,
                                           rng=self.rng)
        if optimizer == "sa":
            optimizer = SimulatedAnnealingOptimizer(task, log_interval=log_interval, rng=self.rng)
        elif not isinstance(optimizer, ModelOptimizer):
            raise TuneError(f"XGBTuner: optimizer must be 'sa' or a ModelOptimizer, got {optimizer!r}")
        self.model_optimizer = optimizer
