"""Small ONNX models made with ``onnx.helper`` and their check against onnxruntime (shared by the
ONNX import tests)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

from tunecli.engine.graph import evaluate
from tunecli.engine.graph.frontend import from_onnx

RNG = np.random.default_rng(0)

#: A test case of one operator: a function giving ``(model, inputs)``.
Case = Callable[[], tuple]
#: The operator test cases, by ONNX operator type and case name.
CASES: dict[str, dict[str, Case]] = {}


def case(op_type: str, name: str) -> Callable[[Case], Case]:
    """Register the decorated function as test case ``name`` of ``op_type``."""

    def register(fn: Case) -> Case:
        CASES.setdefault(op_type, {})[name] = fn
        return fn

    return register

_ELEM = {
    "float32": TensorProto.FLOAT,
    "float64": TensorProto.DOUBLE,
    "float16": TensorProto.FLOAT16,
    "int32": TensorProto.INT32,
    "int64": TensorProto.INT64,
    "bool": TensorProto.BOOL,
}


def randn(*shape: int) -> np.ndarray:
    """Standard normal float32 values."""
    return RNG.standard_normal(shape).astype("float32")


def ints(*values: int) -> np.ndarray:
    """An int64 vector (ONNX's type for shapes, axes and pads)."""
    return np.asarray(values, dtype="int64")


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Mapping[str, tuple[Sequence[Any], str]],
    outputs: Mapping[str, str],
    initializers: Mapping[str, np.ndarray] | None = None,
    opset: int = 13,
) -> onnx.ModelProto:
    """A model of ``nodes``: ``inputs`` maps names to ``(shape, dtype)`` (a str dimension is
    dynamic), ``outputs`` maps names to dtypes."""
    graph = helper.make_graph(
        list(nodes),
        "test",
        [helper.make_tensor_value_info(n, _ELEM[dt], list(shape)) for n, (shape, dt) in inputs.items()],
        [helper.make_tensor_value_info(n, _ELEM[dt], None) for n, dt in outputs.items()],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def one_op(
    op_type: str,
    inputs: Mapping[str, np.ndarray],
    initializers: Mapping[str, np.ndarray] | None = None,
    opset: int = 13,
    input_names: Sequence[str] | None = None,
    outputs: Mapping[str, str] | None = None,
    **attrs: Any,
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A model of one ``op_type`` node and its input values; the node reads ``input_names`` (default:
    the inputs, then the initializers) and writes ``outputs`` (default: one float32 ``y``)."""
    initializers = dict(initializers or {})
    names = list(input_names) if input_names is not None else [*inputs, *initializers]
    outputs = dict(outputs or {"y": "float32"})
    node = helper.make_node(op_type, names, list(outputs), name=f"{op_type.lower()}_node", **attrs)
    types = {n: (a.shape, str(a.dtype)) for n, a in inputs.items()}
    return make_model([node], types, outputs, initializers, opset), dict(inputs)


def onnxruntime_outputs(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs computed by onnxruntime's CPU provider."""
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: not its warnings about its own shape inference
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, dict(inputs))


def imported_outputs(
    model: onnx.ModelProto, inputs: Mapping[str, np.ndarray], freeze_params: bool = True
) -> list[np.ndarray]:
    """The model's outputs computed by importing it and evaluating the graph with the interpreter."""
    shapes = {name: value.shape for name, value in inputs.items()}
    mod, params = from_onnx(model, shape=shapes, freeze_params=freeze_params)
    out = evaluate(mod, inputs={**inputs, **params})
    return list(out) if isinstance(out, tuple) else [out]


def built_outputs(mod: Any, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The outputs of graph module ``mod`` built with relay.build for the CPU and run on ``inputs``."""
    from tunecli import relay
    from tunecli.engine.graph.passes import PassContext

    with PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m = lib["default"](None)
    for name, value in inputs.items():
        m.set_input(name, value)
    m.run()
    return [m.get_output(i).numpy() for i in range(m.get_num_outputs())]


def assert_matches_onnxruntime(
    model: onnx.ModelProto, inputs: Mapping[str, np.ndarray], freeze_params: bool = True
) -> None:
    """Imported and evaluated, the model gives onnxruntime's outputs (dtype, shape, rtol 1e-4)."""
    expected = onnxruntime_outputs(model, inputs)
    got = imported_outputs(model, inputs, freeze_params)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        g = np.asarray(g)
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)
