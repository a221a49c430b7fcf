"""TVM's ``tvm.relay`` face: networks as typed dataflow graphs (``from tunecli import relay``).

``relay.var``, ``relay.const``, ``relay.Function``, ``relay.Call``, ``relay.Tuple``,
``relay.TupleGetItem``, the operators (``relay.add``, ``relay.nn.conv2d``, ...), ``relay.op.get``,
``relay.analysis.free_vars``, ``relay.transform.InferType``, ``relay.create_executor("debug")`` and
``relay.testing`` (built-in networks with random weights), ``relay.frontend.from_onnx`` and
``relay.build`` re-export ``tunecli.engine.graph``.
"""

from tunecli.engine.graph.graph_printer import astext
from tunecli.engine.graph.interpreter import create_executor
from tunecli.engine.graph.ir_module import IRModule
from tunecli.engine.graph.traversal import ExprMutator
from tunecli.engine.graph.types import FuncType, TensorType, TupleType
from tunecli.engine.runtime.param_dict import load_param_dict, save_param_dict
from tunecli.relay import analysis, build_module, expr, frontend, op, testing, transform
from tunecli.relay.build_module import bind_params_by_name, build, optimize
from tunecli.relay.expr import *  # noqa: F403 - the expression nodes, listed once in relay.expr
from tunecli.relay.op import nn
from tunecli.relay.op import reduce as _reduce
from tunecli.relay.op import tensor as _tensor
from tunecli.relay.op import transform as _transform
from tunecli.relay.op.reduce import *  # noqa: F403 - the operators, listed once in relay.op's modules
from tunecli.relay.op.tensor import *  # noqa: F403
from tunecli.relay.op.transform import *  # noqa: F403
from tunecli.relay.transform import build_config

__all__ = [
    "ExprMutator",
    "FuncType",
    "IRModule",
    "TensorType",
    "TupleType",
    "analysis",
    "build",
    "build_module",
    "build_config",
    "astext",
    "bind_params_by_name",
    "load_param_dict",
    "save_param_dict",
    "create_executor",
    "expr",
    "frontend",
    "nn",
    "op",
    "optimize",
    "testing",
    "transform",
    *expr.__all__,
    *_tensor.__all__,
    *_reduce.__all__,
    *_transform.__all__,
]
