"""Groups without an anchor (pools, layout transforms): compiled kernels equal numpy in every layout
and shape, and their loops are vectorized along the contiguous axis at the target's vector width
(a channel block is reduced over the pooling window in vector registers; a layout transform reads
and writes whole vectors without index division in its innermost loop)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import build
from tunecli.engine.graph.group_schedule import vector_lanes
from tunecli.engine.graph.lower_group import lower_group
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.simplify import simplify
from tunecli.engine.ir.visitor import post_order
from tunecli.engine.runtime.module import Module
from tunecli.engine.target import Target

nn = relay.nn
#: The host's own width and SSE's 4 float lanes (both run here).
TARGETS = ["llvm", "llvm -mcpu=x86-64"]


def _bn_relu(x: g.Expr, channels: int, block: int) -> g.Expr:
    """A folded batch norm and relu after ``x`` (what follows ResNet's first max pool)."""
    rng = np.random.default_rng(3)
    shape = (1, channels // block, 1, 1, block) if block else (channels, 1, 1)
    scale = relay.const(rng.uniform(0.5, 1.5, shape).astype("float32"))
    shift = relay.const(rng.uniform(-0.5, 0.5, shape).astype("float32"))
    return nn.relu(relay.add(relay.multiply(x, scale), shift))


def _var(shape: tuple[int, ...]) -> g.Expr:
    return relay.var("x", shape=shape, dtype="float32")


POOLS: dict[str, Callable[[], g.Expr]] = {
    "max NCHW16c 3x3/2 pad 1, bn+relu": lambda: _bn_relu(
        nn.max_pool2d(_var((1, 2, 9, 11, 16)), (3, 3), (2, 2), padding=(1, 1), layout="NCHW16c"), 32, 16
    ),
    "max NCHW8c 2x2/2 ceil_mode": lambda: nn.max_pool2d(
        _var((1, 3, 7, 7, 8)), (2, 2), (2, 2), layout="NCHW8c", ceil_mode=True
    ),
    "max NCHW8c 3x3/1 asymmetric pad": lambda: nn.max_pool2d(
        _var((2, 1, 5, 6, 8)), (3, 3), (1, 1), padding=(0, 1, 2, 1), layout="NCHW8c"
    ),
    "avg NCHW4c 3x3/1 pad 1 excluding pad": lambda: nn.avg_pool2d(
        _var((2, 2, 6, 5, 4)), (3, 3), (1, 1), padding=(1, 1), layout="NCHW4c"
    ),
    "avg NCHW16c 2x2/2 pad 1 counting pad": lambda: nn.avg_pool2d(
        _var((1, 1, 7, 6, 16)), (2, 2), (2, 2), padding=(1, 1), layout="NCHW16c", count_include_pad=True
    ),
    "avg NCHW8c 3x3/2 ceil_mode excluding pad": lambda: nn.avg_pool2d(
        _var((1, 2, 8, 9, 8)), (3, 3), (2, 2), padding=(1, 1), layout="NCHW8c", ceil_mode=True
    ),
    "max NCHW3c (odd block)": lambda: nn.max_pool2d(_var((1, 2, 6, 7, 3)), (2, 2), (2, 2), layout="NCHW3c"),
    "max NCHW 3x3/2 pad 1, bn+relu": lambda: _bn_relu(
        nn.max_pool2d(_var((1, 5, 13, 10)), (3, 3), (2, 2), padding=(1, 1)), 5, 0
    ),
    "max NCHW 3x3/1 pad 1 (width 16)": lambda: nn.max_pool2d(_var((1, 2, 5, 16)), (3, 3), padding=(1, 1)),
    "max NCHW 3x3/2 (width 16), bn+relu": lambda: _bn_relu(
        nn.max_pool2d(_var((1, 3, 9, 32)), (3, 3), (2, 2), padding=(0, 1)), 3, 0
    ),
    "avg NCHW 3x3/1 pad 1 (width 8), bn+relu": lambda: _bn_relu(
        nn.avg_pool2d(_var((1, 2, 6, 8)), (3, 3), (1, 1), padding=(1, 1)), 2, 0
    ),
    "avg NCHW 2x2/2": lambda: nn.avg_pool2d(_var((2, 3, 8, 8)), (2, 2), (2, 2)),
    "global avg NCHW8c": lambda: nn.global_avg_pool2d(_var((1, 4, 7, 7, 8)), layout="NCHW8c"),
    "global max NCHW": lambda: nn.global_max_pool2d(_var((1, 6, 5, 7))),
}

TRANSFORMS: dict[str, tuple[tuple[int, ...], str, str]] = {
    "NCHW -> NCHW1c": ((1, 3, 7, 16), "NCHW", "NCHW1c"),
    "NCHW -> NCHW3c": ((1, 3, 7, 9), "NCHW", "NCHW3c"),
    "NCHW -> NCHW8c": ((2, 16, 5, 7), "NCHW", "NCHW8c"),
    "NCHW -> NCHW16c": ((1, 32, 3, 5), "NCHW", "NCHW16c"),
    "NCHW8c -> NCHW16c": ((1, 4, 5, 3, 8), "NCHW8c", "NCHW16c"),
    "NCHW8c -> NCHW32c": ((1, 4, 3, 5, 8), "NCHW8c", "NCHW32c"),
    "NCHW16c -> NCHW8c": ((1, 2, 3, 5, 16), "NCHW16c", "NCHW8c"),
    "NCHW8c -> NCHW4c": ((1, 2, 3, 8, 8), "NCHW8c", "NCHW4c"),
    "NCHW8c -> NCHW12c": ((1, 3, 4, 4, 8), "NCHW8c", "NCHW12c"),
    "NCHW16c -> NCHW": ((1, 2, 5, 7, 16), "NCHW16c", "NCHW"),
    "NCHW1c -> NCHW": ((1, 3, 6, 6, 1), "NCHW1c", "NCHW"),
    "NCHW -> NHWC": ((1, 5, 3, 8), "NCHW", "NHWC"),
    "OIHW -> OIHW4i8o": ((16, 8, 3, 3), "OIHW", "OIHW4i8o"),
}


def assert_compiled_equals_numpy(expr: g.Expr, target: str) -> None:
    """Build ``expr`` (one fused group at opt_level 3) for ``target`` and compare its output with the
    interpreter's numpy references on random input."""
    fn = g.Function(g.free_vars(expr), expr)
    g.infer_types(fn)
    rng = np.random.default_rng(1)
    values = {p.name_hint: rng.uniform(-1, 1, p.checked_type.shape).astype("float32") for p in fn.params}
    expected = g.evaluate(fn, inputs=values)
    with PassContext(opt_level=3):
        lib = build(g.IRModule.from_expr(fn), target)
    m = lib["default"](None)
    m.set_input(**values)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", POOLS)
def test_compiled_pool_equals_numpy(case: str, target: str) -> None:
    assert_compiled_equals_numpy(POOLS[case](), target)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", TRANSFORMS)
def test_compiled_layout_transform_equals_numpy(case: str, target: str) -> None:
    shape, src, dst = TRANSFORMS[case]
    assert_compiled_equals_numpy(relay.layout_transform(_var(shape), src, dst), target)


def test_vector_lanes_follow_the_target() -> None:
    assert vector_lanes(Target("llvm -mcpu=znver3"), "float32") == 8
    assert vector_lanes(Target("llvm -mcpu=skylake-avx512"), "float32") == 16
    assert vector_lanes(Target("llvm -mcpu=x86-64"), "float32") == 4
    assert vector_lanes(Target("llvm -mcpu=znver3"), "int8") == 32


AVX2 = Target("llvm -mcpu=znver3")


def _lowered(expr: g.Expr) -> S.PrimFunc:
    fn = g.Function(g.free_vars(expr), expr)
    g.infer_types(fn)
    return lower_group(fn, AVX2, "group").func


def _loops(stmt: S.Stmt, kind: str) -> list[S.For]:
    found: list[S.For] = []
    post_order(stmt, lambda n: found.append(n) if isinstance(n, S.For) and n.kind == kind else None)
    return found


def _nodes(node: object, cls: type) -> list:
    found: list = []
    post_order(node, lambda n: found.append(n) if isinstance(n, cls) else None)
    return found


def _uses(e: E.Expr, var: E.Var) -> bool:
    return any(n is var for n in _nodes(e, E.Var))


def _enclosing_loops(stmt: S.Stmt, target: S.Stmt) -> list[S.For]:
    """The loops around ``target`` inside ``stmt``, outermost first."""
    path: list[S.For] = []

    def walk(node: object, stack: list[S.For]) -> bool:
        if node is target:
            path.extend(stack)
            return True
        children = [getattr(node, f) for f in getattr(node, "_fields", ())]
        inner = [*stack, node] if isinstance(node, S.For) else stack
        for child in children:
            for c in child if isinstance(child, tuple) else (child,):
                if isinstance(c, S.Stmt) and walk(c, inner):
                    return True
        return False

    walk(stmt, [])
    return path


def test_blocked_max_pool_reduces_each_vector_of_the_block_over_the_window() -> None:
    x = _var((1, 4, 112, 112, 16))
    scale, shift = relay.var("scale", shape=(1, 4, 1, 1, 16)), relay.var("shift", shape=(1, 4, 1, 1, 16))
    pool = nn.max_pool2d(x, (3, 3), (2, 2), padding=(1, 1), layout="NCHW16c")
    func = _lowered(nn.relu(relay.add(relay.multiply(pool, scale), shift)))
    vector = _loops(func.body, S.VECTORIZED)
    assert vector and all(int(v.extent.value) == 8 for v in vector)  # one AVX2 register of floats
    updates = [
        s
        for v in vector
        for s in _nodes(v.body, S.BufferStore)
        if s.buffer.name == "pool_max" and _nodes(s.value, E.Max)
    ]
    assert updates, "the window's max is not taken in a vectorized loop"
    around = _enclosing_loops(func.body, updates[0])
    assert [loop.loop_var.name for loop in around[-3:-1]] == ["rv0", "rv1"]
    assert around[-1].kind == S.VECTORIZED  # the channel block innermost, inside the window
    assert not [b for b in _nodes(func.body, S.Allocate) if int(np.prod(b.buffer.shape)) > 16]


@pytest.mark.parametrize(
    "shape, src, dst",
    [((1, 3, 224, 224), "NCHW", "NCHW1c"), ((1, 8, 112, 112, 8), "NCHW8c", "NCHW16c"),
     ((1, 4, 56, 56, 16), "NCHW16c", "NCHW32c"), ((1, 2, 56, 56, 32), "NCHW32c", "NCHW16c")],
)
def test_layout_transform_moves_whole_vectors(shape: tuple[int, ...], src: str, dst: str) -> None:
    func = _lowered(relay.layout_transform(_var(shape), src, dst))
    (vector,) = _loops(func.body, S.VECTORIZED)
    lane = vector.loop_var
    assert int(vector.extent.value) == 8
    accesses = [*_nodes(vector.body, E.BufferLoad), *_nodes(vector.body, S.BufferStore)]
    assert len(accesses) == 2
    for access in accesses:
        (index,) = access.indices
        rest = simplify(index - lane, {lane: (E.const(0), E.const(8))})
        assert not _uses(rest, lane), f"{access.buffer.name}[{index}] is not contiguous in {lane.name}"


def test_layout_transform_kernel_loads_and_stores_vectors_without_gathers() -> None:
    fn_expr = relay.layout_transform(_var((1, 8, 112, 112, 8)), "NCHW8c", "NCHW16c")
    fn = g.Function(g.free_vars(fn_expr), fn_expr)
    g.infer_types(fn)
    ll = Module(lower_group(fn, AVX2, "group").kernel).get_source("ll")
    assert "load <8 x float>" in ll and "store <8 x float>" in ll
    assert "gather" not in ll
