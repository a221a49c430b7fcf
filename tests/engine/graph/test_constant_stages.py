"""Stages computed from constants alone are found, and a group rebuilt to read their values instead."""

from __future__ import annotations

import numpy as np

from tunecli.engine import te
from tunecli.engine.build import build
from tunecli.engine.graph.constant_stages import (
    constant_frontier,
    identity_stage,
    placeholders_read,
    replace_stages,
)
from tunecli.engine.schedule import create_schedule


def _group() -> tuple:
    x = te.placeholder((4, 8), name="x")
    w = te.placeholder((8, 4), name="w")
    wt = te.compute((4, 8), lambda i, j: w[j, i] * 2.0, name="wt", tag="injective,layout_transform")
    k = te.reduce_axis((0, 8), name="k")
    y = te.compute((4, 4), lambda i, j: te.sum(x[i, k] * wt[j, k], axis=k), name="y")
    out = te.compute((4, 4), lambda i, j: y[i, j] + 1.0, name="out", tag="elemwise")
    return x, w, wt, out


def test_the_frontier_is_the_constant_stage_a_non_constant_one_reads() -> None:
    x, w, wt, out = _group()
    assert constant_frontier([out], [w]) == [wt]
    assert constant_frontier([out], [x]) == []
    assert placeholders_read(wt) == [w]


def test_the_rebuilt_group_reads_the_precomputed_value() -> None:
    x, w, wt, out = _group()
    rng = np.random.default_rng(0)
    xv, wv = rng.uniform(size=(4, 8)).astype("float32"), rng.uniform(size=(8, 4)).astype("float32")
    packed = np.empty((4, 8), "float32")
    build(create_schedule([wt.op]), [w, wt], "llvm")(wv, packed)
    ph = te.placeholder((4, 8), name="wt_packed")
    ident = identity_stage(ph, wt)
    new = replace_stages([out], {id(wt.op): ident})
    new_out = new[id(out.op)]
    s = create_schedule([new_out.op])
    s[ident].compute_inline()
    result = np.empty((4, 4), "float32")
    build(s, [x, ph, new_out], "llvm")(xv, packed, result)
    np.testing.assert_allclose(result, xv @ (2 * wv) + 1, rtol=1e-5)
    assert {id(t) for t in placeholders_read(new_out)} == {id(x), id(ph)}
