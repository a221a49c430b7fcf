"""Random weights for the built-in networks (TVM's ``relay.testing.init``): ``create_workload``.

Weights get Xavier-uniform values (seeded), biases and batch-norm betas and means 0, batch-norm
gammas and variances 1, as TVM's initializer does.  Parameters are ``tvm.nd`` arrays
(:class:`tunecli.engine.runtime.NDArray`, a numpy array subclass) on the CPU.
"""

from __future__ import annotations

import numpy as np

from tunecli.engine.runtime import NDArray, array
from tunecli.errors import GraphError

from ..graph_expr import Function
from ..ir_module import IRModule
from ..type_infer import InferType
from ..types import TensorType


class Xavier:
    """Xavier initialisation of weights (TVM's ``relay.testing.init.Xavier``): uniform in
    ``±sqrt(magnitude / factor)`` where ``factor`` averages fan-in and fan-out (``factor_type``
    ``"avg"``, ``"in"`` or ``"out"``); depthwise weights use their window size."""

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3) -> None:
        if rnd_type != "uniform":
            raise GraphError(f"Xavier: rnd_type {rnd_type!r}; only 'uniform' exists")
        if factor_type not in ("avg", "in", "out"):
            raise GraphError(f"Xavier: factor_type {factor_type!r}; expected 'avg', 'in' or 'out'")
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def __call__(self, name: str, t: TensorType, rng: np.random.Generator) -> np.ndarray:
        """The initial value of parameter ``name`` of type ``t``."""
        if name.endswith(("bias", "beta", "mean")):
            return np.zeros(t.shape, dtype=t.dtype)
        if name.endswith(("gamma", "var")):
            return np.ones(t.shape, dtype=t.dtype)
        if not name.endswith("weight"):
            raise GraphError(
                f"no initialisation pattern for parameter {name!r}: names end with weight, bias, "
                f"gamma, beta, mean or var"
            )
        if len(t.shape) < 2:
            raise GraphError(f"Xavier: weight {name!r} of shape {t.shape} needs at least 2 dimensions")
        hw_scale = float(np.prod(t.shape[2:])) if len(t.shape) > 2 else 1.0
        fan_in, fan_out = t.shape[1] * hw_scale, t.shape[0] * hw_scale
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        if "depthwise" in name:
            factor = hw_scale
        scale = np.sqrt(self.magnitude / factor)
        return rng.uniform(-scale, scale, size=t.shape).astype(t.dtype)


def create_workload(
    net: Function, initializer: Xavier | None = None, seed: int = 0
) -> tuple[IRModule, dict[str, NDArray]]:
    """The typed module of ``net`` and random values of every parameter except ``data``.

    Parameters
    ----------
    net : Function
    initializer : Xavier, optional
    seed : int

    Returns
    -------
    (IRModule, dict of str to NDArray)
    """
    mod = InferType()(IRModule.from_expr(net))
    rng = np.random.default_rng(seed)
    init = initializer or Xavier()
    params = {}
    for p in mod["main"].params:
        if p.name_hint == "data":
            continue
        t = p.checked_type
        assert isinstance(t, TensorType)
        params[p.name_hint] = array(init(p.name_hint, t, rng))
    return mod, params
