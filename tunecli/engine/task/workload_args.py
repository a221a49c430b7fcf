"""A workload's arguments in log form: tensors as ``("TENSOR", shape, dtype)``, sequences as
tuples, so a workload ``(template name, *arguments)`` is hashable, comparable and written to a
log as it is; and back, placeholders for the tensors, when a template is traced again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from tunecli.engine import te
from tunecli.engine.ir.expr import Var
from tunecli.errors import InstantiationError, TuneError

#: One workload argument in log form: a scalar, ``None``, a loop variable, or a tuple of those
#: (a tensor is the tuple ``("TENSOR", shape, dtype)``).
WorkloadArg: TypeAlias = "None | str | int | float | Var | tuple[WorkloadArg, ...]"

#: A task's key in logs and dispatch contexts: ``(template name, *arguments in log form)``.
Workload: TypeAlias = "tuple[WorkloadArg, ...]"

#: A template argument as a template takes it: a tensor, or a value of a workload.
TaskArg: TypeAlias = "te.Tensor | WorkloadArg"


def serialize_args(args: Sequence[object]) -> tuple[WorkloadArg, ...]:
    """Return ``args`` in hashable log form: tensors as ``("TENSOR", shape, dtype)``, lists as tuples.

    Parameters
    ----------
    args : sequence

    Returns
    -------
    tuple
    """
    return tuple(_serialize(x) for x in args)


def _serialize(x: object) -> WorkloadArg:
    if x is None or isinstance(x, (str, int, float)):
        return x
    if isinstance(x, (list, tuple)):
        return tuple(_serialize(y) for y in x)
    if hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "op"):
        shape = tuple(int(getattr(s, "value", s)) for s in x.shape)
        return ("TENSOR", shape, str(x.dtype))
    if hasattr(x, "value") and isinstance(x.value, (int, float, str)):
        return x.value
    if type(x).__name__ == "Var":
        return x  # type: ignore[return-value]
    raise TuneError(f"serialize_args: cannot store an argument of type {type(x).__name__} in a workload")


def deserialize_args(args: Sequence[TaskArg]) -> list[TaskArg]:
    """Turn ``("TENSOR", shape, dtype)`` arguments back into placeholders.

    Parameters
    ----------
    args : sequence

    Returns
    -------
    list
    """
    return [as_placeholder(x) if is_tensor_arg(x) else x for x in args]


def is_tensor_arg(x: object) -> bool:
    """Whether ``x`` is a tensor in log form, ``("TENSOR", shape, dtype)`` (a list when read from JSON)."""
    return isinstance(x, (tuple, list)) and len(x) == 3 and x[0] == "TENSOR"


def as_placeholder(x: TaskArg, name: str = "placeholder") -> te.Tensor:
    """A template's tensor argument as a tensor: a placeholder named ``name`` for a tensor in log form,
    a tensor as it is.

    Parameters
    ----------
    x : te.Tensor or tuple
        A tensor, or ``("TENSOR", shape, dtype)``.
    name : str
        The placeholder's name.

    Returns
    -------
    te.Tensor
    """
    if is_tensor_arg(x):
        shape, dtype = x[1], x[2]  # type: ignore[index]
        return te.placeholder(tuple(int(d) for d in shape), dtype=str(dtype), name=name)
    if isinstance(x, te.Tensor):
        return x
    raise InstantiationError(f"{name}: a tensor or (\"TENSOR\", shape, dtype) expected, got {x!r}")


def args_to_workload(args: Sequence[object], task_name: str | None = None) -> Workload:
    """Return the workload key ``(task_name,) + serialize_args(args)``.

    Parameters
    ----------
    args : sequence
    task_name : str, optional

    Returns
    -------
    tuple
    """
    return ((task_name,) if task_name is not None else ()) + serialize_args(args)
