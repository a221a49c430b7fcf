"""A graph module as an ONNX model (opset 17), so that onnxruntime can run the same network as a
built-in model (``apply`` and the network benchmark compare with it).

The operators of ``relay.testing``'s networks have an ONNX form: conv2d, dense, bias_add,
batch_norm, relu, clip, add, max_pool2d, global_avg_pool2d, batch_flatten, concatenate, dropout
(inference: the identity) and softmax; so do those of the transformers (layer_norm, take,
batch_matmul, reshape, transpose, strided_slice, broadcast_to, where, the arithmetic, math and
comparison operators).  Any other operator is a ``GraphError`` naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Protocol, TypeAlias

import numpy as np

from tunecli.errors import GraphError

from ..graph_expr import ArrayData, Call, Constant, Expr, Tuple, TupleGetItem
from ..ir_module import IRModule
from ..ops.conv import conv2d_padding
from ..traversal import post_order
from ..type_infer import infer_types

if TYPE_CHECKING:
    from onnx import NodeProto, TensorProto

#: What an ONNX node is written for: a graph expression, or ``(expression, helper name)`` for a
#: helper node of its call (a transposed weight).
NodeKey: TypeAlias = "Expr | tuple[Expr, str]"
#: The ONNX name of a written value; a list of names for a tuple's fields.
ValueName: TypeAlias = "str | list[str]"
#: ``constant(array) -> name``: writes an initializer.
AddConstant = Callable[[np.ndarray], str]


class AddNode(Protocol):
    """``add(op_type, input names, key, **attributes) -> output name``: writes one ONNX node."""

    def __call__(self, op: str, args: list[str], node: NodeKey, **attrs: int | float | list[int]) -> str: ...


#: Graph operators written as one ONNX node of the same inputs (attributes aside).
_SAME_INPUTS = {
    "nn.relu": "Relu", "add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "power": "Pow",
    "maximum": "Max", "minimum": "Min", "erf": "Erf", "tanh": "Tanh", "sqrt": "Sqrt", "exp": "Exp",
    "log": "Log", "negative": "Neg", "abs": "Abs", "sigmoid": "Sigmoid", "where": "Where", "equal": "Equal",
    "less": "Less", "greater": "Greater", "less_equal": "LessOrEqual", "greater_equal": "GreaterOrEqual",
    "logical_not": "Not", "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor",
    "nn.global_avg_pool2d": "GlobalAveragePool", "nn.batch_flatten": "Flatten", "nn.dropout": "Identity",
}
#: The operators :func:`to_onnx` writes.
EXPORTED_OPS = tuple(sorted({
    *_SAME_INPUTS, "nn.conv2d", "nn.dense", "nn.bias_add", "nn.batch_norm", "clip", "nn.max_pool2d",
    "concatenate", "nn.softmax", "nn.layer_norm", "take", "nn.batch_matmul", "reshape", "transpose",
    "strided_slice", "broadcast_to", "cast", "rsqrt",
}))
_OPSET = 17
#: numpy dtype name -> ONNX ``TensorProto`` element type, of the inputs and outputs written.
_ELEMENT_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9, "float64": 11}


def to_onnx(mod: IRModule, params: Mapping[str, ArrayData]) -> bytes:
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
        For an operator without an ONNX form here (see :data:`EXPORTED_OPS`), an input of an
        element type not written, or more than one output.
    """
    import onnx
    from onnx import helper, numpy_helper

    fn = mod["main"]
    infer_types(fn)
    names: dict[NodeKey, ValueName] = {}
    nodes: list[NodeProto] = []
    inits: list[TensorProto] = []
    inputs = []
    for p in fn.params:
        names[p] = p.name_hint
        if p.name_hint in params:
            inits.append(numpy_helper.from_array(_array(params[p.name_hint]), p.name_hint))
        else:
            shape = [int(d) for d in p.checked_type.shape]
            inputs.append(helper.make_tensor_value_info(p.name_hint, _element_type(p), shape))

    def constant(value: np.ndarray) -> str:
        name = f"c{len(inits)}"
        inits.append(numpy_helper.from_array(value, name))
        return name

    def add(op: str, args: list[str], node: NodeKey, **attrs: int | float | list[int]) -> str:
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
    output = helper.make_tensor_value_info(names[fn.body], _element_type(fn.body), out_shape)
    graph = helper.make_graph(nodes, "network", inputs, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _element_type(expr: Expr) -> int:
    dtype = str(expr.checked_type.dtype)
    if dtype not in _ELEMENT_TYPES:
        raise GraphError(f"to_onnx: {expr} is {dtype}; written element types: {', '.join(_ELEMENT_TYPES)}")
    return _ELEMENT_TYPES[dtype]


def _array(value: ArrayData) -> np.ndarray:
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def _call(node: Call, args: list[ValueName], add: AddNode, constant: AddConstant) -> None:
    """Write one call as ONNX nodes (``args``: the names of its arguments)."""
    name, a = node.op.name, node.attrs
    if name == "nn.conv2d":
        kh, kw = (int(d) for d in node.args[1].checked_type.shape[2:])
        top, left, bottom, right = conv2d_padding(a, (kh, kw))
        add("Conv", args, node, strides=list(a.strides), dilations=list(a.dilation),
            pads=[top, left, bottom, right], group=a.groups, kernel_shape=[kh, kw])
    elif name in _SAME_INPUTS:
        add(_SAME_INPUTS[name], list(args), node)
    elif name == "nn.dense" and len(node.args[0].checked_type.shape) == 2:
        add("Gemm", args, node, transB=1)
    elif name == "nn.dense":
        add("MatMul", [args[0], add("Transpose", [args[1]], (node, "weight"), perm=[1, 0])], node)
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
    elif name == "clip":
        add("Clip", [args[0], constant(np.float32(a.a_min)), constant(np.float32(a.a_max))], node)
    elif name == "nn.max_pool2d":
        pads = list(a.padding) * (2 if len(a.padding) == 2 else 1)  # (top, left, bottom, right)
        add("MaxPool", args, node, kernel_shape=list(a.pool_size), strides=list(a.strides), pads=pads,
            dilations=list(a.dilation), ceil_mode=int(a.ceil_mode))
    elif name == "concatenate":
        add("Concat", list(args[0]), node, axis=a.axis)
    elif name == "nn.softmax":
        add("Softmax", args, node, axis=a.axis)
    else:
        _transformer_call(node, args, add, constant)


def _ints(values: Iterable[int]) -> np.ndarray:
    return np.asarray([int(v) for v in values], dtype="int64")


def _transformer_call(node: Call, args: list[ValueName], add: AddNode, constant: AddConstant) -> None:
    """Write one call of the transformer operators as ONNX nodes."""
    name, a = node.op.name, node.attrs
    out_shape = [int(d) for d in node.checked_type.shape]
    if name == "nn.layer_norm":
        if not (a.center and a.scale):
            raise GraphError("to_onnx: nn.layer_norm without its scale or shift has no ONNX form here")
        add("LayerNormalization", args, node, axis=a.axis, epsilon=a.epsilon)
    elif name == "take":
        data = args[0]
        if a.axis is None:
            data = add("Reshape", [args[0], constant(_ints([-1]))], (node, "flat"))
        add("Gather", [data, args[1]], node, axis=0 if a.axis is None else a.axis)
    elif name in ("reshape", "squeeze", "expand_dims"):
        add("Reshape", [args[0], constant(_ints(out_shape))], node)
    elif name == "transpose":
        ndim = len(out_shape)
        add("Transpose", args, node, perm=list(a.axes) if a.axes is not None else list(range(ndim))[::-1])
    elif name == "nn.batch_matmul":
        lhs = add("Transpose", [args[0]], (node, "a"), perm=[0, 2, 1]) if a.transpose_a else args[0]
        rhs = add("Transpose", [args[1]], (node, "b"), perm=[0, 2, 1]) if a.transpose_b else args[1]
        add("MatMul", [lhs, rhs], node)
    elif name == "strided_slice":
        count = len(a.begin)
        axes = a.axes if a.axes is not None else range(count)
        bounds = [constant(_ints(v)) for v in (a.begin, a.end, axes, a.strides or (1,) * count)]
        add("Slice", [args[0], *bounds], node)
    elif name == "broadcast_to":
        add("Expand", [args[0], constant(_ints(out_shape))], node)
    elif name == "cast":
        add("Cast", args, node, to=_element_type(node))
    elif name == "rsqrt":
        add("Reciprocal", [add("Sqrt", args, (node, "sqrt"))], node)
    else:
        raise GraphError(f"to_onnx: {name} has no ONNX form here (written: {', '.join(EXPORTED_OPS)})")
