"""The text form of graphs (what ``print(mod)`` shows)."""

from __future__ import annotations

import numpy as np

from tunecli.engine import graph as g
from tunecli.engine.graph.ops import conv, nn, transform, unary


def test_module_text_lists_params_calls_attrs_and_types() -> None:
    x = g.var("data", shape=(1, 3, 8, 8))
    y = unary.relu(conv.conv2d(x, g.var("w"), padding=(1, 1), channels=4, kernel_size=(3, 3)))
    mod = g.InferType()(g.IRModule.from_expr(y))
    assert str(mod) == (
        '#[version = "0.0.5"]\n'
        "def @main(%data: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) "
        "-> Tensor[(1, 4, 8, 8), float32] {\n"
        "  %0 = nn.conv2d(%data, %w, padding=[1, 1], channels=4, kernel_size=[3, 3]) "
        "/* ty=Tensor[(1, 4, 8, 8), float32] */;\n"
        "  nn.relu(%0) /* ty=Tensor[(1, 4, 8, 8), float32] */\n"
        "}"
    )


def test_untyped_text_tuples_constants_and_nested_functions() -> None:
    x = g.var("x", shape=(2, 2))
    p = g.var("p0", shape=(2, 2))
    fused = g.Function([p], unary.sigmoid(p)).with_attr("Primitive", 1)
    bn = nn.batch_norm(x, g.var("g"), g.var("b"), g.var("m"), g.var("v"), epsilon=2e-5)
    y = transform.concatenate([g.Call(fused, [bn[0]]), x * g.const(np.ones((2, 2), "float32")) + 1.0], axis=1)
    assert g.astext(g.Function([x], y)) == (
        "fn (%x: Tensor[(2, 2), float32]) {\n"
        "  %0 = fn (%p0: Tensor[(2, 2), float32], Primitive=1) {\n"
        "    sigmoid(%p0)\n"
        "  };\n"
        "  %1 = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=2e-05f);\n"
        "  %2 = %1.0;\n"
        "  %3 = %0(%2);\n"
        "  %4 = multiply(%x, meta[relay.Constant][0]);\n"
        "  %5 = add(%4, 1f);\n"
        "  %6 = (%3, %5);\n"
        "  concatenate(%6, axis=1)\n"
        "}"
    )


def test_types_print_like_tvms() -> None:
    assert str(g.TensorType((1, 3), "float32")) == "Tensor[(1, 3), float32]"
    assert str(g.TensorType((3,), "int8")) == "Tensor[(3), int8]"
    assert str(g.TensorType((), "float32")) == "float32"
    assert str(g.TupleType((g.TensorType((2,)), g.TensorType(())))) == "(Tensor[(2), float32], float32)"
