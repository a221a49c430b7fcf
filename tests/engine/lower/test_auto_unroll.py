"""The ``auto_unroll_max_step`` pragma (TVM's UnrollLoop under the annotated loop).

Under the annotated loop (itself included) a serial loop with a constant extent becomes
``unrolled`` when no loop inside it stayed a loop and ``extent * statements of its body`` is at
most the pragma's value; ``unroll_explicit`` and unknown pragmas are accepted and change nothing.
"""

import numpy as np
import pytest

from tunecli import autotvm, te
from tunecli.engine.build import build
from tunecli.engine.ir import stmt as S
from tunecli.engine.lower import lower
from tunecli.errors import ScheduleError

from .workloads import loops, matmul, rand


def kinds(func):
    """``{loop variable name: [kinds, outer to inner]}`` over the whole nest."""
    out: dict[str, list[str]] = {}
    for loop in loops(func):
        out.setdefault(loop.loop_var.name, []).append(loop.kind)
    return out


@autotvm.template("test_lower/auto_unroll_matmul")
def unroll_matmul(m, n, k):
    A, B, C = matmul(m, n, k)
    s = te.create_schedule(C.op)
    cfg = autotvm.get_config()
    cfg.define_knob("auto_unroll_max_step", [0, 512])
    cfg.define_knob("unroll_explicit", [0, 1])
    i, j = s[C].op.axis
    (r,) = s[C].op.reduce_axis
    io, ii = s[C].split(i, 4)
    s[C].reorder(io, r, ii, j)
    s[C].pragma(io, "auto_unroll_max_step", cfg["auto_unroll_max_step"].val)
    s[C].pragma(io, "unroll_explicit", cfg["unroll_explicit"].val)
    return s, [A, B, C]


def test_template_config_0_vs_512_lowers_differently_and_both_compute_matmul():
    task = autotvm.task.create("test_lower/auto_unroll_matmul", args=(16, 8, 8), target="llvm")
    space = task.config_space
    a, b = rand((16, 8)), rand((8, 8), seed=1)
    lowered = {}
    for index in range(len(space)):
        config = space.get(index)
        s, args = task.instantiate(config)
        key = (config["auto_unroll_max_step"].val, config["unroll_explicit"].val)
        lowered[key] = kinds(lower(s, args))
        c = np.zeros((16, 8), "float32")
        build(s, args)(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    assert lowered[(0, 0)] == lowered[(0, 1)] and lowered[(512, 0)] == lowered[(512, 1)]
    assert lowered[(0, 0)] == {"i.outer": [S.SERIAL], "i.inner": [S.SERIAL, S.SERIAL],
                               "j": [S.SERIAL, S.SERIAL], "k": [S.SERIAL]}
    # init nest: 4 x 8 = 32 stores; update nest: k (8) x 32 = 256; i.outer: 4 x (32 + 256) > 512
    assert lowered[(512, 0)] == {"i.outer": [S.SERIAL], "i.inner": [S.UNROLLED, S.UNROLLED],
                                 "j": [S.UNROLLED, S.UNROLLED], "k": [S.UNROLLED]}


def schedule(max_step, annotate=None):
    A, B, C = matmul(8, 8, 8)
    s = te.create_schedule(C.op)
    i, j = s[C].op.axis
    (r,) = s[C].op.reduce_axis
    jo, ji = s[C].split(j, 4)
    s[C].reorder(i, jo, r, ji)
    if annotate:
        annotate(s[C], i, jo, r, ji)
    s[C].pragma(jo, "auto_unroll_max_step", max_step)
    return s, [A, B, C]


@pytest.mark.parametrize("max_step, expected", [
    (0, {"i": [S.SERIAL], "j.outer": [S.SERIAL], "k": [S.SERIAL], "j.inner": [S.SERIAL, S.SERIAL]}),
    # j.inner: 4 stores; k: 8 x 4 = 32; j.outer: 2 x (4 + 32) = 72
    (4, {"i": [S.SERIAL], "j.outer": [S.SERIAL], "k": [S.SERIAL], "j.inner": [S.UNROLLED, S.UNROLLED]}),
    (32, {"i": [S.SERIAL], "j.outer": [S.SERIAL], "k": [S.UNROLLED], "j.inner": [S.UNROLLED, S.UNROLLED]}),
    (72, {"i": [S.SERIAL], "j.outer": [S.UNROLLED], "k": [S.UNROLLED],
          "j.inner": [S.UNROLLED, S.UNROLLED]}),
])
def test_step_budget_counts_statements_of_the_unrolled_copies(max_step, expected):
    s, args = schedule(max_step)
    assert kinds(lower(s, args)) == expected  # loops outside the annotated one (i) are untouched


def test_a_loop_that_stays_a_loop_stops_unrolling_around_it():
    s, args = schedule(10_000, lambda st, i, jo, r, ji: st.vectorize(ji))
    assert kinds(lower(s, args)) == {"i": [S.SERIAL], "j.outer": [S.SERIAL], "k": [S.SERIAL],
                                     "j.inner": [S.VECTORIZED, S.VECTORIZED]}


def test_unroll_and_auto_unroll_compute_the_same_result():
    a, b = rand((8, 8)), rand((8, 8), seed=1)
    for step in (0, 4, 32, 72, 10_000):
        s, args = schedule(step, lambda st, i, jo, r, ji: st.unroll(r))
        c = np.zeros((8, 8), "float32")
        build(s, args)(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_unknown_pragmas_are_accepted_and_ignored():
    s, args = schedule(0)
    base = str(lower(s, args))
    st = s[args[2]]
    st.pragma(st.leaf_iter_vars[0], "debug_skip_region")
    st.pragma(st.leaf_iter_vars[1], "unroll_explicit", 1)
    st.pragma(st.leaf_iter_vars[1], "import_llvm", "some text")
    assert str(lower(s, args)) == base


def test_pragma_value_must_be_an_integer():
    s, args = schedule(0)
    st = s[args[2]]
    with pytest.raises(ScheduleError, match="auto_unroll_max_step .* constant integer"):
        st.pragma(st.leaf_iter_vars[0], "auto_unroll_max_step", "many")


def test_thread_bound_loops_are_never_unrolled():
    """In TVM a bound axis is not a loop at all, so UnrollLoop cannot unroll it."""
    s, args = schedule(10_000, lambda st, i, jo, r, ji: st.bind(ji, te.thread_axis("threadIdx.x")))
    assert kinds(lower(s, args)) == {"i": [S.SERIAL], "j.outer": [S.SERIAL], "k": [S.SERIAL],
                                     "j.inner": [S.SERIAL, S.SERIAL]}
