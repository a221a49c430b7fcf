"""The tuning core that needs no compiler: config spaces, tasks, dispatch contexts, records."""

from tunecli.engine.autotvm.dispatcher import (
    ApplyConfig,
    DispatchContext,
    FallbackContext,
    clear_fallback_cache,
)
from tunecli.engine.autotvm.env import GLOBAL_SCOPE
from tunecli.engine.autotvm.history_best import ApplyHistoryBest, apply_history_best, pick_best
from tunecli.engine.autotvm.measure_types import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.autotvm.space import ConfigEntity, ConfigSpace, FallbackConfigEntity
from tunecli.engine.autotvm.task import Task, create, get_config, template

__all__ = [
    "GLOBAL_SCOPE", "ApplyConfig", "ApplyHistoryBest", "ConfigEntity", "ConfigSpace", "DispatchContext",
    "FallbackConfigEntity", "FallbackContext", "MeasureErrorNo", "MeasureInput", "MeasureResult", "Task",
    "apply_history_best", "clear_fallback_cache", "create", "get_config", "pick_best", "template",
]
