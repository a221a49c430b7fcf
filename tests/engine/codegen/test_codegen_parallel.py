"""Parallel loops: outlined into a chunk function that the thread pool (or, alone, the kernel) runs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tunecli.engine.build import build
from tunecli.engine.ir import Buffer, BufferLoad, BufferStore, For, PrimFunc, Var
from tunecli.engine.runtime import get_num_threads, set_num_threads

N = 400


@pytest.fixture(scope="module")
def ranged():
    """``for i in parallel [lo, lo + n): o[i] = o[i] * 3 + i`` with lo and n read from a buffer."""
    bounds, o, i = Buffer("bounds", (2,), "int32"), Buffer("o", (N,), "int32"), Var("i")
    loop = For(i, BufferLoad(bounds, [0]), BufferLoad(bounds, [1]), "parallel",
               BufferStore(o, BufferLoad(o, [i]) * 3 + i, [i]))
    return build(PrimFunc("ranged", [bounds, o], loop))


@pytest.fixture(scope="module")
def restore_threads():
    before = get_num_threads()
    yield
    set_num_threads(before)


@settings(max_examples=80, deadline=None)
@given(lo=st.integers(0, N), n=st.integers(0, N), nthreads=st.integers(1, 6))
def test_any_range_and_thread_count_gives_the_serial_result(ranged, restore_threads, lo, n, nthreads):
    n = min(n, N - lo)
    set_num_threads(nthreads)
    out = np.arange(N, dtype="int32")
    ranged(np.array([lo, n], "int32"), out)
    expected = np.arange(N, dtype="int32")
    expected[lo:lo + n] = expected[lo:lo + n] * 3 + np.arange(lo, lo + n)
    np.testing.assert_array_equal(out, expected)


def test_the_object_needs_no_threading_library(ranged):
    ll = ranged.get_source("ll")
    assert "GOMP" not in ll and "omp_get" not in ll and "pthread" not in ll
    # the pool's entry and the thread count are globals the loader writes
    assert "@ranged__parallel_for = " in ll and "@ranged__num_threads = " in ll
    # one copy of the loop: the kernel's serial path calls the chunk function too
    assert ll.count("define internal void @ranged_par0(") == 1 and "noinline" in ll
