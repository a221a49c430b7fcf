"""TVM's ``tvm.relay`` face: networks as typed dataflow graphs (``from tunecli import relay``).

``relay.var``, ``relay.const``, ``relay.Function``, ``relay.Call``, ``relay.Tuple``,
``relay.TupleGetItem``, the operators (``relay.add``, ``relay.nn.conv2d``, ...), ``relay.op.get``,
``relay.analysis.free_vars``, ``relay.transform.InferType``, ``relay.create_executor("debug")`` and
``relay.testing`` (built-in networks with random weights), ``relay.frontend.from_onnx`` and
``relay.build`` re-export ``tunecli.engine.graph``.
"""

from tunecli.engine.graph.graph_expr import (
    Call,
    Constant,
    Expr,
    Function,
    Tuple,
    TupleGetItem,
    TupleWrapper,
    Var,
    const,
    var,
)
from tunecli.engine.graph.graph_printer import astext
from tunecli.engine.graph.interpreter import create_executor
from tunecli.engine.graph.ir_module import IRModule
from tunecli.engine.graph.traversal import ExprMutator
from tunecli.engine.graph.types import FuncType, TensorType, TupleType
from tunecli.relay import analysis, build_module, expr, frontend, op, testing, transform
from tunecli.relay.build_module import build, optimize
from tunecli.relay.op import (
    add,
    cast,
    clip,
    concatenate,
    divide,
    exp,
    expand_dims,
    layout_transform,
    log,
    max,
    maximum,
    mean,
    min,
    minimum,
    multiply,
    negative,
    nn,
    reshape,
    sigmoid,
    sqrt,
    squeeze,
    subtract,
    sum,
    tanh,
    transpose,
)

__all__ = [
    "Call",
    "Constant",
    "Expr",
    "ExprMutator",
    "FuncType",
    "Function",
    "IRModule",
    "TensorType",
    "Tuple",
    "TupleGetItem",
    "TupleType",
    "TupleWrapper",
    "Var",
    "add",
    "analysis",
    "build",
    "build_module",
    "astext",
    "cast",
    "clip",
    "concatenate",
    "const",
    "create_executor",
    "divide",
    "exp",
    "expand_dims",
    "expr",
    "frontend",
    "layout_transform",
    "log",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "negative",
    "nn",
    "op",
    "optimize",
    "reshape",
    "sigmoid",
    "sqrt",
    "squeeze",
    "subtract",
    "sum",
    "tanh",
    "testing",
    "transform",
    "transpose",
    "var",
]
