"""``prepare``: the IR → IR passes in the order codegen runs them, and code from what they give.

The passes themselves are specified in ``tests/engine/transform``.
"""

from __future__ import annotations

import numpy as np

from tests.engine.codegen.codegen_kernels import loop, nodes
from tunecli.engine.build import build
from tunecli.engine.codegen import prepare
from tunecli.engine.ir import (
    Allocate,
    Buffer,
    BufferLoad,
    BufferStore,
    For,
    PrimFunc,
    Ramp,
    SeqStmt,
    const,
)


def test_odd_vector_widths_compute_every_element():
    o = Buffer("o", (49,), "float32")
    body = loop("p", 49, "vectorized", lambda p: BufferStore(o, const(2.0), [p]))
    mod = build(PrimFunc("odd", [o], body))
    r = np.zeros(49, "float32")
    mod(r)
    assert (r == 2).all()


def test_prepare_runs_the_passes_in_order():
    acc = Buffer("acc", (4, 16), "float32", scope="local")
    o = Buffer("o", (4, 16), "float32")
    body = Allocate(acc, SeqStmt([
        loop("i", 4, "unrolled", lambda i: loop("j", 16, "vectorized",
                                                lambda j: BufferStore(acc, 1.0, [i, j]))),
        loop("i2", 4, "unrolled", lambda i: loop("j2", 16, "vectorized", lambda j: BufferStore(
            o, BufferLoad(acc, [i, j]), [i, j]))),
    ]))
    prepared = prepare(PrimFunc("p", [o], body)).body
    assert not nodes(prepared, For)
    stores = nodes(prepared, BufferStore)
    assert len(stores) == 8 and all(isinstance(s.indices[0], Ramp) for s in stores)


