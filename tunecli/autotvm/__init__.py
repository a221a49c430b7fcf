"""tunecli.autotvm: TVM's ``tvm.autotvm`` API (re-exports of ``tunecli.engine``)."""

import tunecli.engine.ops.registry  # noqa: F401  (registers the built-in templates, e.g. dense.x86)
from tunecli.autotvm import callback, env, measure, record, task, tuner
from tunecli.engine.autotvm.dispatcher import ApplyConfig, DispatchContext, FallbackContext
from tunecli.engine.autotvm.env import GLOBAL_SCOPE
from tunecli.engine.autotvm.history_best import ApplyHistoryBest, apply_history_best
from tunecli.engine.autotvm.space import ConfigEntity, ConfigSpace, FallbackConfigEntity
from tunecli.engine.autotvm.task import Task, create, get_config, template
from tunecli.engine.measure import (
    LocalBuilder,
    LocalRunner,
    MeasureErrorNo,
    MeasureInput,
    MeasureResult,
    measure_option,
)
from tunecli.engine.rpc.runner import RPCRunner

__all__ = [
    "GLOBAL_SCOPE", "ApplyConfig", "ApplyHistoryBest", "ConfigEntity", "ConfigSpace", "DispatchContext",
    "FallbackConfigEntity", "FallbackContext", "LocalBuilder", "LocalRunner", "MeasureErrorNo",
    "MeasureInput", "MeasureResult", "RPCRunner", "Task", "apply_history_best", "callback", "create", "env",
    "get_config", "measure", "measure_option", "record", "task", "template", "tuner",
]
