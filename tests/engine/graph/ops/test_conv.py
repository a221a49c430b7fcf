"""nn.conv2d against a direct loop definition: strides, padding, dilation, groups, depthwise,
blocked layouts, out_dtype; and its type relation."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.ops import conv, transform

from .run_graph import run


def direct_conv(
    x: np.ndarray, w: np.ndarray, stride: int, pad: tuple[int, int, int, int], dil: int, groups: int
) -> np.ndarray:
    """conv2d by its definition: out[n, o, i, j] = sum over the group's channels and the window."""
    n, c, h, wd = x.shape
    o_ch, cg, kh, kw = w.shape
    top, left, bottom, right = pad
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (top, bottom), (left, right)])
    oh = (h + top + bottom - (kh - 1) * dil - 1) // stride + 1
    ow = (wd + left + right - (kw - 1) * dil - 1) // stride + 1
    out = np.zeros((n, o_ch, oh, ow))
    og = o_ch // groups
    for o in range(o_ch):
        g0 = (o // og) * cg
        for i in range(oh):
            for j in range(ow):
                for y in range(kh):
                    for z in range(kw):
                        out[:, o, i, j] += (
                            xp[:, g0 : g0 + cg, i * stride + y * dil, j * stride + z * dil] * w[o, :, y, z]
                        ).sum(axis=1)
    return out.astype(x.dtype)


def conv_inputs(
    seed: int, x_shape: tuple[int, ...], w_shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Random float32 data and weights of the given shapes (the data drawn first)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(x_shape).astype("float32"), rng.standard_normal(w_shape).astype("float32")


def blocked_inputs(
    x: np.ndarray, w: np.ndarray, data_layout: str, kernel_layout: str
) -> tuple[g.Var, g.Var, g.Expr, g.Expr]:
    """Variables ``x`` and ``w`` of the NCHW/OIHW arrays, and their layout transforms to the blocked
    ``data_layout`` and ``kernel_layout``."""
    xv, wv = g.var("x", shape=x.shape), g.var("w", shape=w.shape)
    blocked_x = transform.layout_transform(xv, "NCHW", data_layout)
    return xv, wv, blocked_x, transform.layout_transform(wv, "OIHW", kernel_layout)


def assert_close(actual: np.ndarray, expected: np.ndarray) -> None:
    """float32 convolution results agree with the direct definition's."""
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)


CASES = [  # (in_ch, out_ch, hw, kernel, stride, padding, dilation, groups)
    (3, 4, 7, 3, 1, (1, 1), 1, 1),
    (3, 4, 8, 3, 2, (1, 1), 1, 1),
    (2, 3, 9, 3, 1, (0, 1, 2, 1), 2, 1),
    (4, 6, 6, 3, 1, (1, 1), 1, 2),
    (4, 4, 7, 3, 2, (1, 1), 1, 4),  # depthwise
    (4, 8, 6, 3, 1, (1, 1), 1, 4),  # depthwise, channel multiplier 2
    (5, 2, 5, 1, 1, (0, 0), 1, 1),
]


@pytest.mark.parametrize(("cin", "cout", "hw", "k", "stride", "padding", "dil", "groups"), CASES)
def test_conv2d_matches_the_direct_definition(cin, cout, hw, k, stride, padding, dil, groups) -> None:
    x, w = conv_inputs(cin * 100 + cout, (2, cin, hw, hw), (cout, cin // groups, k, k))
    y = conv.conv2d(
        g.var("x", shape=x.shape),
        g.var("w"),
        strides=stride,
        padding=padding,
        dilation=dil,
        groups=groups,
        channels=cout,
        kernel_size=k,
    )
    pad4 = padding * 2 if len(padding) == 2 else padding
    expected = direct_conv(x, w, stride, (pad4[0], pad4[1], pad4[2], pad4[3]), dil, groups)
    assert_close(run(y, x=x, w=w), expected)


def test_blocked_layout_conv_equals_the_nchw_conv_rearranged() -> None:
    x, w = conv_inputs(7, (1, 8, 6, 6), (16, 8, 3, 3))
    xv, wv, bx, bw = blocked_inputs(x, w, "NCHW4c", "OIHW4i8o")
    blocked = conv.contrib_conv2d_nchwc(bx, bw, padding=1, channels=16, kernel_size=3, data_layout="NCHW4c",
                                        kernel_layout="OIHW4i8o", out_layout="NCHW8c")
    back = transform.layout_transform(blocked, "NCHW8c", "NCHW")
    fn = g.Function([xv, wv], back)
    g.infer_types(fn)
    assert blocked.checked_type.shape == (1, 2, 6, 6, 8)
    expected = direct_conv(x, w, 1, (1, 1, 1, 1), 1, 1)
    assert_close(g.evaluate(fn, [x, w]), expected)
    plain = conv.conv2d(
        g.var("x2", shape=(1, 2, 6, 6, 4)),
        g.var("w2"),
        padding=1,
        channels=16,
        kernel_size=3,
        data_layout="NCHW4c",
        kernel_layout="OIHW4i8o",
        out_layout="NCHW8c",
    )
    g.infer_types(g.Function(g.free_vars(plain), plain))
    assert plain.args[1].checked_type.shape == (2, 2, 3, 3, 4, 8)


def test_int8_conv_accumulates_in_out_dtype() -> None:
    x = np.full((1, 2, 3, 3), 100, "int8")
    w = np.full((1, 2, 3, 3), 100, "int8")
    y = conv.conv2d(
        g.var("x", shape=x.shape, dtype="int8"), g.var("w", shape=w.shape, dtype="int8"), out_dtype="int32"
    )
    out = run(y, x=x, w=w)
    assert out.dtype == np.int32 and out[0, 0, 0, 0] == 18 * 100 * 100


def test_conv2d_attrs_keep_tvm_forms() -> None:
    call = conv.conv2d(
        g.var("x"), g.var("w"), strides=2, padding=[1, 2, 3, 4], kernel_size=[3, 3], channels=8
    )
    assert call.attrs.strides == (2, 2) and call.attrs.padding == (1, 2, 3, 4)
    assert call.attrs.kernel_size == (3, 3) and call.attrs.get_int("channels") == 8
    assert conv.conv2d_padding(call.attrs, (3, 3)) == (1, 2, 3, 4)
    assert conv.conv2d_padding(conv.make_conv2d_attrs(padding=(1, 2)), (3, 3)) == (1, 2, 1, 2)
    assert conv.conv2d_padding(conv.make_conv2d_attrs(padding=3), (7, 7)) == (3, 3, 3, 3)
    assert call.op.pattern == g.OpPattern.OUT_ELEMWISE_FUSABLE and call.op.strategy_op == "conv2d"


def test_blocked_depthwise_conv_equals_the_nchw_depthwise_conv_rearranged() -> None:
    x, w = conv_inputs(8, (1, 8, 5, 5), (8, 1, 3, 3))
    _, _, bx, bw = blocked_inputs(x, w, "NCHW4c", "OIHW1i4o")
    blocked = conv.contrib_depthwise_conv2d_nchwc(
        bx, bw, strides=2, padding=1, groups=8, channels=8, kernel_size=3, data_layout="NCHW4c",
        kernel_layout="OIHW1i4o")
    out = run(transform.layout_transform(blocked, "NCHW4c", "NCHW"), x=x, w=w)
    assert_close(out, direct_conv(x, w, 2, (1, 1, 1, 1), 1, 8))
    assert blocked.op.pattern == g.OpPattern.OUT_ELEMWISE_FUSABLE


def test_nhwc_conv_with_hwio_kernel_equals_the_nchw_conv() -> None:
    x, w = conv_inputs(9, (1, 3, 6, 6), (4, 3, 3, 3))
    y = conv.conv2d(
        g.var("x", shape=(1, 6, 6, 3)),
        g.var("w"),
        strides=2,
        padding=1,
        channels=4,
        kernel_size=3,
        data_layout="NHWC",
        kernel_layout="HWIO",
    )
    out = run(y, x=x.transpose(0, 2, 3, 1), w=w.transpose(2, 3, 1, 0))
    expected = direct_conv(x, w, 2, (1, 1, 1, 1), 1, 1)
    assert_close(out, expected.transpose(0, 2, 3, 1))
