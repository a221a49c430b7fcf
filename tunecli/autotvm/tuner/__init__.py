"""tunecli.autotvm.tuner: tuners (TVM's ``autotvm.tuner``)."""

from tunecli.autotvm import callback
from tunecli.engine.tuner import (
    GATuner,
    GridSearchTuner,
    ModelBasedTuner,
    RandomTuner,
    SimulatedAnnealingOptimizer,
    Tuner,
    XGBTuner,
)
from tunecli.engine.tuner.xgb_cost_model import XGBoostCostModel

__all__ = [
    "GATuner", "GridSearchTuner", "ModelBasedTuner", "RandomTuner", "SimulatedAnnealingOptimizer", "Tuner",
    "XGBTuner", "XGBoostCostModel", "callback",
]
