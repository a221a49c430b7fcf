"""Tuners: the tuning loop and the strategies that propose configs."""

from tunecli.engine.tuner.ga_tuner import GATuner
from tunecli.engine.tuner.index_tuners import GridSearchTuner, IndexBaseTuner, RandomTuner
from tunecli.engine.tuner.model_based_tuner import CostModel, ModelBasedTuner, ModelOptimizer
from tunecli.engine.tuner.remeasure import remeasure_top
from tunecli.engine.tuner.sa_optimizer import SimulatedAnnealingOptimizer
from tunecli.engine.tuner.task_scheduler import SCHEDULER_POLICIES, TaskScheduler
from tunecli.engine.tuner.tuner import Tuner
from tunecli.engine.tuner.xgb_tuner import XGBTuner

__all__ = [
    "CostModel", "GATuner", "GridSearchTuner", "IndexBaseTuner", "ModelBasedTuner", "ModelOptimizer",
    "RandomTuner", "SCHEDULER_POLICIES", "SimulatedAnnealingOptimizer", "TaskScheduler", "Tuner", "XGBTuner",
    "remeasure_top",
]
