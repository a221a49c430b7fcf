"""TVM's ``tvm.relay.transform`` face: the graph passes."""

from tunecli.engine.graph.passes import (
    AlterOpLayout,
    DeadCodeElimination,
    FoldConstant,
    FoldScaleAxis,
    FuseOps,
    InferType,
    Sequential,
    SimplifyInference,
)
from tunecli.engine.graph.passes.convert_layout import ConvertLayout
from tunecli.engine.graph.passes.pass_infra import PassContext

__all__ = ["AlterOpLayout", "ConvertLayout", "DeadCodeElimination", "FoldConstant", "FoldScaleAxis",
           "FuseOps", "InferType", "PassContext", "Sequential", "SimplifyInference"]
