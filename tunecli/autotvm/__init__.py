"""tunecli.autotvm: TVM's ``tvm.autotvm`` API (re-exports of ``tunecli.engine``)."""

from tunecli.autotvm import callback, env, graph_tuner, measure, record, task, tophub, tuner, util, utils
from tunecli.engine.graph_tuner.graph_best import ApplyGraphBest, apply_graph_best
from tunecli.engine.log.history_best import ApplyHistoryBest, apply_history_best
from tunecli.engine.measure import (
    LocalBuilder,
    LocalRunner,
    MeasureErrorNo,
    MeasureInput,
    MeasureResult,
    measure_option,
)
from tunecli.engine.rpc.rpc_runner import RPCRunner
from tunecli.engine.task.dispatcher import ApplyConfig, DispatchContext, FallbackContext
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.scope import GLOBAL_SCOPE
from tunecli.engine.task.space import ConfigEntity, ConfigSpace
from tunecli.engine.task.task import Task, create, get_config, template
from tunecli.engine.task.topi_integration import register_topi_compute, register_topi_schedule

__all__ = [
    "GLOBAL_SCOPE", "ApplyConfig", "ApplyGraphBest", "ApplyHistoryBest", "ConfigEntity", "ConfigSpace",
    "DispatchContext", "FallbackConfigEntity", "FallbackContext", "LocalBuilder", "LocalRunner",
    "MeasureErrorNo", "MeasureInput", "MeasureResult", "RPCRunner", "Task", "apply_graph_best",
    "apply_history_best", "callback", "create", "env", "get_config", "graph_tuner", "measure",
    "measure_option", "record", "register_topi_compute", "register_topi_schedule", "task", "template",
    "tophub", "tuner", "util", "utils",
]
