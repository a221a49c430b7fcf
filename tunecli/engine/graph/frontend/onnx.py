"""ONNX import (TVM's ``relay.frontend.from_onnx``): an ONNX model as a graph module and its parameters.

The model's nodes are converted in order through the converter table (``onnx_table.converters()``,
filled from ``onnx_nn``, ``onnx_matmul``, ``onnx_math``, ``onnx_index``, ``onnx_vision`` and
``onnx_tensor``); values
known at import are folded to arrays, so the shape computations exporters emit around Reshape
become constants.  Everything is checked before anything is built: the file, the opset, every
operator, the inputs and their shapes; errors are :class:`ModelImportError` naming the file, input
or node.  The ``onnx`` package is an optional
dependency (``pip install tunecli[onnx]``), imported when a model is read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from tunecli.engine.runtime import NDArray
from tunecli.engine.runtime import array as nd_array
from tunecli.errors import GraphError, ModelImportError

from ..graph_expr import Expr, Function, Tuple, Var
from ..ir_module import IRModule
from ..type_infer import infer_types
from ..types import TensorType
from .onnx_node import AttrValue, NodeContext, ValueStore, onnx_dtype
from .onnx_table import MAX_OPSET, MIN_OPSET, converters, supported_operators

if TYPE_CHECKING:
    from onnx import GraphProto, ModelProto, NodeProto, TensorProto, TensorShapeProto, ValueInfoProto

_DEFAULT_DOMAINS = ("", "ai.onnx")


class MissingInputShape(ModelImportError):
    """Inputs whose shape the model leaves open (a dynamic dimension, or no shape) and no shape was
    given for.

    Attributes
    ----------
    inputs : tuple of (str, tuple or None)
        Each such input's name and its dimensions in the model (an int, or the dimension's name or
        ``"?"`` where it is dynamic; None when the model gives no shape).
    """

    def __init__(self, inputs: Sequence[tuple[str, tuple[int | str, ...] | None]]):
        self.inputs = tuple(inputs)
        super().__init__("; ".join(_missing_shape_message(name, dims) for name, dims in self.inputs))


def _missing_shape_message(name: str, dims: tuple[int | str, ...] | None) -> str:
    if dims is None:
        return f"input {name!r} has no shape in the model; give it: shape={{{name!r}: (...)}}"
    axis, label = next((i, d) for i, d in enumerate(dims) if isinstance(d, str))
    label = f" ({label!r})" if label != "?" else ""
    return (f"input {name!r} has a dynamic dimension {axis}{label}; give its shape: "
            f"from_onnx(model, shape={{{name!r}: (...)}})")


def from_onnx(
    model: ModelProto | str | os.PathLike,
    shape: Mapping[str, Sequence[int]] | None = None,
    dtype: str | Mapping[str, str] = "float32",
    opset: int | None = None,
    freeze_params: bool = True,
) -> tuple[IRModule, dict[str, NDArray]]:
    """Convert an ONNX model into a graph module (TVM's ``relay.frontend.from_onnx``).

    Parameters
    ----------
    model : onnx.ModelProto, str or os.PathLike
        The model, or the path of an ``.onnx`` file.
    shape : mapping of str to sequence of int, optional
        Input shapes by input name; required for inputs with a dynamic dimension.
    dtype : str or mapping of str to str
        Dtype of inputs whose element type the model leaves undefined (a mapping: per input,
        overriding the model's).
    opset : int, optional
        Read the model as this default-domain opset instead of the one it declares.
    freeze_params : bool
        Embed the initializers as constants (default, as TVM's); otherwise they become parameters
        of ``mod["main"]`` and are returned in ``params``.

    Returns
    -------
    (IRModule, dict of str to NDArray)
        The module (``mod["main"]`` takes the model's inputs, then the parameters) and the
        parameter values (empty when ``freeze_params``).

    Raises
    ------
    ModelImportError
        A missing or corrupt file, an unsupported opset or operator (all of them, with the node
        names and the supported operators), an unknown input name in ``shape``, a shape of the
        wrong rank, or a dynamic dimension without a given shape.
    """
    onnx = _onnx_package()
    proto = _load(onnx, model)
    graph = proto.graph
    opset = _model_opset(proto) if opset is None else int(opset)
    _check_operators(graph.node, opset)
    initializers = {t.name: _tensor_array(onnx, t, f"initializer {t.name!r}") for t in graph.initializer}
    inputs = _input_vars(graph, initializers, shape, dtype)
    store = ValueStore(initializers, freeze_params)
    for v in inputs:
        store.set(v.name_hint, v)
    consumed = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    for index, node in enumerate(graph.node):
        _convert_node(onnx, node, index, opset, store, consumed)
    outputs = []
    for o in graph.output:
        if o.name not in store:
            raise ModelImportError(f"graph output {o.name!r} is not produced by any node")
        outputs.append(store.expr(o.name))
    body: Expr = outputs[0] if len(outputs) == 1 else Tuple(outputs)
    params = [store.param_vars[name] for name in initializers if name in store.param_vars]
    fn = Function([*inputs, *params], body)
    infer_types(fn)
    return IRModule.from_expr(fn), {p.name_hint: nd_array(store.params[p.name_hint]) for p in params}


def _onnx_package() -> ModuleType:
    try:
        import onnx
    except ImportError:
        raise ModelImportError(
            "from_onnx needs the onnx package: pip install 'tunecli[onnx]'"
        ) from None
    return onnx


def _load(onnx: ModuleType, model: ModelProto | str | os.PathLike) -> ModelProto:
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise ModelImportError(f"ONNX file {path!r} does not exist")
        try:
            proto = onnx.load(path)
        except Exception as err:  # protobuf raises DecodeError, RuntimeWarning subclasses, ...
            raise ModelImportError(
                f"ONNX file {path!r} is not a valid ONNX model ({type(err).__name__}: {err})"
            ) from None
        where = f"ONNX file {path!r}"
    elif isinstance(model, onnx.ModelProto):
        proto, where = model, "the ONNX model"
    else:
        raise ModelImportError(
            f"from_onnx: expected an onnx.ModelProto or a file path, got {type(model).__name__}"
        )
    if not proto.HasField("graph") or not proto.graph.output:
        raise ModelImportError(f"{where} has no graph with outputs (is it an ONNX model?)")
    return proto


def _model_opset(proto: ModelProto) -> int:
    versions = [o.version for o in proto.opset_import if o.domain in _DEFAULT_DOMAINS]
    if not versions:
        raise ModelImportError("the ONNX model declares no opset of the default domain (ai.onnx)")
    return int(versions[0])


def _node_name(node: NodeProto, index: int) -> str:
    return node.name or f"#{index}"


def _check_operators(nodes: Sequence[NodeProto], opset: int) -> None:
    """One ModelImportError for an unsupported opset or every unsupported operator."""
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ModelImportError(
            f"ONNX opset {opset} is not supported; supported opsets: {MIN_OPSET}-{MAX_OPSET}"
        )
    problems = _operator_problems(nodes, opset)
    if problems:
        raise ModelImportError(
            f"cannot import the ONNX model: {'; '.join(problems)}. Supported operators (opsets): "
            f"{supported_operators()}"
        )


def _operator_problems(nodes: Sequence[NodeProto], opset: int) -> list[str]:
    """One line per unsupported operator of ``nodes``, the nodes of If branches included."""
    problems = []
    for index, node in enumerate(nodes):
        entry = converters().get(node.op_type) if node.domain in _DEFAULT_DOMAINS else None
        label = f"{node.op_type} node {_node_name(node, index)!r}"
        if entry is None:
            domain = f" (domain {node.domain!r})" if node.domain not in _DEFAULT_DOMAINS else ""
            problems.append(f"{label}{domain}: operator not supported")
        elif not entry.supports(opset):
            problems.append(f"{label}: opset {opset} not supported (supported: {entry.opsets})")
        elif node.op_type == "If":
            branches = {a.name: a.g for a in node.attribute if a.HasField("g")}
            for key in ("then_branch", "else_branch"):
                if key in branches:
                    problems.extend(_operator_problems(branches[key].node, opset))
    return problems


def convert_subgraph(graph: GraphProto, opset: int, store: ValueStore) -> tuple[Expr | np.ndarray, ...]:
    """Convert the nodes of ``graph`` (an If branch: it reads values of the enclosing graph from
    ``store``) and give its outputs, arrays where known at import."""
    onnx = _onnx_package()
    for t in graph.initializer:
        store.set(t.name, _tensor_array(onnx, t, f"initializer {t.name!r}"))
    consumed = {name for node in graph.node for name in node.input} | {o.name for o in graph.output}
    for index, node in enumerate(graph.node):
        _convert_node(onnx, node, index, opset, store, consumed)
    outputs: list[Expr | np.ndarray] = []
    for o in graph.output:
        if o.name not in store:
            raise ModelImportError(f"subgraph output {o.name!r} is not produced by any node")
        outputs.append(store.arrays[o.name] if store.known(o.name) else store.expr(o.name))
    return tuple(outputs)


def _tensor_array(onnx: ModuleType, tensor: TensorProto, where: str) -> np.ndarray:
    onnx_dtype(tensor.data_type, where)
    try:
        return np.asarray(onnx.numpy_helper.to_array(tensor))
    except Exception as err:  # missing external data, truncated raw data
        raise ModelImportError(f"{where} cannot be read: {type(err).__name__}: {err}") from None


def _input_vars(
    graph: GraphProto,
    initializers: Mapping[str, np.ndarray],
    shape: Mapping[str, Sequence[int]] | None,
    dtype: str | Mapping[str, str],
) -> list[Var]:
    """The model's inputs (those not also initializers) as typed variables."""
    declared = [i for i in graph.input if i.name not in initializers]
    names = [i.name for i in declared]
    if shape is not None and not isinstance(shape, Mapping):
        raise ModelImportError(f"shape must map input names to shapes, got {type(shape).__name__}")
    unknown = sorted(set(shape or {}) - set(names))
    if unknown:
        raise ModelImportError(f"shape names unknown inputs {unknown}; the model's inputs are {names}")
    if isinstance(dtype, Mapping):
        unknown = sorted(set(dtype) - set(names))
        if unknown:
            raise ModelImportError(f"dtype names unknown inputs {unknown}; the model's inputs are {names}")
    found, problems, missing = [], [], []
    for value_info in declared:
        try:
            found.append(_input_var(value_info, (shape or {}).get(value_info.name), dtype))
        except MissingInputShape as err:
            missing.extend(err.inputs)
        except ModelImportError as err:
            problems.append(str(err))
    if problems:
        raise ModelImportError("; ".join([*problems, *(_missing_shape_message(*m) for m in missing)]))
    if missing:
        raise MissingInputShape(missing)
    return found


def _input_var(value_info: ValueInfoProto, given: Sequence[int] | None,
               dtype: str | Mapping[str, str]) -> Var:
    name = value_info.name
    tensor = value_info.type.tensor_type
    if not value_info.type.HasField("tensor_type"):
        raise ModelImportError(f"input {name!r} is not a tensor; only tensor inputs are supported")
    dims = list(tensor.shape.dim) if tensor.HasField("shape") else None
    if isinstance(dtype, Mapping) and name in dtype:
        elem = str(np.dtype(dtype[name]))
    elif tensor.elem_type:
        elem = onnx_dtype(tensor.elem_type, f"input {name!r}")
    else:
        elem = str(np.dtype(dtype if isinstance(dtype, str) else "float32"))
    if given is not None:
        return Var(name, TensorType(_given_shape(name, given, dims), elem))
    if dims is None:
        raise MissingInputShape([(name, None)])
    model_dims = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else d.dim_param or "?"
                       for d in dims)
    if any(isinstance(d, str) for d in model_dims):
        raise MissingInputShape([(name, model_dims)])
    return Var(name, TensorType(tuple(d.dim_value for d in dims), elem))


def _given_shape(name: str, given: Sequence[int],
                 dims: Sequence[TensorShapeProto.Dimension] | None) -> tuple[int, ...]:
    try:
        shape = tuple(int(s) for s in given)
    except (TypeError, ValueError):
        raise ModelImportError(f"shape of input {name!r} must be a sequence of ints, got {given!r}") from None
    if any(s <= 0 for s in shape):
        raise ModelImportError(f"shape of input {name!r}: {shape} has a dimension that is not positive")
    if dims is None:
        return shape
    if len(shape) != len(dims):
        model_shape = tuple(d.dim_value if d.HasField("dim_value") else d.dim_param or "?" for d in dims)
        raise ModelImportError(
            f"shape of input {name!r}: {shape} has {len(shape)} dimensions, the model's input has "
            f"{len(dims)} {model_shape}"
        )
    for axis, (s, d) in enumerate(zip(shape, dims, strict=True)):
        if d.HasField("dim_value") and d.dim_value > 0 and d.dim_value != s:
            raise ModelImportError(
                f"shape of input {name!r}: dimension {axis} is {s}, the model fixes it to {d.dim_value}"
            )
    return shape


def _attributes(onnx: ModuleType, node: NodeProto, where: str) -> dict[str, AttrValue]:
    attrs: dict[str, AttrValue] = {}
    for a in node.attribute:
        value = onnx.helper.get_attribute_value(a)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, onnx.TensorProto):
            value = _tensor_array(onnx, value, f"{where}: attribute {a.name}")
        elif isinstance(value, list):
            value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
        attrs[a.name] = value
    return attrs


def _convert_node(
    onnx: ModuleType, node: NodeProto, index: int, opset: int, store: ValueStore, consumed: set[str]
) -> None:
    name = _node_name(node, index)
    where = f"{node.op_type} node {name!r}"
    for i, input_name in enumerate(node.input):
        if input_name and input_name not in store:
            raise ModelImportError(f"{where}: input {i} {input_name!r} is not produced by any earlier node")
    ctx = NodeContext(
        node.op_type, name, opset, _attributes(onnx, node, where), tuple(node.input), len(node.output), store
    )
    entry = converters()[node.op_type]
    try:
        if entry.fold is not None and (entry.convert is None or ctx.foldable()):
            result = entry.fold(ctx)
        else:
            assert entry.convert is not None
            result = entry.convert(ctx)
        values = result if isinstance(result, tuple) else (result,)
        for value in values:
            if isinstance(value, Expr):
                infer_types(value)
    except ModelImportError:
        raise
    except GraphError as err:
        raise ctx.error(str(err)) from None
    for j, output in enumerate(node.output):
        if not output:
            continue
        if j >= len(values):
            if output in consumed:
                raise ctx.error(
                    f"output {j} ({output!r}) is not supported; the importer gives {len(values)} output(s)"
                )
            continue
        value = values[j]
        store.set(output, value if isinstance(value, Expr) else np.asarray(value))
