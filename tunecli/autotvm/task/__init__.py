"""tunecli.autotvm.task: tasks, config spaces and dispatch contexts (TVM's ``autotvm.task``)."""

from tunecli.autotvm.task import dispatcher, space, topi_integration
from tunecli.engine.graph.extract import extract_from_multiple_program, extract_from_program
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.task.dispatcher import (
    ApplyConfig,
    DispatchContext,
    FallbackContext,
    clear_fallback_cache,
)
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.flop import FlopCalculationError, compute_flop
from tunecli.engine.task.space import ConfigEntity, ConfigSpace
from tunecli.engine.task.task import (
    TASK_TABLE,
    MissingTask,
    Task,
    create,
    get_config,
    register,
    template,
)
from tunecli.engine.task.workload_args import args_to_workload, deserialize_args, serialize_args

__all__ = [
    "TASK_TABLE", "ApplyConfig", "ApplyHistoryBest", "ConfigEntity", "ConfigSpace", "DispatchContext",
    "FallbackConfigEntity", "FallbackContext", "FlopCalculationError", "MissingTask", "Task",
    "args_to_workload", "clear_fallback_cache", "compute_flop", "create", "deserialize_args",
    "dispatcher", "extract_from_multiple_program", "extract_from_program", "get_config", "register",
    "serialize_args", "space", "template", "topi_integration",
]
