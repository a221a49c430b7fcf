"""ONNX control flow: If with a condition known at import, as the branch it takes.

torch's TorchScript exporter emits If around shape computations (``Tensor.tile``, ``squeeze`` of a
dimension it cannot see), whose condition folds to a constant once the input shapes are given; the
chosen branch's nodes are imported in place of the If.  A condition computed at run time is refused.
"""

from __future__ import annotations

import numpy as np

from .onnx_node import NodeContext
from .onnx_table import Outputs, folder


@folder("If", since=7)
def _if(ctx: NodeContext) -> Outputs:
    from .onnx import convert_subgraph

    condition = np.asarray(ctx.array(0, "cond"))
    if condition.size != 1:
        raise ctx.error(f"the condition must hold one value, got shape {condition.shape}")
    key = "then_branch" if bool(condition.reshape(())) else "else_branch"
    branch = ctx.attr(key)
    if branch is None or not hasattr(branch, "node"):
        raise ctx.error(f"attribute {key} (a graph) is missing")
    outputs = convert_subgraph(branch, ctx.opset, ctx.store)
    if len(outputs) != ctx.num_outputs:
        raise ctx.error(f"{key} gives {len(outputs)} outputs, the node declares {ctx.num_outputs}")
    return outputs
