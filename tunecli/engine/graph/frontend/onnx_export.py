"""A graph module as an ONNX model (opset 13), so that onnxruntime can run the same network as a
built-in model (``apply`` and the network benchmark compare with it).

The operators of ``relay.testing``'s networks have an ONNX form: conv2d, dense, bias_add,
batch_norm, relu, clip, add, max_pool2d, global_avg_pool2d, batch_flatten, concatenate, dropout
(inference: the identity) and softmax.  Any other operator is a ``GraphError`` naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tunecli.errors import GraphError

from ..graph_expr import Call, Constant, Expr, Tuple, TupleGetItem
from ..ir_module import IRModule
from ..ops.conv import conv2d_padding
from ..traversal import post_order
from ..type_infer import infer_types

#: The operators :func:`to_onnx` writes.
EXPORTED_OPS = ("nn.conv2d", "nn.dense", "nn.bias_add", "nn.batch_norm", "nn.relu", "clip", "add",
                "nn.max_pool2d", "nn.global_avg_pool2d", "nn.batch_flatten", "concatenate", "nn.dropout",
                "nn.softmax")
_OPSET = 13


def to_onnx(mod: IRModule, params: Mapping[str, Any]) -> bytes:
    """The network ``mod["main"]`` as a serialized ONNX model with ``params`` as initializers.

    Parameters
    ----------
    mod : IRModule
    params : mapping of str to array

    Returns
    -------
    bytes

    Raises
    ------
    GraphError
        For an operator without an ONNX form here (see :data:`EXPORTED_OPS`), a non-float32
        network or more than one output.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    fn = mod["main"]
    infer_types(fn)
    names: dict[Expr, Any] = {}
    nodes: list[Any] = []
    inits: list[Any] = []
    inputs = []
    for p in fn.params:
        names[p] = p.name_hint
        if str(p.checked_type.dtype) != "float32":
            raise GraphError(f"to_onnx: input {p.name_hint!r} is {p.checked_type.dtype}; only float32 "
                             "networks are written")
        if p.name_hint in params:
            inits.append(numpy_helper.from_array(_array(params[p.name_hint]), p.name_hint))
        else:
            shape = [int(d) for d in p.checked_type.shape]
            inputs.append(helper.make_tensor_value_info(p.name_hint, TensorProto.FLOAT, shape))

    def constant(value: np.ndarray) -> str:
        name = f"c{len(inits)}"
        inits.append(numpy_helper.from_array(value, name))
        return name

    def add(op: str, args: list[str], node: Any, **attrs: Any) -> str:
        """Write one ONNX node computing ``node`` (an expression, or a key of a helper value)."""
        names[node] = f"n{len(nodes)}"
        nodes.append(helper.make_node(op, args, [names[node]], **attrs))
        return names[node]

    for node in post_order(fn.body, into_functions=False):
        if isinstance(node, Constant):
            names[node] = constant(_array(node.data))
        elif isinstance(node, TupleGetItem):
            names[node] = names[node.tuple_value]
        elif isinstance(node, Tuple):
            names[node] = [names[f] for f in node.fields]
        elif isinstance(node, Call):
            _call(node, [names[a] for a in node.args], add, constant)
    if not isinstance(names.get(fn.body), str):
        raise GraphError("to_onnx: only networks with one output are written")
    out_shape = [int(d) for d in fn.body.checked_type.shape]
    output = helper.make_tensor_value_info(names[fn.body], TensorProto.FLOAT, out_shape)
    graph = helper.make_graph(nodes, "network", inputs, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _array(value: Any) -> np.ndarray:
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def _call(node: Call, args: list[Any], add: Any, constant: Any) -> None:
    """Write one call as ONNX nodes (``args``: the names of its arguments)."""
    name, a = node.op.name, node.attrs
    if name == "nn.conv2d":
        kh, kw = (int(d) for d in node.args[1].checked_type.shape[2:])
        top, left, bottom, right = conv2d_padding(a, (kh, kw))
        add("Conv", args, node, strides=list(a.strides), dilations=list(a.dilation),
            pads=[top, left, bottom, right], group=a.groups, kernel_shape=[kh, kw])
    elif name == "nn.dense":
        add("Gemm", args, node, transB=1)
    elif name == "nn.bias_add":
        ndim = len(node.args[0].checked_type.shape)
        axis = a.axis % ndim
        bias = args[1]
        if axis != ndim - 1:  # (C,) -> (C, 1, ...) so that ONNX's right-aligned broadcast meets axis
            axes = constant(np.arange(1, ndim - axis, dtype="int64"))
            bias = add("Unsqueeze", [args[1], axes], (node, "bias"))
        add("Add", [args[0], bias], node)
    elif name == "nn.batch_norm":
        if a.axis % len(node.args[0].checked_type.shape) != 1:
            raise GraphError("to_onnx: nn.batch_norm over an axis other than 1 has no ONNX form")
        add("BatchNormalization", args, node, epsilon=a.epsilon)
    elif name == "nn.relu":
        add("Relu", args, node)
    elif name == "clip":
        add("Clip", [args[0], constant(np.float32(a.a_min)), constant(np.float32(a.a_max))], node)
    elif name == "add":
        add("Add", args, node)
    elif name == "nn.max_pool2d":
        pads = list(a.padding) * (2 if len(a.padding) == 2 else 1)  # (top, left, bottom, right)
        add("MaxPool", args, node, kernel_shape=list(a.pool_size), strides=list(a.strides), pads=pads,
            dilations=list(a.dilation), ceil_mode=int(a.ceil_mode))
    elif name == "nn.global_avg_pool2d":
        add("GlobalAveragePool", args, node)
    elif name == "nn.batch_flatten":
        add("Flatten", args, node)
    elif name == "concatenate":
        add("Concat", list(args[0]), node, axis=a.axis)
    elif name == "nn.dropout":
        add("Identity", args, node)
    elif name == "nn.softmax":
        add("Softmax", args, node, axis=a.axis)
    else:
        raise GraphError(f"to_onnx: {name} has no ONNX form here (written: {', '.join(EXPORTED_OPS)})")
