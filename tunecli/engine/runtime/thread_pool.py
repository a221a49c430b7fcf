"""The thread pool that runs kernels' ``parallel`` loops on the CPU.

A kernel calls ``parallel_for(fn, closure, extent, nthreads)`` through the pointer the loader wrote
into its ``<entry>__parallel_for`` global (``codegen.parallel``).  The range ``[0, extent)`` is cut
into ``min(extent, nthreads * CHUNKS_PER_THREAD)`` chunks of near-equal size, and the chunks into
one contiguous range per thread (the caller's first), as a static schedule would split them.  Each
thread runs the chunks of its own range front to back, then takes chunks from the back of the
other ranges until none is left; every chunk is claimed by one atomic compare-and-swap, and
``fn(closure, begin, end)`` runs each, so every iteration runs exactly once.  On a quiet machine a
thread thus works on the same part of every kernel's data (its own cache keeps it); on a busy
one, the chunks of a thread that is late or descheduled are taken by the others.

The calling thread never waits for a pool thread that has not started: when the machine is busy
and a pool thread is not scheduled, the caller takes the remaining chunks itself and waits only
for chunks already claimed.  Pool threads spin for about :data:`SPIN_MICROSECONDS` after a loop
(the pause instructions that take, measured when the pool is built), then sleep on a futex until
the next one; the caller waits for the last claimed chunks the same way.  A short spin keeps the
threads ready for the next kernel of a network without holding a core a busy machine needs.

One loop runs at a time: a call made while another thread's loop is in progress (kernels called
from several Python threads) runs serially on its caller, as does a loop of one iteration or one
thread.  Pool threads are created on first need and live as long as the process; a process forked
after they were created has none, and its callers then run every chunk themselves.

The pool is JIT-compiled LLVM IR (:mod:`.thread_pool_ir`), built once per process by
:func:`parallel_for_address`.
"""

from __future__ import annotations

import ctypes
import functools
import time

import llvmlite.binding as llvm

from tunecli.errors import CodegenError

from .thread_pool_ir import CHUNKS_PER_THREAD, ENTRY, MAX_WORKERS, SPIN_COUNT, SPIN_MICROSECONDS, pool_ir

__all__ = ["CHUNKS_PER_THREAD", "MAX_WORKERS", "SPIN_MICROSECONDS", "parallel_for_address", "pool_ir",
           "pool_setting", "pool_threads"]


@functools.cache
def _engine() -> llvm.ExecutionEngine:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()  # the pause instruction is inline assembly
    libc = ctypes.CDLL(None)
    for name in ("syscall", "pthread_create"):
        llvm.add_symbol(name, ctypes.cast(getattr(libc, name), ctypes.c_void_p).value)
    mod = llvm.parse_assembly(pool_ir())
    mod.verify()
    tm = llvm.Target.from_default_triple().create_target_machine(opt=2)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    # pool threads run this code until the process ends: it must never be freed
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(engine))
    pause = ctypes.CFUNCTYPE(None, ctypes.c_int32)(engine.get_function_address("tunecli_pool_pause"))
    seconds = []
    for _ in range(5):
        start = time.perf_counter()
        pause(SPIN_COUNT)
        seconds.append(time.perf_counter() - start)
    per_pause = max(min(seconds) / SPIN_COUNT, 1e-10)
    spin = ctypes.c_int32.from_address(engine.get_global_value_address("tunecli_pool_spin_count"))
    spin.value = max(100, min(10_000_000, round(SPIN_MICROSECONDS * 1e-6 / per_pause)))
    return engine


def parallel_for_address() -> int:
    """Address of ``parallel_for(fn, closure, extent, nthreads)`` (the pool is built on first call)."""
    return _engine().get_function_address(ENTRY)


def pool_setting(name: str) -> ctypes.c_int32:
    """The pool's ``spin_count`` or ``chunks_per_thread`` setting, as a writable ctypes integer."""
    if name not in ("spin_count", "chunks_per_thread"):
        raise CodegenError(f"runtime: the thread pool has no setting {name!r}")
    return ctypes.c_int32.from_address(_engine().get_global_value_address(f"tunecli_pool_{name}"))


def pool_threads() -> int:
    """How many pool threads this process has started."""
    address = _engine().get_global_value_address("tunecli_pool_workers")
    return ctypes.c_int32.from_address(address).value if address else 0
