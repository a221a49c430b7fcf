"""tunecli.autotvm.task: tasks, config spaces and dispatch contexts (TVM's ``autotvm.task``)."""

from tunecli.autotvm.task import dispatcher, space, topi_integration
from tunecli.autotvm.task import task as _task
from tunecli.autotvm.task.task import *  # noqa: F403 - tasks and templates, listed once in autotvm.task.task
from tunecli.engine.graph.extract import extract_from_multiple_program, extract_from_program
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.task.dispatcher import (
    ApplyConfig,
    DispatchContext,
    FallbackContext,
    clear_fallback_cache,
)
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.space import ConfigEntity, ConfigSpace

__all__ = [
    *_task.__all__,
    "ApplyConfig", "ApplyHistoryBest", "ConfigEntity", "ConfigSpace", "DispatchContext",
    "FallbackConfigEntity", "FallbackContext", "clear_fallback_cache", "dispatcher",
    "extract_from_multiple_program", "extract_from_program", "space", "topi_integration",
]
