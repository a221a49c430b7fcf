"""TVM's ``autotvm.register_topi_compute`` / ``register_topi_schedule``: a tunable operator written
as a compute ``f(cfg, *args)`` and a schedule ``g(cfg, outs)``, each taking the config of the
current dispatch context for the operator's workload.

Calling the registered compute (``dense(data, weight)``, no ``cfg``) looks the workload up in the
current dispatch context (``apply_history_best``, the fallback ...), computes with that config
and records the workload in the output operation's ``attrs["workload"]``; the registered schedule
finds it there and schedules with the same config.  Once both are registered, the name is also a
template (``autotvm.task.create(name, args=(("TENSOR", shape, dtype), ...), target)``) whose
kernel takes the tensor arguments, then the output.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from tunecli.engine import te
from tunecli.engine.schedule import Schedule
from tunecli.engine.target import Target
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.task import TaskTemplate, TemplateResult, register_template
from tunecli.engine.task.workload_args import Workload, args_to_workload
from tunecli.errors import InstantiationError, TuneError

#: The attribute of an output operation that holds its workload.
WORKLOAD_ATTR = "workload"

_COMPUTES: dict[str, Callable[..., Any]] = {}
_SCHEDULES: dict[str, Callable[..., Schedule]] = {}
_SOURCES: dict[str, Callable[..., Any]] = {}


def register_topi_compute(task_name: str, func: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """Register ``func(cfg, *args) -> tensor`` as the compute of ``task_name`` (a decorator when
    ``func`` is omitted); returns the function to call without ``cfg``."""

    def _decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                raise TuneError(f"{task_name}: keyword arguments are not supported in a topi compute call")
            workload = args_to_workload(args, task_name)
            cfg = DispatchContext.current.query(Target.current(), workload)
            node = f(cfg, *args)
            for t in node if isinstance(node, (list, tuple)) else [node]:
                t.op.attrs[WORKLOAD_ATTR] = workload
            return node

        _COMPUTES[task_name] = wrapper
        _SOURCES.setdefault(task_name, f)
        _register_when_complete(task_name)
        return wrapper

    return _decorate(func) if func is not None else _decorate


def register_topi_schedule(task_name: str, func: Callable[..., Schedule] | None = None
                           ) -> Callable[..., Schedule]:
    """Register ``func(cfg, outs) -> Schedule`` as the schedule of ``task_name`` (a decorator when
    ``func`` is omitted); returns the function to call as ``schedule(outs)``."""

    def _decorate(f: Callable[..., Schedule]) -> Callable[..., Schedule]:
        @functools.wraps(f)
        def wrapper(outs: te.Tensor | Sequence[te.Tensor], *args: Any, **kwargs: Any) -> Schedule:
            workload = workload_of(outs, task_name)
            cfg = DispatchContext.current.query(Target.current(), workload)
            return f(cfg, outs, *args, **kwargs)

        _SCHEDULES[task_name] = wrapper
        _SOURCES.setdefault(task_name, f)
        _register_when_complete(task_name)
        return wrapper

    return _decorate(func) if func is not None else _decorate


def workload_of(outs: te.Tensor | Sequence[te.Tensor], task_name: str) -> Workload:
    """The workload of ``task_name`` recorded on an operation ``outs`` are computed from;
    InstantiationError when none is (the outputs were not made by its registered compute)."""
    todo = [t.op for t in (outs if isinstance(outs, (list, tuple)) else [outs])]
    seen: set[int] = set()
    while todo:
        op = todo.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        workload = op.attrs.get(WORKLOAD_ATTR) if hasattr(op, "attrs") else None
        if workload is not None and workload[0] == task_name:
            return workload
        todo.extend(t.op for t in op.input_tensors)
    raise InstantiationError(f"{task_name}: no workload in the outputs' operations; compute them with the "
                             f"compute registered under {task_name!r}")


def _register_when_complete(task_name: str) -> None:
    """Once ``task_name`` has both a compute and a schedule, register it as a template too, under
    the module and file of the user's functions (so a worker process imports them again)."""
    if task_name not in _COMPUTES or task_name not in _SCHEDULES:
        return
    compute, schedule = _COMPUTES[task_name], _SCHEDULES[task_name]

    def template_func(*args: Any) -> TemplateResult:
        out = compute(*args)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        return schedule(outs), [a for a in args if isinstance(a, te.Tensor)] + outs

    source = _SOURCES[task_name]
    template_func.__module__ = source.__module__
    template_func.__qualname__ = f"{source.__qualname__}[topi]"
    entry = TaskTemplate(task_name, template_func)
    try:
        entry.source_file = inspect.getsourcefile(source)
    except TypeError:
        entry.source_file = None
    register_template(entry)


__all__ = ["WORKLOAD_ATTR", "register_topi_compute", "register_topi_schedule", "workload_of"]
