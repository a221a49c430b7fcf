"""tunecli.autotvm.task.task: tasks and templates (TVM's ``autotvm.task.task`` module path)."""

from tunecli.engine.task.flop import FlopCalculationError, compute_flop
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
    "TASK_TABLE", "FlopCalculationError", "MissingTask", "Task", "args_to_workload", "compute_flop", "create",
    "deserialize_args", "get_config", "register", "serialize_args", "template",
]
