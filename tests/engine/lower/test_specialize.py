"""specialize: a schedule over symbolic sizes copied with the sizes given (the original untouched);
sizes_of: sizes read off array shapes; SizedKernel: one kernel per distinct set of sizes."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from tunecli.engine import te
from tunecli.engine.build import build, lower
from tunecli.engine.ir import expr as E
from tunecli.engine.lower.specialize import SizedKernel, size_vars, sizes_of, specialize
from tunecli.engine.schedule import create_schedule
from tunecli.errors import ArgumentError


def scaled_rows():
    n, m = te.var("n"), te.var("m")
    a = te.placeholder((n, m), name="A")
    b = te.compute((n, m), lambda i, j: a[i, j] * E.cast("float32", n), name="B")
    s = create_schedule(b.op)
    s[b].split(b.op.axis[1], factor=8)
    return n, m, a, b, s


def test_a_deep_copy_of_an_expression_substitutes_what_the_memo_maps():
    x, y = E.Var("x"), E.Var("y")
    e = x * 3 + y
    assert str(copy.deepcopy(e, {id(x): E.IntImm(5)})) == "((5 * 3) + y)"
    assert str(e) == "((x * 3) + y)"  # the original keeps its variable
    untouched = y * 2
    assert copy.deepcopy(untouched) is untouched  # nodes are immutable: nothing to copy


def test_specialize_gives_constant_shapes_and_leaves_the_original_symbolic():
    n, m, a, b, s = scaled_rows()
    assert size_vars([a, b]) == [n, m]
    s2, (a2, b2) = specialize(s, [a, b], {n: 6, m: 20})
    assert a2.shape == (6, 20) and b2.shape == (6, 20)
    assert all(isinstance(iv.dom.extent, E.IntImm) for iv in b2.op.axis)
    assert "float32[6, 20]" in str(lower(s2, [a2, b2]))
    assert "float32[n, m]" in str(lower(s, [a, b]))
    assert size_vars([a2, b2]) == []


def test_sizes_are_read_off_the_arrays_and_must_agree():
    n, m, a, b, _ = scaled_rows()
    assert sizes_of([a, b], [(2, 3), (2, 3)], "k") == {n: 2, m: 3}
    with pytest.raises(ArgumentError, match="size m is 3 by one argument and 4 by B"):
        sizes_of([a, b], [(2, 3), (2, 4)], "k")
    with pytest.raises(ArgumentError, match="argument A has 2 dimensions, the array 1"):
        sizes_of([a, b], [(2,), (2, 3)], "k")


def test_a_sized_kernel_compiles_once_per_distinct_sizes():
    n, m, a, b, s = scaled_rows()
    kernel = build(s, [a, b], "llvm", name="scaled")
    assert isinstance(kernel, SizedKernel)
    for shape in ((3, 17), (5, 8), (3, 17)):
        x = np.random.default_rng(0).standard_normal(shape).astype("float32")
        out = np.empty(shape, "float32")
        kernel(x, out)
        np.testing.assert_allclose(out, x * shape[0], rtol=1e-6)
    assert len(kernel._kernels) == 2
