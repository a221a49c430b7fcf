"""tunecli.autotvm.task.dispatcher: the dispatch contexts by TVM's module path
(``from tvm.autotvm.task.dispatcher import ApplyHistoryBest, DispatchContext``)."""

from tunecli.engine.graph_tuner.graph_best import ApplyGraphBest
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.task.dispatcher import (
    ApplyConfig,
    DispatchContext,
    FallbackContext,
    clear_fallback_cache,
)

__all__ = ["ApplyConfig", "ApplyGraphBest", "ApplyHistoryBest", "DispatchContext", "FallbackContext",
           "clear_fallback_cache"]
