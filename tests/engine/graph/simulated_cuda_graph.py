"""A network built for ``cuda`` and run without a GPU: each kernel's loop nest, in graph order, by
the grid simulator (``tests.engine.lower.gpu_simulator``) on the executor's memory plan."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tests.engine.lower.gpu_simulator import run_grid
from tunecli.engine.graph.build_module import optimize
from tunecli.engine.graph.graph_codegen import GraphProgram, graph_program
from tunecli.engine.graph.lower_group import lower_group
from tunecli.engine.runtime.graph_executor import GraphPlan
from tunecli.engine.target import Target


def cuda_program(mod: Any, params: Mapping[str, Any], target: str = "cuda") -> GraphProgram:
    """What ``relay.build(mod, target, params)`` compiles, with each kernel's loop nest."""
    t = Target(target)
    fused = optimize(mod, params, t)
    return graph_program(fused["main"], lambda fn, name, constant: lower_group(fn, t, name, constant))


def simulate(program: GraphProgram, inputs: Mapping[str, np.ndarray], reverse: bool = False
             ) -> Sequence[np.ndarray]:
    """The graph's outputs, every kernel run in the simulated grid on buffers shared as planned
    (each buffer starts as NaN, so a value read before it is written shows)."""
    plan = GraphPlan.parse(program.graph_json)
    funcs = {name: lk.func for name, lk in zip(program.kernels, program.lowered, strict=True)}
    storage = {sid: np.full(-(-n // 4), np.nan, np.float32) for sid, n in plan.storage_bytes().items()}
    entries = [storage[sid].view(np.dtype(dtype))[: int(np.prod(shape))].reshape(shape)
               for sid, shape, dtype in zip(plan.storage, plan.shapes, plan.dtypes, strict=True)]
    for name, value in {**program.params, **inputs}.items():
        np.copyto(entries[plan.inputs[name]], np.asarray(value).reshape(entries[plan.inputs[name]].shape))
    for name, args in plan.ops:
        kernel = program.kernels[name]
        arrays = [entries[e].reshape(spec.shape) for e, spec in zip(args, kernel.arg_specs, strict=True)]
        run_grid(funcs[name], *arrays, reverse=reverse)
    return [entries[e].copy() for e in plan.outputs]
