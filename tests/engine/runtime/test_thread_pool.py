"""The thread pool of parallel loops: chunks cover a loop once, the caller never waits for a pool
thread that has not started, concurrent callers and forked children still finish."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tunecli.engine.build import build
from tunecli.engine.ir import Buffer, BufferLoad, BufferStore, For, PrimFunc, Var
from tunecli.engine.runtime import get_num_threads, set_num_threads
from tunecli.engine.runtime.thread_pool import (
    CHUNKS_PER_THREAD,
    parallel_for_address,
    pool_ir,
    pool_setting,
    pool_threads,
)
from tunecli.errors import CodegenError

CHUNK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
PARALLEL_FOR = ctypes.CFUNCTYPE(None, CHUNK, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32)


def run_loop(extent: int, nthreads: int, on_chunk=None) -> list[tuple[int, int, int]]:
    """Run a loop of ``extent`` iterations on the pool; the (begin, end, thread) of each chunk."""
    chunks = []

    def chunk(_closure, begin, end):
        chunks.append((begin, end, threading.get_ident()))
        if on_chunk is not None:
            on_chunk(begin, end)

    PARALLEL_FOR(parallel_for_address())(CHUNK(chunk), None, extent, nthreads)
    return chunks


@settings(max_examples=60, deadline=None)
@given(extent=st.integers(0, 300), nthreads=st.integers(1, 6))
def test_chunks_cover_every_iteration_exactly_once(extent, nthreads):
    chunks = run_loop(extent, nthreads)
    covered = sorted(i for begin, end, _ in chunks for i in range(begin, end))
    assert covered == list(range(extent))
    assert all(begin < end for begin, end, _ in chunks)  # no empty chunk, even when extent < nthreads
    if extent > 1 and nthreads > 1:
        assert len(chunks) == min(extent, nthreads * CHUNKS_PER_THREAD)
    else:
        assert len(chunks) == (1 if extent else 0)  # one call on the caller's thread


def test_chunk_sizes_differ_by_at_most_one():
    chunks = run_loop(101, 3)
    sizes = sorted(end - begin for begin, end, _ in chunks)
    assert len(sizes) == 3 * CHUNKS_PER_THREAD and sizes[-1] - sizes[0] <= 1


def test_a_loop_started_while_another_is_in_progress_runs_on_its_caller():
    release, started = threading.Event(), threading.Event()

    def hold(_begin, _end):
        started.set()
        release.wait(30)

    first = threading.Thread(target=run_loop, args=(8, 2, hold))
    first.start()
    try:
        assert started.wait(30)
        chunks = run_loop(50, 2)  # the first loop still holds the pool
        assert [(b, e) for b, e, _ in chunks] == [(0, 50)]
        assert chunks[0][2] == threading.get_ident()
    finally:
        release.set()
        first.join(30)
    assert not first.is_alive()


def test_pool_threads_are_created_once_up_to_the_thread_count():
    run_loop(64, 3)
    before = pool_threads()
    assert before >= 2
    run_loop(64, 3)
    run_loop(64, 2)
    assert pool_threads() == before


def test_settings_are_writable_and_unknown_ones_are_refused():
    spin = pool_setting("spin_count")
    old = spin.value
    try:
        spin.value = 0  # pool threads sleep at once between loops: loops still complete
        for _ in range(20):
            assert sorted(i for b, e, _ in run_loop(40, 2) for i in range(b, e)) == list(range(40))
    finally:
        spin.value = old
    with pytest.raises(CodegenError, match="no setting 'stack_size'"):
        pool_setting("stack_size")


FORK_SCRIPT = r'''
import ctypes
import os
import numpy as np
from tunecli.engine.build import build
from tunecli.engine.runtime import set_num_threads
from tunecli.engine.runtime.thread_pool import CHUNKS_PER_THREAD, parallel_for_address, pool_threads
from tunecli.engine.ir import Buffer, BufferLoad, BufferStore, For, PrimFunc, Var, const

CHUNK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
PARALLEL_FOR = ctypes.CFUNCTYPE(None, CHUNK, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32)

o = Buffer("o", (4096,), "float32")
i = Var("i")
body = BufferStore(o, BufferLoad(o, [i]) + const(1.0), [i])
mod = build(PrimFunc("par_fork", [o], For(i, 0, 4096, "parallel", body)))
set_num_threads(2)
r = np.zeros(4096, "float32")
mod(r)
assert pool_threads() == 1
pid = os.fork()
if pid == 0:  # the child has no pool thread: its caller runs every chunk
    for _ in range(50):
        mod(r)
    # chunks of 10: its own range front to back, then the other thread's from the back
    k = CHUNKS_PER_THREAD
    begins = []
    chunk = CHUNK(lambda _closure, begin, end: begins.append(begin))
    PARALLEL_FOR(parallel_for_address())(chunk, None, 2 * k * 10, 2)
    expected = [10 * c for c in range(k)] + [10 * c for c in reversed(range(k, 2 * k))]
    os._exit(0 if (r == 51).all() and begins == expected else 3)
_, status = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(status))
'''


def test_a_forked_child_runs_parallel_kernels_without_pool_threads_its_own_chunks_first():
    proc = subprocess.run([sys.executable, "-c", FORK_SCRIPT], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TUNECLI_NUM_THREADS="2"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["child", "0"]


def test_pool_ir_names_the_unsupported_machine():
    assert "syscall" in pool_ir("x86_64") and "pause" in pool_ir("x86_64")
    assert "yield" in pool_ir("aarch64")
    with pytest.raises(CodegenError, match="sparc64"):
        pool_ir("sparc64")


def test_kernels_called_from_several_threads_at_once_and_often_give_the_serial_result():
    n, calls = 37, 1500
    o, i = Buffer("o", (n,), "int32"), Var("i")
    mod = build(PrimFunc("often", [o], For(i, 0, n, "parallel", BufferStore(o, BufferLoad(o, [i]) + 1, [i]))))
    outs = [np.zeros(n, "int32") for _ in range(3)]

    def call_often(out):
        for _ in range(calls):
            mod(out)

    spin, before = pool_setting("spin_count"), get_num_threads()
    old_spin = spin.value
    set_num_threads(3)
    try:
        for value in (0, old_spin):  # pool threads sleeping between loops, and spinning
            spin.value = value
            workers = [threading.Thread(target=call_often, args=(out,)) for out in outs]
            for w in workers:
                w.start()
            for w in workers:
                w.join(60)
    finally:
        spin.value = old_spin
        set_num_threads(before)
    for out in outs:
        np.testing.assert_array_equal(out, np.full(n, 2 * calls, "int32"))
