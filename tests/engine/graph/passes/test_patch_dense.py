"""PatchConvToDense: a convolution whose windows tile its input (stride == kernel, no padding) is
built as a dense layer over the patches, and equals the convolution (numpy, onnxruntime) for any
channel count, non-square windows and inputs, inputs with pixels past the last window, either
layout; its bias and its flattening into tokens run on the product's rows; other convolutions
are left as they are."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import build, optimize
from tunecli.engine.graph.ops.conv import conv2d_reference
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.graph.passes.patch_dense import MIN_PATCH_DEPTH, PatchConvToDense

RNG = np.random.default_rng(0)


def _random(*shape: int) -> np.ndarray:
    return RNG.uniform(-1, 1, shape).astype("float32")


def _conv(data_shape: tuple[int, ...], weight_shape: tuple[int, ...], **attrs: object) -> g.Call:
    return relay.nn.conv2d(relay.var("x", shape=data_shape), relay.var("w", shape=weight_shape), **attrs)


def _built(body: g.Expr, params: dict[str, np.ndarray], data: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """``body`` built at opt_level 3 and run on ``data``: its output and its kernels' names."""
    mod = g.IRModule.from_expr(g.Function(g.free_vars(body), body))
    with PassContext(opt_level=3):
        lib = build(mod, "llvm", params=params)
    m = lib["default"](None)
    m.set_input("x", data)
    m.run()
    return m.get_output(0).numpy(), list(lib.kernels)


def _calls(body: g.Expr, params: dict[str, np.ndarray]) -> dict[str, int]:
    mod = g.IRModule.from_expr(g.Function(g.free_vars(body), body))
    with PassContext(opt_level=3):
        return g.count_calls(optimize(mod, params)["main"])


# (data NCHW, weight OIHW): ViT's 16×16 over 3 channels (40 outputs: not a whole number of
# vectors), a non-square window over a non-square input with pixels past the last window, and a
# 2×2 window over 64 channels (a mid-network downsampling)
CASES = [((1, 3, 64, 48), (40, 3, 16, 16)), ((2, 10, 36, 30), (33, 10, 8, 4)),
         ((1, 64, 14, 10), (24, 64, 2, 2))]


@pytest.mark.parametrize(("data_shape", "weight_shape"), CASES, ids=["vit", "ragged", "downsample"])
def test_a_patch_convolution_runs_as_dense_and_equals_numpy(data_shape: tuple[int, ...],
                                                            weight_shape: tuple[int, ...]) -> None:
    stride = weight_shape[2:]
    conv = _conv(data_shape, weight_shape, strides=stride)
    params = {"w": _random(*weight_shape)}
    assert _calls(conv, params).get("nn.conv2d", 0) == 0
    data = _random(*data_shape)
    out, kernels = _built(conv, params, data)
    assert any("nn_dense" in k for k in kernels) and not any("conv2d" in k for k in kernels)
    np.testing.assert_allclose(out, conv2d_reference(conv.attrs, data, params["w"]), rtol=1e-4, atol=1e-4)


def test_nhwc_with_hwio_weights_equals_numpy() -> None:
    conv = _conv((1, 32, 24, 12), (8, 8, 12, 20), strides=(8, 8), data_layout="NHWC", kernel_layout="HWIO")
    params = {"w": _random(8, 8, 12, 20)}
    data = _random(1, 32, 24, 12)
    out, kernels = _built(conv, params, data)
    assert not any("conv2d" in k for k in kernels)
    expected = conv2d_reference(conv.attrs, data, params["w"])
    assert out.shape == (1, 4, 3, 20)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_vit_patch_embedding_with_bias_into_tokens_equals_onnxruntime() -> None:
    import onnxruntime as ort

    from tunecli.engine.graph.frontend.onnx_export import to_onnx

    # conv + channel bias, flattened and transposed into [N, tokens, channels] (ViT, Swin)
    conv = _conv((1, 3, 48, 64), (24, 3, 16, 16), strides=(16, 16))
    biased = relay.add(conv, relay.var("b", shape=(24, 1, 1)))
    tokens = relay.transpose(relay.reshape(biased, (1, 24, 12)), (0, 2, 1))
    params = {"w": _random(24, 3, 16, 16), "b": _random(24, 1, 1)}
    # the product's rows are the tokens: no transpose to NCHW and back, the bias in the dense kernel
    assert _calls(tokens, params) == {"nn.dense": 1, "add": 1, "reshape": 3, "transpose": 1}
    data = _random(1, 3, 48, 64)
    out, kernels = _built(tokens, params, data)
    assert any("nn_dense_add" in k for k in kernels)
    mod = g.IRModule.from_expr(g.Function(g.free_vars(tokens), tokens))
    sess = ort.InferenceSession(to_onnx(mod, params), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(out, sess.run(None, {"x": data})[0], rtol=1e-4, atol=1e-4)


def test_bias_add_then_nhwc_permute_runs_on_the_rows() -> None:
    # ConvNeXt's stem: conv, then permuted to NHWC for a layer norm over the channels
    conv = _conv((1, 16, 32, 32), (20, 16, 4, 4), strides=(4, 4))
    nhwc = relay.transpose(relay.nn.bias_add(conv, relay.var("b", shape=(20,))), (0, 2, 3, 1))
    params = {"w": _random(20, 16, 4, 4), "b": _random(20)}
    assert _calls(nhwc, params).get("transpose", 0) == 1  # the patches' only
    data = _random(1, 16, 32, 32)
    out, _ = _built(nhwc, params, data)
    expected = conv2d_reference(conv.attrs, data, params["w"]) + params["b"][:, None, None]
    np.testing.assert_allclose(out, expected.transpose(0, 2, 3, 1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("weight_shape", "attrs"),
    [
        ((8, 64, 1, 1), {}),  # 1x1: a GEMM in the convolution templates already
        ((8, 64, 3, 3), {"strides": (3, 3), "padding": (1, 1)}),
        ((8, 64, 3, 3), {"strides": (2, 2)}),
        ((8, 64, 2, 2), {"strides": (2, 2), "dilation": (2, 2)}),
        ((8, 32, 2, 2), {"strides": (2, 2), "groups": 2}),
        ((8, 3, 4, 4), {"strides": (4, 4)}),  # 48 products per output: the direct convolution
    ],
    ids=["1x1", "padded", "overlapping", "dilated", "grouped", "shallow"],
)
def test_other_convolutions_are_left_alone(weight_shape: tuple[int, ...], attrs: dict[str, object]) -> None:
    channels = 64 if weight_shape[1] != 3 else 3
    x = relay.var("x", shape=(1, channels, 12, 12))
    conv = relay.nn.conv2d(x, relay.var("w", shape=weight_shape), **attrs)
    assert _calls(conv, {"w": _random(*weight_shape)}) == {"nn.conv2d": 1}
    assert 3 * 4 * 4 < MIN_PATCH_DEPTH <= 16 * 16 * 3


def test_an_integer_convolution_is_left_alone() -> None:
    x = relay.var("x", shape=(1, 3, 32, 32), dtype="int8")
    conv = relay.nn.conv2d(x, relay.var("w", shape=(8, 3, 16, 16), dtype="int8"), strides=(16, 16),
                           out_dtype="int32")
    assert _calls(conv, {"w": np.ones((8, 3, 16, 16), "int8")}) == {"nn.conv2d": 1}


def test_the_pass_runs_at_opt_level_2_and_can_be_disabled() -> None:
    conv = _conv((1, 3, 32, 32), (8, 3, 16, 16), strides=(16, 16))
    mod = g.IRModule.from_expr(g.Function(g.free_vars(conv), conv))
    assert PatchConvToDense().opt_level == 2
    with PassContext(opt_level=3, disabled_pass=["PatchConvToDense"]):
        assert g.count_calls(optimize(mod)["main"]) == {"nn.conv2d": 1}
