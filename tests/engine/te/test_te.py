"""te: placeholders, computes, reductions, intrinsics, and their errors."""

import pytest

from tunecli import te
from tunecli.engine.ir import expr as E
from tunecli.engine.te import Reduce, TensorRead
from tunecli.errors import ExprError


def test_placeholder_and_compute_shapes():
    A = te.placeholder((4, 5), name="A")
    B = te.compute((4, 5), lambda i, j: A[i, j] * 2, name="B", tag="elemwise", attrs={"x": 1})
    assert A.shape == (4, 5) and A.dtype == "float32" and A.name == "A"
    assert B.shape == (4, 5) and B.op.name == "B" and B.op.tag == "elemwise" and B.op.attrs == {"x": 1}
    assert [iv.var.name for iv in B.op.axis] == ["i", "j"]
    assert [int(iv.dom.extent) for iv in B.op.axis] == [4, 5]
    assert B.op.input_tensors == [A]
    assert isinstance(B.op.body[0], E.Mul)
    read = B.op.body[0].a
    assert isinstance(read, TensorRead) and read.tensor is A
    assert "A[i, j]" in str(B.op.body[0])


def test_compute_rank_one_and_varargs():
    A = te.placeholder(6, name="A")
    B = te.compute(6, lambda i: A[i] + 1, name="B")
    C = te.compute((2, 3, 4), lambda *idx: idx[0] + idx[1] * idx[2], name="C")
    assert B.shape == (6,) and C.shape == (2, 3, 4) and C.dtype == "int32"
    assert [iv.var.name for iv in C.op.axis] == ["i0", "i1", "i2"]


def test_reduce_sum_with_where_and_axis_list():
    A = te.placeholder((4, 5, 6), name="A")
    k1, k2 = te.reduce_axis((0, 5), "k1"), te.reduce_axis((0, 6), "k2")
    C = te.compute((4,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2], where=k1 < 3), name="C")
    body = C.op.body[0]
    assert isinstance(body, Reduce) and body.combiner.name == "sum"
    assert list(body.axis) == [k1, k2] and C.op.reduce_axis == [k1, k2]
    assert k1.iter_type == "comm_reduce" and isinstance(body.condition, E.LT)
    assert int(body.combiner.identity_element[0].value) == 0


def test_max_min_reducers_and_elementwise():
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), "k")
    mx = te.compute((4,), lambda i: te.max(A[i, k], axis=k), name="mx")
    assert mx.op.body[0].combiner.identity_element[0].value == float("-inf")
    mn = te.compute((4,), lambda i: te.min(A[i, k], axis=k), name="mn")
    assert mn.op.body[0].combiner.identity_element[0].value == float("inf")
    relu = te.compute((4, 5), lambda i, j: te.max(A[i, j], 0.0), name="relu")
    assert isinstance(relu.op.body[0], E.Max) and relu.op.reduce_axis == []
    assert isinstance(te.min(A[0, 0], A[1, 1]), E.Min)


def test_comm_reducer_custom():
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    A = te.placeholder((3, 4), "int32", name="A")
    k = te.reduce_axis((0, 4), "k")
    P = te.compute((3,), lambda i: prod(A[i, k], axis=k), name="P")
    red = P.op.body[0]
    assert red.combiner.name == "prod" and red.combiner.identity_element[0].value == 1
    combined = red.combiner.combine(E.IntImm(3), E.IntImm(4))
    assert isinstance(combined, E.Mul)


def test_int8_accumulates_in_int32_with_casts():
    A = te.placeholder((4, 8), "int8", name="A")
    B = te.placeholder((8, 4), "int8", name="B")
    k = te.reduce_axis((0, 8), "k")
    C = te.compute((4, 4), lambda i, j: te.sum(A[i, k].astype("int32") * B[k, j].astype("int32"), axis=k))
    assert C.dtype == "int32" and C.op.name == "compute"


def test_intrinsics_and_select():
    A = te.placeholder((4,), name="A")
    for fn, name in [(te.exp, "exp"), (te.sqrt, "sqrt"), (te.log, "log"), (te.tanh, "tanh"),
                     (te.sigmoid, "sigmoid"), (te.abs, "fabs"), (te.floor, "floor"), (te.ceil, "ceil")]:
        e = fn(A[0])
        assert isinstance(e, E.Call) and e.name == name and e.dtype == "float32"
    p = te.power(A[0], 2)
    assert isinstance(p, E.Call) and p.name == "pow" and p.args[1].dtype == "float32"
    s = te.if_then_else(A[0] > 0, A[0], 0.0)
    assert isinstance(s, E.Select) and s.false_value.dtype == "float32"
    assert isinstance(te.all(A[0] > 0, A[1] > 0, A[2] > 0), E.And)
    assert isinstance(te.any(A[0] > 0, A[1] > 0), E.Or)
    assert isinstance(te.abs(te.var("n")), E.Select)


def test_itervar_in_expressions():
    k = te.reduce_axis((2, 7), "k")
    assert int(k.dom.min) == 2 and int(k.dom.extent) == 5
    assert isinstance(k * 2, E.Mul) and isinstance(2 * k, E.Mul) and isinstance(1 - k, E.Sub)
    assert isinstance(k < 3, E.LT)
    assert E.convert(k) is k.var
    A = te.placeholder((10,), name="A")
    assert A[k + 1].indices[0].a is k.var


def test_cast_face():
    A = te.placeholder((2,), "int8", name="A")
    assert te.cast(A[0], "float32").dtype == "float32"
    assert A[0].astype("int32").dtype == "int32"


@pytest.mark.parametrize("bad", [
    lambda A: te.compute((4,), lambda i: A[i], name="x"),
    lambda A: te.compute((4, 5), lambda i, j: A[i, j, 0], name="x"),
    lambda A: A[1.5, 0],
    lambda A: te.compute((4, 5), lambda i: A[i, 0], name="x"),
    lambda A: te.placeholder((4, 0), name="Z"),
    lambda A: te.placeholder((4,), "float13", name="Z"),
    lambda A: te.reduce_axis((3, 3), "k"),
    lambda A: te.sum(A[0, 0], axis=te.compute((1,), lambda i: i).op.axis[0]),
    lambda A: te.if_then_else(A[0, 0], 1.0, 2.0),
])
def test_expression_errors(bad):
    A = te.placeholder((4, 5), name="A")
    with pytest.raises(ExprError):
        bad(A)


def test_reduction_must_be_top_level():
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), "k")
    with pytest.raises(ExprError, match="whole body"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) * 2, name="bad")


def test_symbolic_bool_is_an_error():
    A = te.placeholder((4,), name="A")
    with pytest.raises(ExprError, match="Python bool"):
        bool(A[0] < 1)


def test_chained_indexing_is_a_full_read():
    A = te.placeholder((4, 5), name="A")
    B = te.compute((4, 5), lambda i, j: A[i][j] + 1, name="B")
    read = B.op.body[0].a
    assert isinstance(read, TensorRead) and len(read.indices) == 2
    with pytest.raises(ExprError, match="indexed with 1"):
        te.compute((4,), lambda i: A[i] + 1, name="bad")
