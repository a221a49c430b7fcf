"""TVM's ``tvm.relay.op.tensor`` face: the element-wise operators and ``concatenate``."""

from tunecli.engine.graph.ops.broadcast import add, divide, maximum, minimum, multiply, subtract
from tunecli.engine.graph.ops.transform import concatenate
from tunecli.engine.graph.ops.unary import clip, exp, log, negative, sigmoid, sqrt, tanh

__all__ = ["add", "clip", "concatenate", "divide", "exp", "log", "maximum", "minimum", "multiply", "negative",
           "sigmoid", "sqrt", "subtract", "tanh"]
