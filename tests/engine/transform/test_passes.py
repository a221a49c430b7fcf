"""The target-independent IR → IR passes codegen runs first: flatten, vectorize, unroll (checked
on the IR they produce).  Each keeps what it does not rewrite, thread tags of bound loops included.
"""

from __future__ import annotations

import pytest

from tests.engine.codegen.codegen_kernels import loop, nodes
from tunecli.engine.ir import (
    Allocate,
    Broadcast,
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    IntImm,
    Ramp,
    Select,
    SeqStmt,
    Var,
    const,
)
from tunecli.engine.ir.simplify import simplify
from tunecli.engine.transform.auto_unroll import auto_unroll
from tunecli.engine.transform.flatten import flatten
from tunecli.engine.transform.unroll import MAX_NODES, node_count, unroll
from tunecli.engine.transform.vectorize import pieces, vectorize
from tunecli.errors import CodegenError


def test_flatten_is_row_major_and_checks_rank():
    a = Buffer("a", (3, 4, 5), "float32")
    i, j, k = Var("i"), Var("j"), Var("k")
    flat = flatten(BufferStore(a, const(1.0), [i, j, k]))
    assert str(flat.indices[0]) == "((((i * 4) + j) * 5) + k)"
    with pytest.raises(CodegenError, match="a has 3 dimensions but is indexed with 2"):
        flatten(BufferStore(a, const(1.0), [i, j]))


def test_vectorize_keeps_affine_indices_as_ramps_and_broadcasts_invariants():
    a, b, c = Buffer("a", (8, 16), "float32"), Buffer("b", (16,), "float32"), Buffer("c", (8, 16), "float32")
    i = Var("i")
    body = loop("j", 16, "vectorized", lambda j: BufferStore(
        c, BufferLoad(a, [i * 16 + j]) * BufferLoad(b, [j]) + BufferLoad(b, [i]), [i * 16 + j]))
    out = vectorize(body)
    assert not nodes(out, For)
    assert isinstance(out.indices[0], Ramp) and isinstance(out.indices[0].stride, IntImm)
    assert out.indices[0].stride.value == 1 and out.indices[0].lanes == 16
    assert out.value.dtype == "float32x16"
    assert [str(x.value) for x in nodes(out, Broadcast)] == ["b[i]"]


def test_vectorize_cuts_odd_widths_into_machine_vectors():
    assert pieces(49, 16) == [16, 16, 16, 1]
    assert pieces(64, 16) == [64]
    assert pieces(7, 16) == [4, 2, 1]
    assert pieces(100, 16) == [16] * 6 + [4]
    o = Buffer("o", (49,), "float32")
    out = vectorize(loop("p", 49, "vectorized", lambda p: BufferStore(o, const(2.0), [p])))
    assert [str(s.indices[0]) for s in out.stmts] == ["ramp(0, 1, 16)", "ramp(16, 1, 16)", "ramp(32, 1, 16)",
                                                      "48"]


@pytest.mark.parametrize("make", [
    lambda s, a: loop("j", 8, "vectorized", lambda j: BufferStore(s, BufferLoad(a, [j]), [0])),
    lambda s, a: loop("j", 8, "vectorized", lambda j: loop("k", j, "serial",
                                                          lambda k: BufferStore(s, 1.0, [k]))),
    lambda s, a: loop("j", 8, "vectorized", lambda j: Allocate(Buffer("t", (1,), "float32"),
                                                                BufferStore(a, BufferLoad(a, [j]), [j]))),
])
def test_vectorize_falls_back_to_a_serial_loop(make):
    s, a = Buffer("s", (8,), "float32"), Buffer("a", (8,), "float32")
    out = vectorize(make(s, a))
    assert isinstance(out, For) and out.kind == "serial"
    assert not nodes(out, Ramp)


def test_vectorize_goes_inside_inner_loops_with_invariant_bounds():
    c, a = Buffer("c", (16,), "float32"), Buffer("a", (4, 16), "float32")
    body = loop("j", 16, "vectorized", lambda j: loop("k", 4, "serial", lambda k: BufferStore(
        c, BufferLoad(c, [j]) + BufferLoad(a, [k * 16 + j]), [j])))
    out = vectorize(body)
    assert isinstance(out, For) and out.loop_var.name == "k" and out.kind == "serial"
    assert out.body.value.dtype == "float32x16"


def test_unroll_substitutes_constants_and_caps_large_loops():
    o = Buffer("o", (600,), "int32")
    small = unroll(loop("i", 3, "unrolled", lambda i: BufferStore(o, i, [i + 1])))
    assert isinstance(small, SeqStmt) and [str(s.indices[0]) for s in small.stmts] == ["(0 + 1)", "(1 + 1)",
                                                                                        "(2 + 1)"]
    big = unroll(loop("i", 600, "unrolled", lambda i: BufferStore(o, i, [i])))
    assert isinstance(big, For) and big.kind == "serial"


def test_nested_unrolled_loops_stop_at_the_node_budget():
    o = Buffer("o", (200, 200), "int32")
    nest = loop("i", 200, "unrolled", lambda i: loop("j", 200, "unrolled",
                                                     lambda j: BufferStore(o, i + j, [i, j])))
    out = unroll(nest)
    assert isinstance(out, For) and out.kind == "serial"  # the outer one: 200 × 200 copies is too many
    assert isinstance(out.body, SeqStmt) and len(out.body.stmts) == 200


def select_rows(e, rows: int, width: int, x):
    """``select(e == 0, row 0, select(e == 1, row 1, ...))``: row r is a sum of ``width`` terms."""
    def row(r):
        total = x * const(float(r))
        for k in range(1, width):
            total = total + x * const(float(r + k))
        return total
    value = row(rows - 1)
    for r in reversed(range(rows - 1)):
        value = Select(e == r, row(r), value)
    return value


def test_an_unrolled_copy_keeps_only_the_select_value_its_constant_chooses():
    o, a = Buffer("o", (6, 16), "float32"), Buffer("a", (16,), "float32")
    j = Var("j")
    out = unroll(loop("e", 6, "unrolled",
                      lambda e: BufferStore(o, select_rows(e, 6, 3, BufferLoad(a, [j])), [e, j])))
    assert isinstance(out, SeqStmt) and len(out.stmts) == 6
    assert not nodes(out, Select)
    assert [str(simplify(s.value)).count("a[j]") for s in out.stmts] == [3] * 6
    assert "(a[j] * 2.0f)" in str(out.stmts[1].value) and "(a[j] * 5.0f)" not in str(out.stmts[1].value)
    # a condition the constant does not decide stays
    kept = unroll(loop("e", 2, "unrolled",
                       lambda e: BufferStore(o, Select(j < 3 + e, const(1.0), const(0.0)), [e, j])))
    assert all(isinstance(s.value, Select) for s in kept.stmts)


def test_the_node_budget_counts_the_copies_after_their_selects_are_chosen():
    o, a = Buffer("o", (6, 6, 16), "float32"), Buffer("a", (16,), "float32")
    j = Var("j")
    x = BufferLoad(a, [j])

    def nest():
        return loop("e1", 6, "unrolled", lambda e1: loop("e2", 6, "unrolled", lambda e2: BufferStore(
            o, select_rows(e1, 6, 40, x) + select_rows(e2, 6, 40, x), [e1, e2, j])))

    assert 36 * node_count(nest().body.body) > MAX_NODES  # too big before the choice
    out = unroll(nest())
    assert isinstance(out, SeqStmt) and len(out.stmts) == 36
    assert not nodes(out, For) and not nodes(out, Select)


def test_the_passes_keep_the_thread_tags_of_bound_loops():
    o = Buffer("o", (8, 16), "float32")
    bx, tx = Var("bx"), Var("tx")
    inner = SeqStmt([
        loop("u", 2, "unrolled", lambda u: BufferStore(o, const(1.0), [bx, tx * 2 + u])),
        loop("v", 4, "vectorized", lambda v: BufferStore(o, const(2.0), [bx, v])),
        For(Var("w"), 0, 3, "serial", BufferStore(o, const(3.0), [bx, 0])),
    ])
    nest = For(bx, 0, 8, "serial", For(tx, 0, 8, "serial", inner, thread_tag="threadIdx.x"),
               thread_tag="blockIdx.x")
    out = unroll(vectorize(flatten(simplify(auto_unroll(nest, 16, keep={bx, tx})))))
    assert out.thread_tag == "blockIdx.x" and out.body.thread_tag == "threadIdx.x"
    assert not nodes(out.body.body, For), "the loops inside were unrolled and vectorized"
    assert "thread_binding(blockIdx.x) for (bx, 0, 8)" in str(out)
