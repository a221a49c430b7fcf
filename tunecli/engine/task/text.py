"""Short text forms of workloads, tasks and configs for tables (``dense.x86(64, 64, 64, float32)``)."""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine.task.space import ConfigEntity
from tunecli.engine.task.task import Task
from tunecli.engine.task.workload_args import WorkloadArg


def _arg(value: WorkloadArg) -> str:
    if isinstance(value, (tuple, list)):
        if len(value) == 3 and value[0] == "TENSOR":
            return f"{value[2]}[{','.join(str(d) for d in value[1])}]"
        return "(" + ",".join(_arg(v) for v in value) + ")"
    return str(value)


def workload_text(name: str, args: Sequence[WorkloadArg]) -> str:
    """Return ``name(arg, ...)`` with tensors as ``float32[1,3,224,224]`` and tuples as ``(2,2)``.

    Parameters
    ----------
    name : str
    args : sequence

    Returns
    -------
    str
    """
    return f"{name}({', '.join(_arg(a) for a in args)})"


def task_label(task: Task) -> str:
    """Return ``name(arg, ...)`` of a task (its workload text), for display.

    Parameters
    ----------
    task : Task

    Returns
    -------
    str
    """
    return workload_text(task.name, task.args)


def config_text(config: ConfigEntity) -> str:
    """Return ``#index knob=value ...`` for a config entity (``fallback`` for a fallback config).

    Parameters
    ----------
    config : ConfigEntity

    Returns
    -------
    str
    """
    if getattr(config, "is_fallback", False):
        return "fallback"
    entities = config.to_json_dict()["entity"]
    return f"#{config.index} " + " ".join(f"{name}={_knob(value)}" for name, _, value in entities)


def _knob(value: object) -> str:
    if isinstance(value, (tuple, list)):
        return "[" + ",".join(_knob(v) for v in value) + "]"
    return str(value)
