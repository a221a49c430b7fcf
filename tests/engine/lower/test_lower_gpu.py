"""Lowering for a GPU target: TVM's meaning of thread bindings and storage scopes.

A ``shared`` stage computed inside thread loops covers what all threads of the block read (the
thread loops are relaxed, as TVM's InferBound does) and is fetched by them together; barriers
separate the threads writing shared memory from those reading it (TVM's storage sync); kernels
beyond the target's limits are instantiation errors.  Each kernel runs in the grid simulator
(blocks of threads in lock-step between barriers, shared-memory races detected) and is compared
with numpy; the same schedule lowered for the CPU is unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.engine.gpu_kernels import reversed_copy, tiled_matmul
from tunecli import te
from tunecli.engine.build import build
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.visitor import Mutator, post_order
from tunecli.engine.lower import lower
from tunecli.engine.lower.storage_sync import is_barrier
from tunecli.engine.lower.verify_gpu import GPULimits, check_gpu_code, verify_gpu_code
from tunecli.engine.target import Target
from tunecli.errors import InstantiationError, LoweringError, TargetError

from .gpu_simulator import run_grid
from .ir_interpreter import InterpError


def matmul_schedule(n: int = 32, tile: int = 8):
    """:func:`tests.engine.gpu_kernels.tiled_matmul` with both operand tiles in shared memory."""
    return tiled_matmul(n, tile, shared=True)


def uneven_fetch_schedule():
    """C = 2 * A over 49 elements in one block of 2 x 7 x 4 threads, A fetched into shared
    memory by splits that do not divide (25 = 7 * 4 - 3 per threadIdx.z)."""
    A = te.placeholder((49,), name="A")
    C = te.compute((49,), lambda i: A[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    AS = s.cache_read(A, "shared", [C])
    loops = []
    for stage in (s[C], s[AS]):
        (axis,) = stage.op.axis
        tz, rest = stage.split(axis, nparts=2)
        ty, tx = stage.split(rest, nparts=7)
        loops.append((stage, tz, ty, tx))
    for stage, tz, ty, tx in loops:
        for axis, tag in ((tz, "threadIdx.z"), (ty, "threadIdx.y"), (tx, "threadIdx.x")):
            stage.bind(axis, te.thread_axis(tag))
    s[AS].compute_at(s[C], loops[0][1])
    return s, [A, C]


def barriers(stmt: S.Stmt) -> int:
    found = []
    post_order(stmt, lambda n: found.append(n) if is_barrier(n) else None)
    return len(found)


def shared_sizes(func: S.PrimFunc) -> dict[str, int]:
    found = {}
    post_order(func.body, lambda n: found.__setitem__(n.buffer.name, n.buffer.size)
               if isinstance(n, S.Allocate) and n.buffer.scope == "shared" else None)
    return found


def loop_named(func: S.PrimFunc, name: str) -> S.For:
    found = [n for n in _loops(func.body) if n.loop_var.name == name]
    assert len(found) == 1, f"one loop {name} expected"
    return found[0]


class _DropBarriers(Mutator):
    def visit_Evaluate(self, s: S.Evaluate) -> S.Stmt:
        return S.SeqStmt([]) if is_barrier(s) else s


def matmul_arrays(n: int = 32, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a, b = (rng.uniform(-1, 1, (n, n)).astype("float32") for _ in range(2))
    return a, b, np.full((n, n), np.nan, "float32")


def test_a_shared_stage_covers_the_tile_of_the_whole_block():
    s, args = matmul_schedule()
    gpu = lower(s, args, "matmul", target="cuda")
    assert shared_sizes(gpu) == {"A.shared": 64, "B.shared": 64}  # tile x k-step, for all threads
    s, args = matmul_schedule()
    cpu = lower(s, args, "matmul", target="llvm")
    assert shared_sizes(cpu) == {"A.shared": 8, "B.shared": 8}  # one thread's row / column
    assert barriers(cpu.body) == 0


def test_barriers_go_where_tvm_puts_them():
    s, args = matmul_schedule()
    func = lower(s, args, "matmul", target="cuda")
    assert barriers(func.body) == 2
    body = loop_named(func, "k.outer").body
    # for k.outer { sync; fetch A; fetch B; sync; for k.inner { ... } }: the first barrier
    # protects the tiles still read in the previous step, the second the fetched ones
    while isinstance(body, S.Allocate):
        body = body.body
    first = body.stmts[0]
    assert is_barrier(first)
    inner = [n for n in body.stmts if isinstance(n, S.Allocate)][0].body
    assert [is_barrier(x) for x in inner.stmts][-2:] == [True, False]
    assert isinstance(inner.stmts[-1], S.For) and inner.stmts[-1].loop_var.name == "k.inner"
    assert barriers(inner.stmts[-1]) == 0, "no barrier per iteration of k.inner"


@pytest.mark.parametrize("reverse", [False, True])
def test_the_simulated_grid_computes_the_product(reverse):
    s, args = matmul_schedule()
    func = lower(s, args, "matmul", target="cuda")
    a, b, c = matmul_arrays()
    shape = run_grid(func, a, b, c, reverse=reverse)
    assert shape["grid"] == (4, 4, 1) and shape["block"] == (8, 8, 1)
    assert shape["barriers"] == 8  # two per k step
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_without_its_barriers_the_kernel_races():
    s, args = matmul_schedule()
    func = lower(s, args, "matmul", target="cuda")
    unsynced = S.PrimFunc(func.name, func.params, _DropBarriers().visit(func.body))
    assert barriers(unsynced.body) == 0
    with pytest.raises(InterpError, match="race on shared"):
        run_grid(unsynced, *matmul_arrays())


def test_an_uneven_cooperative_fetch_is_guarded_so_no_element_is_fetched_twice():
    s, args = uneven_fetch_schedule()
    func = lower(s, args, "twice", target="cuda")
    assert shared_sizes(func) == {"A.shared": 49}
    guards = []
    post_order(func.body, lambda n: guards.append(str(n.condition)) if isinstance(n, S.IfThenElse) else None)
    assert any("< 25" in g for g in guards), guards  # the threads of one threadIdx.z: 25 elements
    a = np.arange(49, dtype="float32")
    c = np.full(49, np.nan, "float32")
    run_grid(func, a, c, reverse=True)
    np.testing.assert_array_equal(c, 2 * a)
    assert barriers(func.body) == 1


def test_a_fetch_whose_thread_loop_has_extent_one_is_done_by_one_row_of_threads():
    """A cooperative fetch small enough that its ``threadIdx.z`` loop has extent 1 keeps that loop
    (a guard ``threadIdx.z < 1``) instead of dropping it: the other rows of the block, launched
    for the output, must not fetch the same elements again (a race on shared memory)."""
    A, B = te.placeholder((4, 8), name="A"), te.placeholder((8,), name="B")
    C = te.compute((4, 8), lambda i, j: A[i, j] + B[j], name="C")
    s = te.create_schedule(C.op)
    BS = s.cache_read(B, "shared", [C])
    s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.z"))
    s[C].bind(C.op.axis[1], te.thread_axis("threadIdx.x"))
    s[BS].compute_at(s[C], C.op.axis[0])
    rest, tx = s[BS].split(s[BS].op.axis[0], factor=8)
    _, tz = s[BS].split(rest, factor=4)  # extent 1: only threadIdx.z == 0 fetches
    s[BS].bind(tz, te.thread_axis("threadIdx.z"))
    s[BS].bind(tx, te.thread_axis("threadIdx.x"))
    func = lower(s, [A, B, C], "row", target="cuda")
    a, b = np.arange(32, dtype="float32").reshape(4, 8), np.arange(8, dtype="float32")
    c = np.full((4, 8), np.nan, "float32")
    run_grid(func, a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_vthread_and_local_stages_stay_per_thread():
    """A local accumulator inside vthread loops: one per (thread, virtual thread), interleaved."""
    n = 16
    A = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * A[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    i, j = s[C].op.axis
    bi, vi, ti = (lambda o, r: (o, *s[C].split(r, nparts=2)))(*s[C].split(i, nparts=2))
    vj, tj = s[C].split(j, nparts=2)
    s[C].reorder(bi, vi, vj, ti, tj)
    for axis, tag in ((bi, "blockIdx.x"), (vi, "vthread"), (vj, "vthread"), (ti, "threadIdx.y"),
                      (tj, "threadIdx.x")):
        s[C].bind(axis, te.thread_axis(tag))
    s[CL].compute_at(s[C], tj)
    func = lower(s, [A, C], "vt", target="cuda")
    assert not [x for x in _loops(func.body) if x.thread_tag == "vthread"]
    assert local_sizes(func) == {"C.local": 4} and func.attrs["vthreads"] == 4
    a = np.random.default_rng(1).uniform(size=(n, n)).astype("float32")
    c = np.full((n, n), np.nan, "float32")
    shape = run_grid(func, a, c)
    assert shape["grid"] == (2, 1, 1) and shape["block"] == (8, 4, 1)
    np.testing.assert_allclose(c, a @ a, rtol=1e-5)


def vthread_matmul(n: int = 32):
    """C = A @ B, a block per 16 x 8 tile: 2 virtual threads of 8 x 8 threads, A's tile in shared
    memory for all of them."""
    A, B = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    i, j = s[C].op.axis
    bi, rest = s[C].split(i, factor=16)
    vi, ti = s[C].split(rest, nparts=2)
    bj, tj = s[C].split(j, factor=8)
    s[C].reorder(bi, bj, vi, ti, tj)
    for axis, tag in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (vi, "vthread"), (ti, "threadIdx.y"),
                      (tj, "threadIdx.x")):
        s[C].bind(axis, te.thread_axis(tag))
    s[CL].compute_at(s[C], tj)
    ko, _ = s[CL].split(s[CL].op.reduce_axis[0], factor=8)
    AS = s.cache_read(A, "shared", [CL])
    s[AS].compute_at(s[CL], ko)
    ty, rest = s[AS].split(s[AS].fuse(*s[AS].op.axis), nparts=8)
    tx, _ = s[AS].split(rest, nparts=8)
    s[AS].bind(ty, te.thread_axis("threadIdx.y"))
    s[AS].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, B, C]


def local_sizes(func: S.PrimFunc) -> dict[str, int]:
    found = {}
    post_order(func.body, lambda n: found.__setitem__(n.buffer.name, n.buffer.size)
               if isinstance(n, S.Allocate) and n.buffer.scope == "local" else None)
    return found


def stores_to(func: S.PrimFunc, name: str) -> int:
    found = []
    post_order(func.body, lambda n: found.append(n) if isinstance(n, S.BufferStore) and n.buffer.name == name
               else None)
    return len(found)


def test_virtual_threads_share_the_fetch_and_interleave_their_work():
    """TVM's InjectVirtualThread: the shared tile is fetched once for both virtual threads, the
    accumulator has room for both, and each update appears once per virtual thread."""
    s, args = vthread_matmul()
    func = lower(s, args, "vmm", target="cuda")
    assert not [x for x in _loops(func.body) if x.thread_tag == "vthread"]
    assert shared_sizes(func) == {"A.shared": 128}  # 16 rows x 8 of k: both virtual threads
    assert local_sizes(func) == {"C.local": 2}
    assert stores_to(func, "A.shared") == 1 and stores_to(func, "C.local") == 4  # init + update, x2
    assert stores_to(func, "C") == 2 and barriers(func.body) == 2
    a, b, c = matmul_arrays()
    shape = run_grid(func, a, b, c, reverse=True)
    assert shape["block"] == (8, 8, 1) and shape["grid"] == (4, 2, 1)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    assert verify_gpu_code(func, GPULimits(max_vthread=1)) == ["2 virtual threads, more than 1"]


def vector_add(threads_x: int, threads_y: int = 1):
    A = te.placeholder((threads_x * threads_y,), name="A")
    C = te.compute(A.shape, lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    ty, tx = s[C].split(C.op.axis[0], factor=threads_x)
    s[C].bind(ty, te.thread_axis("threadIdx.y"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    return s, [A, C]


def shared_copy(n: int, threads: int = 64, fetch_threads: int = 64):
    """C = A reversed: ``threads`` threads, A fetched into shared memory by ``fetch_threads``."""
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[n - 1 - i], name="C")
    s = te.create_schedule(C.op)
    AS = s.cache_read(A, "shared", [C])
    tx, _ = s[C].split(C.op.axis[0], nparts=threads)
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[AS].compute_at(s[C], tx)
    atx, _ = s[AS].split(s[AS].op.axis[0], nparts=fetch_threads)
    s[AS].bind(atx, te.thread_axis("threadIdx.x"))
    return s, [A, C]


def test_gpu_verification_reports_each_limit_a_kernel_breaks():
    limits = GPULimits()
    func = lower(*vector_add(512, 4), "wide", target="cuda")
    assert verify_gpu_code(func, limits) == ["2048 threads per block, more than 1024"]
    assert verify_gpu_code(lower(*vector_add(2048), "x", target="cuda"), limits) == [
        "threadIdx.x has 2048 threads, more than 1024", "2048 threads per block, more than 1024"]
    assert verify_gpu_code(lower(*vector_add(128, 8), "ok", target="cuda"), limits) == []
    big = lower(*shared_copy(16384), "big", target="cuda")
    assert verify_gpu_code(big, limits) == ["65536 bytes of shared memory per block, more than 49152"]
    s, args = matmul_schedule(64, 32)  # 1024 threads, each with a local accumulator: fits
    assert verify_gpu_code(lower(s, args, "mm", target="cuda"), limits) == []
    assert verify_gpu_code(lower(s, args, "mm", target="cuda"), GPULimits(registers_per_block=512)) == [
        "local arrays of 4 bytes in each of 1024 threads need 1024 registers per block, more than 512"]


def test_the_limits_are_the_targets_options():
    assert GPULimits.from_target(Target("cuda")) == GPULimits()
    t = Target("cuda -arch=sm_90 -max_threads_per_block=4096 -max_shared_memory_per_block=232448")
    assert GPULimits.from_target(t).max_threads_per_block == 4096
    assert GPULimits.from_target(Target("cuda -max_num_threads=256")).max_threads_per_block == 256
    tvm_written = Target("cuda -keys=cuda,gpu -arch=sm_80 -max_num_threads=1024 -thread_warp_size=32")
    assert tvm_written.keys == ["cuda", "gpu"] and GPULimits.from_target(tvm_written) == GPULimits()
    check_gpu_code(lower(*shared_copy(16384), "big", target="cuda"), t)
    with pytest.raises(InstantiationError, match=r"kernel big does not fit target 'cuda -max_num_threads=256'"
                       r": 512 threads per block, more than 256$"):
        check_gpu_code(lower(*vector_add(128, 4), "big", target="cuda"), Target("cuda -max_num_threads=256"))
    with pytest.raises(TargetError, match="-max_num_threads=many is not an integer"):
        GPULimits.from_target(Target("cuda -max_num_threads=many"))


def test_build_refuses_a_kernel_beyond_the_limits_before_compiling():
    with pytest.raises(InstantiationError, match="2048 threads per block"):
        build(*vector_add(512, 4), target="cuda")
    assert build(*vector_add(512, 2), target="cuda").arg_specs  # compiles (not run: no GPU here)


def test_a_fetch_by_fewer_threads_than_launched_keeps_its_barrier_outside():
    """The fetch runs under ``if threadIdx.x < 16``: the barrier must be where all 64 threads are."""
    func = lower(*shared_copy(256, threads=64, fetch_threads=16), "rev", target="cuda")
    narrow = [n for n in _loops(func.body) if n.thread_tag == "threadIdx.x" and n.extent.value == 16]
    assert len(narrow) == 1 and barriers(narrow[0]) == 0
    assert barriers(func.body) == 1
    a = np.arange(256, dtype="float32")
    c = np.full(256, np.nan, "float32")
    assert run_grid(func, a, c)["block"] == (64, 1, 1)
    np.testing.assert_array_equal(c, a[::-1])


def _loops(stmt: S.Stmt) -> list[S.For]:
    found: list[S.For] = []
    post_order(stmt, lambda n: found.append(n) if isinstance(n, S.For) else None)
    return found


def test_a_vectorized_fetch_through_shared_memory_computes_the_copy():
    """The kernel of ``gpu_kernels.reversed_copy``: 4-float vectors per thread both ways."""
    n = 1024
    func = reversed_copy(n)
    assert shared_sizes(func) == {"A.shared": 256}
    a = np.arange(n, dtype="float32")
    c = np.full(n, np.nan, "float32")
    assert run_grid(func, a, c, reverse=True)["block"] == (64, 1, 1)
    np.testing.assert_array_equal(c, 2 * a[::-1])


def test_shared_memory_used_where_only_some_threads_run_is_refused():
    """The consumer's thread loop is narrower than the fetch's: fetch and use both run under
    ``if threadIdx.x < ...``, where a barrier would hang the block."""
    A = te.placeholder((64,), name="A")
    C = te.compute((32,), lambda i: A[63 - i] + A[i], name="C")
    s = te.create_schedule(C.op)
    AS = s.cache_read(A, "shared", [C])
    bo, tx = s[C].split(C.op.axis[0], factor=32)
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    s[AS].compute_at(s[C], tx)
    atx, _ = s[AS].split(s[AS].op.axis[0], factor=1)
    s[AS].bind(atx, te.thread_axis("threadIdx.x"))
    with pytest.raises(LoweringError, match="shared A.shared is written and read under a loop or condition"):
        lower(s, [A, C], "narrow", target="cuda")
