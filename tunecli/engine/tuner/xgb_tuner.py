"""XGBTuner: a model-based tuner with an XGBoost cost model and simulated annealing.

Where TVM's default ``feature_type`` is ``"itervar"``, ours is ``"knob"``: loop-nest features
(``itervar``, ``curve``) cost a lowering of the config in Python, and simulated annealing
predicts tens of thousands of configs per plan, so a plan with them takes minutes where knob
features take a fraction of a second (figures in ``benchmarks/README.md``).  With
``itervar`` or ``curve`` the annealing explores a companion knob-feature model fitted on the same
measurements, and the loop-nest model re-ranks the ``rerank_factor * plan_size`` best candidates
it found (a few seconds per plan); ``rerank_factor=None`` anneals the loop-nest model itself, as
TVM does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tunecli.engine.tuner.model_based_tuner import MIN_SEED_RECORDS, ModelBasedTuner, ModelOptimizer
from tunecli.engine.tuner.sa_optimizer import SimulatedAnnealingOptimizer
from tunecli.engine.tuner.xgb_cost_model import XGBoostCostModel
from tunecli.errors import TuneError

if TYPE_CHECKING:
    from tunecli.engine.task.task import Task


class XGBTuner(ModelBasedTuner):
    """Tuner using an XGBoost cost model (TVM's ``XGBTuner``).

    Parameters
    ----------
    task : Task
    plan_size : int
        Trials per plan; the model is refitted after each ``plan_size`` measurements.
    feature_type : {"knob", "itervar", "curve"}
        Features of the cost model.  The default is ``"knob"`` (TVM's is ``"itervar"``): loop-nest
        features cost a lowering per config here (see the module doc).
    loss_type : {"reg", "rank", "rank-binary"}
    num_threads : int or None
        Threads used by xgboost (its ``nthread``).  Default 1: the training sets are small and the
        annealing predicts 128 configs at a time, so more threads mostly add synchronisation,
        which costs most where other processes (builders, measurements) hold the other cores.
        None: xgboost's default (every core).
    optimizer : "sa" or ModelOptimizer
    diversity_filter_ratio : float, optional
    log_interval : int
    seed : int, optional
    rerank_factor : int or None
        With ``itervar``/``curve`` features: the optimizer searches a knob-feature model and the
        loop-nest model picks the plan among ``rerank_factor * plan_size`` candidates.  None: the
        optimizer searches the loop-nest model itself (TVM's way; slow on large spaces).
    first_fit : int, optional
        Measurements before the model is first fitted; refits follow each doubling of the data
        until they are ``plan_size`` apart.  Default ``min(8, plan_size)``, where TVM fits first
        after ``plan_size``: a model of 8 measurements already beats random picks, and its plans
        reach a given speed in a fraction of the trials (``benchmarks/bench_transfer.py``).
        ``first_fit=plan_size`` is TVM's schedule.
    min_seed_records : int
        Records of the task's template (a network's other layers, an earlier log) before the tuner
        starts from a transfer-learned model (``resume``/``load_history``): default 100, where
        TVM's 500 meant about three other tasks tuned 200 trials each before any transfer.
    """

    def __init__(self, task: Task, plan_size: int = 64, feature_type: str = "knob", loss_type: str = "reg",
                 num_threads: int | None = 1, optimizer: str | ModelOptimizer = "sa",
                 diversity_filter_ratio: float | None = None, log_interval: int = 50,
                 seed: int | None = None, rerank_factor: int | None = 4, first_fit: int | None = None,
                 min_seed_records: int = MIN_SEED_RECORDS):
        super().__init__(task, None, None, plan_size, diversity_filter_ratio, seed=seed,
                         rerank_factor=rerank_factor or 1,
                         first_fit=first_fit if first_fit is not None else min(8, plan_size),
                         min_seed_records=min_seed_records)
        self.cost_model = XGBoostCostModel(task, feature_type=feature_type, loss_type=loss_type,
                                           num_threads=num_threads, log_interval=log_interval // 2,
                                           rng=self.rng)
        if feature_type != "knob" and rerank_factor:
            self.search_model = XGBoostCostModel(task, feature_type="knob", loss_type=loss_type,
                                                 num_threads=num_threads, log_interval=log_interval // 2,
                                                 rng=self.rng)
        if optimizer == "sa":
            optimizer = SimulatedAnnealingOptimizer(task, log_interval=log_interval, rng=self.rng)
        elif not isinstance(optimizer, ModelOptimizer):
            raise TuneError(f"XGBTuner: optimizer must be 'sa' or a ModelOptimizer, got {optimizer!r}")
        self.model_optimizer = optimizer
