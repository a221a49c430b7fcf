"""TVM's ``tvm.relay.op.transform`` face: operators that move or retype data."""

from tunecli.engine.graph.ops.transform import expand_dims, layout_transform, reshape, squeeze, transpose
from tunecli.engine.graph.ops.unary import cast

__all__ = ["cast", "expand_dims", "layout_transform", "reshape", "squeeze", "transpose"]
