"""TVM's ``tvm.relay.testing.init`` face: ``create_workload`` with ``tvm.nd.NDArray`` parameters."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from tunecli.engine.graph.graph_expr import Function
from tunecli.engine.graph.ir_module import IRModule
from tunecli.engine.graph.models import init as _init
from tunecli.engine.graph.models.init import Xavier
from tunecli.runtime import NDArray, array


def as_ndarrays(workload: tuple[IRModule, dict[str, Any]]) -> tuple[IRModule, dict[str, NDArray]]:
    """``(mod, params)`` with the parameters as :class:`tunecli.runtime.NDArray` (TVM's ``tvm.nd``)."""
    mod, params = workload
    return mod, {name: array(value) for name, value in params.items()}


def with_ndarray_params(get_workload: Callable[..., tuple[IRModule, dict[str, Any]]]) -> Callable[..., tuple]:
    """``get_workload`` (same signature and docstring) returning its parameters as ``tvm.nd`` arrays."""

    @functools.wraps(get_workload)
    def wrapped(*args: Any, **kwargs: Any) -> tuple[IRModule, dict[str, NDArray]]:
        return as_ndarrays(get_workload(*args, **kwargs))

    return wrapped


def create_workload(net: Function, initializer: Xavier | None = None, seed: int = 0) -> tuple[IRModule, dict]:
    """The typed module of ``net`` and random parameters (TVM's ``create_workload``)."""
    return as_ndarrays(_init.create_workload(net, initializer, seed))


__all__ = ["Xavier", "as_ndarrays", "create_workload", "with_ndarray_params"]
