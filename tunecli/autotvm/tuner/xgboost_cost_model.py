"""tunecli.autotvm.tuner.xgboost_cost_model: the XGBoost cost model (TVM's module path)."""

from tunecli.engine.tuner.xgb_cost_model import XGBoostCostModel

__all__ = ["XGBoostCostModel"]
