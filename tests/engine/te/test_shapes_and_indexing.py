"""Shapes given as integral floats, the integer-division helpers and the ``tunecli.tir`` face."""

import numpy as np
import pytest

import tunecli.tir as tir
from tunecli import te
from tunecli.engine.build import build
from tunecli.engine.ir import expr as E
from tunecli.engine.ir.simplify import simplify
from tunecli.errors import ExprError


def test_integral_float_shapes_are_accepted():
    N, bn = 64, 32
    B = te.placeholder((N, 8), name="B")
    packed = te.compute((N / bn, 8, bn), lambda x, y, z: B[x * bn + z, y], name="packed")  # TVM tutorial
    assert packed.shape == (2, 8, 32)
    assert te.placeholder(np.float32(4.0), name="A").shape == (4,)
    assert te.placeholder((E.FloatImm(3.0), 2), name="A").shape == (3, 2)


@pytest.mark.parametrize("shape", [(64 / 3,), (2, 2.5), E.FloatImm(1.5)])
def test_non_integral_float_shapes_name_the_value(shape):
    with pytest.raises(ExprError, match=r"shape entry (21\.33|2\.5|1\.5).* is not an integer"):
        te.placeholder(shape, name="A")
    with pytest.raises(ExprError, match="is not an integer"):
        te.compute(shape, lambda *i: 1.0, name="C")


@pytest.mark.parametrize("a, b", [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, 3), (0, 5)])
def test_division_helpers_fold_like_python_and_c(a, b):
    def folded(e):
        return simplify(e).value

    assert folded(tir.floordiv(a, b)) == a // b and folded(tir.floormod(a, b)) == a % b
    assert folded(tir.truncdiv(a, b)) == int(a / b)
    assert folded(tir.truncmod(a, b)) == a - int(a / b) * b  # the sign follows a, as C's %
    assert folded(tir.indexdiv(a, b)) == a // b and folded(tir.indexmod(a, b)) == a % b


def test_division_helpers_compile_like_the_reference():
    A = te.placeholder((16,), "int32", name="A")
    def by_three(f):
        return te.compute((16,), lambda i: f(A[i], 3), name=f.__name__)

    out = [by_three(f) for f in (tir.floordiv, tir.floormod, tir.truncdiv, tir.truncmod)]
    s = te.create_schedule([o.op for o in out])
    mod = build(s, [A, *out])
    a = np.arange(-8, 8, dtype="int32")
    res = [np.zeros(16, "int32") for _ in out]
    mod(a, *res)
    np.testing.assert_array_equal(res[0], a // 3)
    np.testing.assert_array_equal(res[1], a % 3)
    np.testing.assert_array_equal(res[2], np.trunc(a / 3).astype("int32"))
    np.testing.assert_array_equal(res[3], np.fmod(a, 3))


def test_float_truncmod_rounds_towards_zero():
    e = tir.truncmod(E.FloatImm(-7.5), 2.0)
    assert e.dtype == "float32" and "trunc" in str(e)


def test_tir_face_names():
    x = tir.Var("x", "int32")
    assert isinstance(x, tir.PrimExpr) and x.dtype == "int32"
    assert tir.IntImm("int64", 4).dtype == "int64" and tir.IntImm("int64", 4).value == 4  # TVM's order
    assert tir.IntImm(4).dtype == "int32" and tir.FloatImm("float16", 0.5).dtype == "float16"
    assert isinstance(tir.const(1, "int8"), tir.IntImm)
    sel = tir.Select(x > 0, 1.0, tir.FloatImm("float32", 2.0))
    assert isinstance(sel, tir.Select) and sel.dtype == "float32"
    assert tir.if_then_else(x > 0, x, 0).dtype == "int32"
    assert str(tir.all(x > 0, x < 4)) == "((x > 0) && (x < 4))"
    assert str(tir.any(x < 0, x > 4)) == "((x < 0) || (x > 4))"
    assert tir.exp(x).dtype == tir.sqrt(x).dtype == "float32"
    assert tir.min_value("int8").value == -128 and tir.max_value("uint8").value == 255


def test_tir_select_branches_must_agree():
    x = tir.Var("x")
    with pytest.raises(ExprError, match="different dtypes"):
        tir.Select(x > 0, tir.IntImm(1), tir.FloatImm(1.0))
