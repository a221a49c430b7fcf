"""cache_write keeps the user's axis handles: ``C.op.axis`` still names the axes of ``s[C]``.

In TVM the op that replaces C (the copy out of the cache) reuses C's axis IterVars, so the
getting-started tutorial can write ``CC = s.cache_write(C, "global")`` followed by
``s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)``; the reduction axes move to the cache stage.
"""

import numpy as np

from tunecli import te
from tunecli.engine.build import build


def test_old_axis_handles_name_the_axes_of_the_copy_stage():
    A = te.placeholder((8, 8), name="A")
    C = te.compute((8, 8), lambda i, j: A[i, j] * 2, name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    assert s[C].op.axis == C.op.axis and s[C].leaf_iter_vars == C.op.axis
    assert CC.op.axis[0] is not C.op.axis[0]  # the cache stage has axes of its own
    xo, xi = s[C].split(C.op.axis[0], 2)
    s[CC].compute_at(s[C], xo)
    mod = build(s, [A, C])
    a = np.arange(64, dtype="float32").reshape(8, 8)
    c = np.zeros_like(a)
    mod(a, c)
    np.testing.assert_array_equal(c, a * 2)


def test_reduction_axes_of_the_old_op_belong_to_the_cache_stage():
    A = te.placeholder((8, 4), name="A")
    B = te.placeholder((4, 8), name="B")
    k = te.reduce_axis((0, 4), name="k")
    C = te.compute((8, 8), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)  # the tutorial's code
    s[CC].compute_at(s[C], yo)
    assert s[CC].op.reduce_axis == C.op.reduce_axis and not s[C].op.reduce_axis
    ko, ki = s[CC].split(C.op.reduce_axis[0], 2)
    xc, yc = s[CC].op.axis
    s[CC].reorder(ko, xc, ki, yc)
    mod = build(s, [A, B, C])
    a = np.random.default_rng(0).random((8, 4), dtype=np.float32)
    b = np.random.default_rng(1).random((4, 8), dtype=np.float32)
    c = np.zeros((8, 8), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
