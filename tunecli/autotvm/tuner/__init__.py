"""tunecli.autotvm.tuner: tuners (TVM's ``autotvm.tuner``), and ``remeasure_top`` (tunecli's: a
task's best configs measured again, ``engine.tuner.remeasure``)."""

from tunecli.autotvm import callback
from tunecli.engine.tuner import (
    GATuner,
    GridSearchTuner,
    ModelBasedTuner,
    RandomTuner,
    SimulatedAnnealingOptimizer,
    Tuner,
    XGBTuner,
    remeasure_top,
)
from tunecli.engine.tuner.xgb_cost_model import XGBoostCostModel

__all__ = [
    "GATuner", "GridSearchTuner", "ModelBasedTuner", "RandomTuner", "SimulatedAnnealingOptimizer", "Tuner",
    "XGBTuner", "XGBoostCostModel", "callback", "remeasure_top",
]
