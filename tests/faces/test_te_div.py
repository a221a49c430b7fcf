"""``te.div``: C's division (TVM's ``te.div``): floats divide exactly, integers round towards zero."""

from __future__ import annotations

import numpy as np

from tunecli import build, te


def test_div_of_floats_and_of_integers() -> None:
    x = te.placeholder((6,), name="x", dtype="float32")
    n = te.placeholder((6,), name="n", dtype="int32")
    fq = te.compute((6,), lambda i: te.div(x[i], 4), name="fq")
    iq = te.compute((6,), lambda i: te.div(n[i], 4), name="iq")
    s = te.create_schedule([fq.op, iq.op])
    mod = build(s, [x, n, fq, iq], "llvm")
    xs = np.array([-7, -4, -1, 1, 6, 9], "float32")
    ns = xs.astype("int32")
    out_f, out_i = np.zeros(6, "float32"), np.zeros(6, "int32")
    mod(xs, ns, out_f, out_i)
    np.testing.assert_allclose(out_f, xs / 4)
    assert out_i.tolist() == [-1, -1, 0, 0, 1, 2]
