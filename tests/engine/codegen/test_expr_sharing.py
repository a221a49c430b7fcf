"""Equal subexpressions of one statement are emitted once per block and mask, never across a
variable binding or a block; those reading memory never across a statement (a store may separate
them), index arithmetic across the statements of a block; the kernels compute what they computed
before."""

from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir

from tunecli.engine.build import build
from tunecli.engine.codegen.cpu_backend import CPUBackend
from tunecli.engine.codegen.emit_expr import ExprEmitter
from tunecli.engine.codegen.expr_sharing import SharedValues
from tunecli.engine.ir import Buffer, BufferLoad, BufferStore, For, PrimFunc, Select, SeqStmt, Var
from tunecli.engine.ir import expr as E


def _emitter() -> tuple[ExprEmitter, ir.Function]:
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.IntType(32), ir.PointerType()]), "f")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    return ExprEmitter(module, builder, CPUBackend()), fn


def test_equal_trees_get_one_structure_and_different_ones_another() -> None:
    shared = SharedValues()
    x, y = E.Var("x", "int32"), E.Var("y", "int32")
    assert shared.structure(x * 3 + 1) == shared.structure(x * 3 + 1)
    assert shared.structure(x * 3 + 1) != shared.structure(y * 3 + 1)  # variables by identity
    assert shared.structure(x + 1) != shared.structure(x + 2)
    assert shared.structure(E.const(0.0, "float32")) != shared.structure(E.const(-0.0, "float32"))
    assert shared.structure(E.const(1, "int32")) != shared.structure(E.const(1, "int64"))


def test_a_load_is_emitted_once_per_statement_block_and_binding() -> None:
    em, fn = _emitter()
    i = E.Var("i", "int32")
    buf = Buffer("A", (16,), "float32")
    em.buffers[buf] = fn.args[1]

    def load() -> E.Expr:
        return E.BufferLoad(buf, (i * 2 + 1,))

    def loads() -> int:
        return str(fn).count(" load ")

    with em.binding(i, fn.args[0]):
        first = em.expr(load() + load())  # two equal trees: one load
        assert loads() == 1
        assert em.expr(load()) is not None and loads() == 1  # still the same statement and block
        em.shared.clear()  # a statement starts: a store may have run in between
        em.expr(load())
        assert loads() == 2
        em.builder.position_at_end(fn.append_basic_block("other"))
        em.expr(load())  # another block: the first value may not dominate it
        assert loads() == 3
    with em.binding(i, ir.Constant(ir.IntType(32), 5)):  # rebinding forgets the values
        em.expr(load())
        assert loads() == 4
    assert first is not None


def test_index_arithmetic_is_shared_by_the_statements_of_a_block_and_loads_are_not() -> None:
    em, fn = _emitter()
    i = E.Var("i", "int32")
    buf = Buffer("A", (64,), "float32")
    em.buffers[buf] = fn.args[1]

    def count(op: str) -> int:
        return str(fn).count(f" {op} ")

    with em.binding(i, fn.args[0]):
        em.expr(E.BufferLoad(buf, (E.FloorDiv(i, E.const(4)) * 16 + 1,)))
        divisions, loads = count("sdiv"), count("load")
        em.shared.forget_reads()  # a statement starts
        em.expr(E.BufferLoad(buf, (E.FloorDiv(i, E.const(4)) * 16 + 1,)))
        assert count("sdiv") == divisions and count("load") == loads + 1
        em.builder.position_at_end(fn.append_basic_block("other"))
        em.expr(E.FloorDiv(i, E.const(4)) * 16 + 1)  # another block: computed again
        assert count("sdiv") == divisions + 1


def test_a_store_between_statements_is_seen_by_the_next_reads() -> None:
    n = 19
    a, out = Buffer("a", (n,), "float32"), Buffer("out", (n,), "float32")
    i = Var("i")

    def x() -> E.Expr:
        return BufferLoad(a, [E.FloorDiv(i * 3, E.const(3))])  # a load at index arithmetic shared by all

    body = SeqStmt([BufferStore(out, x() * E.const(2.0, "float32"), [i]),
                    BufferStore(a, x() + E.const(1.0, "float32"), [E.FloorDiv(i * 3, E.const(3))]),
                    BufferStore(out, BufferLoad(out, [i]) + x(), [i])])
    mod = build(PrimFunc("seq", [a, out], For(i, 0, n, "serial", body)))
    data = np.random.default_rng(1).uniform(-2, 2, n).astype("float32")
    got, arg = np.zeros(n, "float32"), data.copy()
    mod(arg, got)
    np.testing.assert_allclose(got, data * 2 + data + 1, rtol=1e-6)
    np.testing.assert_allclose(arg, data + 1, rtol=1e-6)


@pytest.mark.parametrize("kind", ["serial", "vectorized"])
def test_a_kernel_of_repeated_terms_and_guarded_loads_computes_the_same(kind: str) -> None:
    n = 37
    a, out = Buffer("a", (n,), "float32"), Buffer("out", (n,), "float32")
    i = Var("i")

    def x() -> E.Expr:  # a new tree each time, as unrolling makes them
        return BufferLoad(a, [i]) * E.const(2.0, "float32")

    def shifted() -> E.Expr:  # a guarded read: emitted under control flow or a lane mask
        return Select(i < n - 1, BufferLoad(a, [i + 1]), E.const(0.0, "float32"))

    value = (x() + x()) * (x() + shifted()) - (x() + x()) + shifted()
    mod = build(PrimFunc("rep", [a, out], For(i, 0, n, kind, BufferStore(out, value, [i]))))
    data = np.random.default_rng(0).uniform(-2, 2, n).astype("float32")
    got = np.zeros(n, "float32")
    mod(data, got)
    nxt = np.append(data[1:], np.float32(0))
    want = (data * 2 + data * 2) * (data * 2 + nxt) - (data * 2 + data * 2) + nxt
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
