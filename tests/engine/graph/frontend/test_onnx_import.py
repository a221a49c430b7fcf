"""from_onnx on a whole model: a small residual network imported from a file or a ModelProto, with
frozen or separate parameters, gives onnxruntime's output; the module's shape and parameters."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import onnx  # noqa: E402
from onnx import helper  # noqa: E402

from tunecli import relay  # noqa: E402
from tunecli.engine.graph import (  # noqa: E402
    Constant,
    Function,
    TensorType,
    Var,
    count_calls,
    evaluate,
    post_order,
)
from tunecli.engine.graph.frontend import from_onnx  # noqa: E402
from tunecli.engine.runtime import NDArray  # noqa: E402

from .onnx_models import assert_matches_onnxruntime, make_model, onnxruntime_outputs, randn  # noqa: E402


def _bn(prefix: str, c: int) -> dict[str, np.ndarray]:
    return {
        f"{prefix}_scale": randn(c) * 0.2 + 1,
        f"{prefix}_bias": randn(c) * 0.1,
        f"{prefix}_mean": randn(c) * 0.1,
        f"{prefix}_var": np.abs(randn(c)) + 0.5,
    }


def residual_network(batch: int | str = 1) -> onnx.ModelProto:
    """conv-bn-relu, conv-bn, + the first block's output, relu, global pool, flatten (PyTorch's
    shape chain), gemm: a ResNet basic block as PyTorch exports it."""
    def bn(x: str, prefix: str, y: str) -> onnx.NodeProto:
        names = [f"{prefix}_{k}" for k in ("scale", "bias", "mean", "var")]
        return helper.make_node("BatchNormalization", [x, *names], [y], name=prefix, epsilon=1e-5)

    nodes = [
        helper.make_node("Conv", ["input", "conv1_w"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        bn("c1", "bn1", "b1"),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "conv2_w"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        bn("c2", "bn2", "b2"),
        helper.make_node("Add", ["b2", "r1"], ["s"], name="residual"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
        helper.make_node("Shape", ["p"], ["p_shape"], name="shape"),
        helper.make_node("Gather", ["p_shape", "zero"], ["n"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsqueeze"),
        helper.make_node("Concat", ["n1", "minus_one"], ["flat_shape"], name="concat", axis=0),
        helper.make_node("Reshape", ["p", "flat_shape"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
    ]
    weights = {
        "conv1_w": randn(8, 3, 3, 3) * 0.3,
        **_bn("bn1", 8),
        "conv2_w": randn(8, 8, 3, 3) * 0.2,
        **_bn("bn2", 8),
        "fc_w": randn(10, 8),
        "fc_b": randn(10),
        "zero": np.asarray(0, dtype="int64"),
        "axes0": np.asarray([0], dtype="int64"),
        "minus_one": np.asarray([-1], dtype="int64"),
    }
    return make_model(nodes, {"input": ((batch, 3, 16, 16), "float32")}, {"logits": "float32"}, weights)


def test_residual_network_matches_onnxruntime() -> None:
    assert_matches_onnxruntime(residual_network(), {"input": randn(1, 3, 16, 16)})


def test_residual_network_with_separate_parameters_matches_onnxruntime() -> None:
    assert_matches_onnxruntime(residual_network(), {"input": randn(1, 3, 16, 16)}, freeze_params=False)


def conv_relu_chain(layers: int) -> onnx.ModelProto:
    """``layers`` 3x3 Conv + Relu pairs on 4 channels, each with its own weight: the identity
    kernel, so that the output is exactly ``relu(input)`` however deep the chain."""
    identity = np.zeros((4, 4, 3, 3), "float32")
    identity[range(4), range(4), 1, 1] = 1
    nodes, weights, x = [], {}, "input"
    for i in range(layers):
        weights[f"w{i}"] = identity.copy()
        nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
        x = f"r{i}"
    return make_model(nodes, {"input": ((1, 4, 8, 8), "float32")}, {x: "float32"}, weights)


def test_a_deep_network_imports_typed_walking_each_node_a_bounded_number_of_times(
    expanded_nodes: list[int],
) -> None:
    mod, params = from_onnx(conv_relu_chain(300), freeze_params=False)
    walked = expanded_nodes[0]
    fn = mod["main"]
    nodes = post_order(fn)
    assert len(nodes) == 3 * 300 + 2
    assert walked <= 3 * len(nodes)
    assert count_calls(fn) == {"nn.conv2d": 300, "nn.relu": 300}
    assert all(n.checked_type == TensorType((1, 4, 8, 8)) for n in nodes if not isinstance(n, Var | Function))
    assert [p.checked_type for p in fn.params[1:]] == [TensorType((4, 4, 3, 3))] * 300
    assert fn.checked_type.ret_type == TensorType((1, 4, 8, 8))


def test_a_deep_network_matches_onnxruntime() -> None:
    x = randn(1, 4, 8, 8)
    model = conv_relu_chain(300)
    np.testing.assert_array_equal(onnxruntime_outputs(model, {"input": x})[0], np.maximum(x, 0))
    assert_matches_onnxruntime(model, {"input": x}, freeze_params=False)


def inverted_residual_block(opset: int) -> onnx.ModelProto:
    """MobileNet v2's block as exported: 1x1 expand, ReLU6 as Clip, depthwise 3x3, 1x1 project,
    residual add; then global pool, Flatten, Gemm, Softmax."""
    clip = ([helper.make_node("Clip", [x], [y], min=0.0, max=6.0) for x, y in (("e", "e6"), ("d", "d6"))]
            if opset < 11 else
            [helper.make_node("Clip", [x, "zero", "six"], [y]) for x, y in (("e", "e6"), ("d", "d6"))])
    nodes = [
        helper.make_node("Conv", ["input", "expand_w", "expand_b"], ["e"]),
        clip[0],
        helper.make_node("Conv", ["e6", "dw_w", "dw_b"], ["d"], group=24, pads=[1, 1, 1, 1]),
        clip[1],
        helper.make_node("Conv", ["d6", "project_w", "project_b"], ["p"]),
        helper.make_node("Add", ["input", "p"], ["s"]),
        helper.make_node("GlobalAveragePool", ["s"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1),
    ]
    weights = {
        "expand_w": randn(24, 4, 1, 1), "expand_b": randn(24),
        "dw_w": randn(24, 1, 3, 3), "dw_b": randn(24),
        "project_w": randn(4, 24, 1, 1) * 0.2, "project_b": randn(4),
        "fc_w": randn(5, 4), "fc_b": randn(5),
        "zero": np.float32(0.0), "six": np.float32(6.0),
    }
    return make_model(nodes, {"input": ((1, 4, 8, 8), "float32")}, {"probs": "float32"}, weights, opset=opset)


@pytest.mark.parametrize("opset", [10, 13])
def test_inverted_residual_block_matches_onnxruntime(opset: int) -> None:
    assert_matches_onnxruntime(inverted_residual_block(opset), {"input": randn(1, 4, 8, 8) * 4})


def test_frozen_import_has_constants_and_the_folded_flatten() -> None:
    mod, params = from_onnx(residual_network())
    assert params == {}
    main = mod["main"]
    assert [p.name_hint for p in main.params] == ["input"]
    assert str(main.checked_type.ret_type) == "Tensor[(1, 10), float32]"
    assert count_calls(main) == {
        "nn.conv2d": 2, "nn.batch_norm": 2, "nn.relu": 2, "add": 1, "nn.global_avg_pool2d": 1,
        "reshape": 1, "nn.dense": 1, "nn.bias_add": 1,
    }
    reshape = next(n for n in post_order(main) if getattr(getattr(n, "op", None), "name", "") == "reshape")
    assert reshape.attrs.newshape == (1, 8)
    assert "nn.conv2d" in str(mod)


def test_unfrozen_import_returns_the_float_initializers_as_nd_parameters() -> None:
    model = residual_network()
    mod, params = from_onnx(model, freeze_params=False)
    names = ["conv1_w", *_bn("bn1", 1), "conv2_w", *_bn("bn2", 1), "fc_w", "fc_b"]
    assert [p.name_hint for p in mod["main"].params] == ["input", *names]
    assert list(params) == names
    assert all(isinstance(v, NDArray) for v in params.values())
    initial = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    np.testing.assert_array_equal(params["conv2_w"].numpy(), initial["conv2_w"])
    assert not any(isinstance(n, Constant) and n.data.dtype == np.float32 for n in post_order(mod["main"]))


def test_dynamic_batch_takes_the_given_shape_and_loads_from_a_file(tmp_path) -> None:
    path = tmp_path / "resnet_block.onnx"
    onnx.save(residual_network(batch="N"), str(path))
    x = randn(3, 3, 16, 16)
    mod, params = relay.frontend.from_onnx(str(path), shape={"input": (3, 3, 16, 16)})
    main = mod["main"]
    assert isinstance(main.params[0], Var) and main.params[0].type_annotation.shape == (3, 3, 16, 16)
    expected = onnxruntime_outputs(onnx.load(str(path)), {"input": x})[0]
    np.testing.assert_allclose(evaluate(mod, [x], params), expected, rtol=1e-4, atol=1e-5)


def test_several_outputs_make_a_tuple_and_a_constant_output_is_kept() -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Shape", ["x"], ["s"]),
    ]
    model = make_model(nodes, {"x": ((2, 3), "float32")}, {"r": "float32", "s": "int64"})
    mod, _ = from_onnx(model)
    x = randn(2, 3)
    relu, shape = evaluate(mod, [x])
    np.testing.assert_array_equal(relu, np.maximum(x, 0))
    np.testing.assert_array_equal(shape, [2, 3])


def test_input_dtype_comes_from_the_model_or_the_dtype_mapping() -> None:
    model = make_model([helper.make_node("Identity", ["x"], ["y"])], {"x": ((2,), "int64")}, {"y": "int64"})
    assert mod_input_dtype(model) == "int64"
    assert mod_input_dtype(model, dtype={"x": "int32"}) == "int32"


def mod_input_dtype(model: onnx.ModelProto, **kwargs: object) -> str:
    mod, _ = from_onnx(model, **kwargs)
    return mod["main"].params[0].type_annotation.dtype


def test_relay_face_reexports_from_onnx() -> None:
    assert relay.frontend.from_onnx is from_onnx


def test_initializers_listed_among_the_inputs_are_weights_not_inputs() -> None:
    """Models of IR version 3 list every initializer in ``graph.input`` too."""
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": ((2, 4), "float32")},
                       {"y": "float32"}, {"w": randn(4, 3)})
    model.graph.input.append(helper.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [4, 3]))
    mod, params = from_onnx(model, freeze_params=False)
    assert [p.name_hint for p in mod["main"].params] == ["x", "w"] and list(params) == ["w"]
    assert_matches_onnxruntime(model, {"x": randn(2, 4)})


def test_opset_argument_overrides_the_models_opset() -> None:
    model = make_model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], {"x": ((2, 3, 4), "float32")},
                       {"y": "float32"}, opset=13)
    x = randn(2, 3, 4)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    as_opset_13 = evaluate(from_onnx(model)[0], [x])
    np.testing.assert_allclose(as_opset_13, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    flat = x.reshape(2, 12)
    e = np.exp(flat - flat.max(axis=1, keepdims=True))
    as_opset_11 = evaluate(from_onnx(model, opset=11)[0], [x])
    np.testing.assert_allclose(as_opset_11, (e / e.sum(axis=1, keepdims=True)).reshape(2, 3, 4), rtol=1e-5)
