"""Bad ONNX input gets one ModelImportError (a TuneError) that says what is wrong and where: the
file, the input, or the operator and node with what is supported."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("onnx")

import onnx  # noqa: E402
from onnx import helper  # noqa: E402

from tunecli.engine.graph.frontend import from_onnx  # noqa: E402
from tunecli.errors import ModelImportError, TuneError  # noqa: E402

from .onnx_models import ints, make_model, one_op, randn  # noqa: E402


def _relu_model(shape: tuple = (1, 3, 4, 4), opset: int = 13) -> onnx.ModelProto:
    return make_model([helper.make_node("Relu", ["x"], ["y"])], {"x": (shape, "float32")}, {"y": "float32"},
                      opset=opset)


def _unsupported_operators() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Erf", ["r"], ["e"], name="erf1"),
        helper.make_node("Hardmax", ["e"], ["h"], name="hardmax1"),
        helper.make_node("Hardmax", ["h"], ["h2"], name="hardmax2"),
        helper.make_node("MyOp", ["h2"], ["y"], name="custom", domain="com.example"),
    ]
    return make_model(nodes, {"x": ((2, 3), "float32")}, {"y": "float32"})


def _unsupported_after_a_failing_node() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Reshape", ["x", "x_shape"], ["r"], name="runtime_reshape"),
        helper.make_node("Hardmax", ["r"], ["y"], name="hardmax_late"),
    ]
    model = make_model(nodes, {"x": ((2, 3), "float32"), "x_shape": ((2,), "int64")}, {"y": "float32"})
    return model


def _runtime_reshape() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Cast", ["x"], ["xi"], to=onnx.TensorProto.INT64),
        helper.make_node("Reshape", ["x", "xi"], ["y"], name="reshape_by_data"),
    ]
    return make_model(nodes, {"x": ((2,), "float32")}, {"y": "float32"})


def _max_pool_indices_used() -> onnx.ModelProto:
    nodes = [
        helper.make_node("MaxPool", ["x"], ["p", "idx"], name="pool_with_indices", kernel_shape=[2, 2]),
        helper.make_node("Identity", ["idx"], ["y"]),
    ]
    return make_model(nodes, {"x": ((1, 1, 4, 4), "float32")}, {"y": "int64"})


def _opset_model(op_type: str, opset: int) -> onnx.ModelProto:
    model = make_model(
        [helper.make_node(op_type, ["s"], ["y"], name="fill")], {"s": ((2,), "int64")}, {"y": "float32"},
        opset=opset,
    )
    return model


def _undefined_input() -> onnx.ModelProto:
    return make_model([helper.make_node("Relu", ["nowhere"], ["y"], name="r")], {"x": ((2,), "float32")},
                      {"y": "float32"})


def _truncated_file(tmp_path: Any) -> str:
    path = tmp_path / "truncated.onnx"
    data = _relu_model().SerializeToString()
    path.write_bytes(data[: len(data) // 2])
    return str(path)


def _model(op: str, inputs: dict, inits: dict | None = None, **kw: Any) -> onnx.ModelProto:
    return one_op(op, inputs, inits, **kw)[0]


def _if_model(condition_input: bool, branch_op: str) -> onnx.ModelProto:
    def branch(name: str) -> onnx.GraphProto:
        node = helper.make_node(branch_op, ["x"], [f"{name}_y"], name=f"{name}_node")
        out = helper.make_tensor_value_info(f"{name}_y", onnx.TensorProto.FLOAT, None)
        return helper.make_graph([node], name, [], [out])

    inputs = {"x": ((2,), "float32")}
    inits = {}
    if condition_input:
        inputs["c"] = ((), "bool")
    else:
        inits["c"] = np.asarray(True)
    node = helper.make_node("If", ["c"], ["y"], name="choose", then_branch=branch("yes"),
                            else_branch=branch("no"))
    return make_model([node], inputs, {"y": "float32"}, inits)


CASES: dict[str, tuple[Callable[[Any], Any], str]] = {
    "missing-file": (
        lambda tmp: from_onnx(str(tmp / "absent.onnx")), "ONNX file '.*absent.onnx' does not exist"
    ),
    "truncated-file": (lambda tmp: from_onnx(_truncated_file(tmp)),
                       "ONNX file '.*truncated.onnx' is not a valid ONNX model"),
    "not-a-model": (lambda tmp: from_onnx(42), "expected an onnx.ModelProto or a file path, got int"),
    "model-without-graph": (lambda tmp: from_onnx(onnx.ModelProto()), "has no graph with outputs"),
    "unsupported-operators-all-named": (
        lambda tmp: from_onnx(_unsupported_operators()),
        r"cannot import the ONNX model: Hardmax node 'hardmax1': operator not supported; "
        r"Hardmax node 'hardmax2': operator not supported; "
        r"MyOp node 'custom' \(domain 'com.example'\): operator not supported\. "
        r"Supported operators \(opsets\): Abs \(7-25\), Add \(7-25\),",
    ),
    "operators-checked-before-building": (
        lambda tmp: from_onnx(_unsupported_after_a_failing_node()),
        "Hardmax node 'hardmax_late': operator not supported",
    ),
    "opset-too-old": (lambda tmp: from_onnx(_relu_model(opset=6)), "ONNX opset 6 is not supported; supported "
                                                                   "opsets: 7-25"),
    "opset-too-new": (lambda tmp: from_onnx(_relu_model(opset=26)), "ONNX opset 26 is not supported"),
    "operator-opset": (lambda tmp: from_onnx(_opset_model("ConstantOfShape", 8)),
                       r"ConstantOfShape node 'fill': opset 8 not supported \(supported: 9-25\)"),
    "dynamic-dimension": (lambda tmp: from_onnx(_relu_model(("N", 3, 4, 4))),
                          r"input 'x' has a dynamic dimension 0 \('N'\); give its shape"),
    "unknown-input-name": (lambda tmp: from_onnx(_relu_model(), shape={"data": (1, 3, 4, 4)}),
                           r"shape names unknown inputs \['data'\]; the model's inputs are \['x'\]"),
    "wrong-rank": (lambda tmp: from_onnx(_relu_model(("N", 3, 4, 4)), shape={"x": (3, 4, 4)}),
                   r"shape of input 'x': \(3, 4, 4\) has 3 dimensions, "
                   r"the model's input has 4 \('N', 3, 4, 4\)"),
    "fixed-dimension-differs": (lambda tmp: from_onnx(_relu_model(), shape={"x": (1, 4, 4, 4)}),
                                "dimension 1 is 4, the model fixes it to 3"),
    "shape-not-ints": (lambda tmp: from_onnx(_relu_model(), shape={"x": "1x3x4x4"}),
                       "must be a sequence of ints"),
    "shape-not-positive": (lambda tmp: from_onnx(_relu_model(("N", 3, 4, 4)), shape={"x": (0, 3, 4, 4)}),
                           "has a dimension that is not positive"),
    "unknown-dtype-input": (lambda tmp: from_onnx(_relu_model(), dtype={"y": "float32"}),
                            r"dtype names unknown inputs \['y'\]"),
    "runtime-reshape-shape": (
        lambda tmp: from_onnx(_runtime_reshape()),
        r"Reshape node 'reshape_by_data': input 1 \(shape\) 'xi' is computed at run time",
    ),
    "conv-1d": (lambda tmp: from_onnx(_model("Conv", {"x": randn(1, 2, 5)}, {"w": randn(3, 2, 3)})),
                r"Conv node 'conv_node': only 2-D operations on NCHW data are supported; input 0 has shape"),
    "pad-wrap": (lambda tmp: from_onnx(_model("Pad", {"x": randn(2, 3)}, {"p": ints(1, 1, 1, 1)}, mode="wrap",
                                              opset=19)),
                 "Pad node 'pad_node': mode 'wrap'; supported: constant, edge, reflect"),
    "pad-negative": (lambda tmp: from_onnx(_model("Pad", {"x": randn(2, 3)}, {"p": ints(0, -1, 0, 0)})),
                     "negative pads"),
    "batch-norm-training": (
        lambda tmp: from_onnx(_model("BatchNormalization", {"x": randn(1, 2, 2, 2)},
                                     {k: np.ones(2, "float32") for k in "sbmv"}, training_mode=1, opset=15)),
        "BatchNormalization node 'batchnormalization_node': training_mode 1 is not supported",
    ),
    "pool-ceil-mixed-with-included-pads": (
        lambda tmp: from_onnx(_model("AveragePool", {"x": randn(1, 2, 5, 6)}, kernel_shape=[2, 3],
                                     strides=[2, 2], pads=[1, 0, 1, 0], ceil_mode=1, count_include_pad=1)),
        "AveragePool node 'averagepool_node': ceil_mode with count_include_pad where only one dimension",
    ),
    "pool-indices-used": (lambda tmp: from_onnx(_max_pool_indices_used()),
                          r"MaxPool node 'pool_with_indices': output 1 \('idx'\) is not supported"),
    "matmul-inner-sizes": (lambda tmp: from_onnx(_model("MatMul", {"a": randn(3), "b": randn(4, 2)})),
                           r"MatMul node 'matmul_node': shapes \(3,\) x \(4, 2\): inner dimensions differ"),
    "shapes-do-not-broadcast": (lambda tmp: from_onnx(_model("Add", {"a": randn(3, 4), "b": randn(5)})),
                                r"Add node 'add_node': add: shapes \(3, 4\) and \(5,\) do not broadcast"),
    "slice-runtime-bounds": (
        lambda tmp: from_onnx(_model("Slice", {"x": randn(4, 3), "s": ints(1), "e": ints(3)})),
        r"Slice node 'slice_node': input 1 \(starts\) 's' is computed at run time",
    ),
    "gather-known-index-out-of-range": (
        lambda tmp: from_onnx(_model("Gather", {"x": randn(4, 3)}, {"i": ints(4)})),
        r"Gather node 'gather_node': indices \[4\] out of range for axis 0 of size 4",
    ),
    "einsum-implicit-output": (
        lambda tmp: from_onnx(_model("Einsum", {"a": randn(2, 3), "b": randn(3, 4)}, equation="ij,jk")),
        r"Einsum node 'einsum_node': equation 'ij,jk': only explicit equations",
    ),
    "split-unequal-outputs": (
        lambda tmp: from_onnx(_model("Split", {"x": randn(5, 2)}, outputs={"p": "float32", "q": "float32"})),
        r"Split node 'split_node': 2 outputs do not divide axis 0 of size 5 equally",
    ),
    "layer-norm-before-opset-17": (
        lambda tmp: from_onnx(_model("LayerNormalization", {"x": randn(2, 4)}, {"s": randn(4)}, opset=16)),
        r"LayerNormalization node 'layernormalization_node': opset 16 not supported \(supported: 17-25\)",
    ),
    "graph-output-not-produced": (
        lambda tmp: from_onnx(make_model([helper.make_node("Relu", ["x"], ["r"])], {"x": ((2,), "float32")},
                                         {"missing": "float32"})),
        "graph output 'missing' is not produced by any node",
    ),
    "if-runtime-condition": (lambda tmp: from_onnx(_if_model(True, "Relu")),
                             r"If node 'choose': input 0 \(cond\) 'c' is computed at run time"),
    "if-branch-operators-all-named": (
        lambda tmp: from_onnx(_if_model(False, "Hardmax")),
        r"Hardmax node 'yes_node': operator not supported; Hardmax node 'no_node': operator not supported",
    ),
    "undefined-input": (lambda tmp: from_onnx(_undefined_input()),
                        "Relu node 'r': input 0 'nowhere' is not produced by any earlier node"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_gets_one_clear_error(name: str, tmp_path: Any) -> None:
    call, message = CASES[name]
    with pytest.raises(ModelImportError) as info:
        call(tmp_path)
    assert isinstance(info.value, TuneError)
    assert re.search(message, str(info.value)), str(info.value)


def test_every_input_without_a_shape_is_named_in_one_error() -> None:
    model = make_model([helper.make_node("Add", ["a", "b"], ["y"])],
                       {"a": (("N", 3), "float32"), "b": ((2, "M"), "float32")}, {"y": "float32"})
    with pytest.raises(ModelImportError) as info:
        from_onnx(model)
    assert str(info.value) == (
        "input 'a' has a dynamic dimension 0 ('N'); give its shape: from_onnx(model, shape={'a': (...)}); "
        "input 'b' has a dynamic dimension 1 ('M'); give its shape: from_onnx(model, shape={'b': (...)})"
    )


def test_unnamed_nodes_are_named_by_their_position() -> None:
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Hardmax", ["r"], ["y"])]
    with pytest.raises(ModelImportError, match="Hardmax node '#1'"):
        from_onnx(make_model(nodes, {"x": ((2,), "float32")}, {"y": "float32"}))


def test_missing_onnx_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # what Python does for a package that is not installed
    with pytest.raises(ModelImportError, match=r"pip install 'tunecli\[onnx\]'"):
        from_onnx("model.onnx")
