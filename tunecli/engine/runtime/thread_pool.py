"""The thread pool that runs kernels' ``parallel`` loops on the CPU.

A kernel calls ``parallel_for(fn, closure, extent, nthreads)`` through the pointer the loader wrote
into its ``<entry>__parallel_for`` global (``codegen.parallel``).  The range ``[0, extent)`` is cut
into ``min(extent, nthreads * CHUNKS_PER_THREAD)`` chunks of near-equal size; the caller and up to
``nthreads - 1`` pool threads claim chunks from one atomic counter and call
``fn(closure, begin, end)`` on each, so every iteration runs exactly once.

The calling thread never waits for a pool thread that has not started: when the machine is busy
and a pool thread is not scheduled, the caller claims the remaining chunks itself and waits only
for chunks already claimed.  Pool threads spin for :data:`SPIN_COUNT` pauses after a loop, then
sleep on a futex until the next one; the caller waits for the last claimed chunks the same way.

One loop runs at a time: a call made while another thread's loop is in progress (kernels called
from several Python threads) runs serially on its caller, as does a loop of one iteration or one
thread.  Pool threads are created on first need and live as long as the process; a process forked
after they were created has none, and its callers then run every chunk themselves.

The pool is JIT-compiled LLVM IR (atomics, ``pthread_create`` and the ``futex`` system call from
libc), built once per process by :func:`parallel_for_address`.
"""

from __future__ import annotations

import ctypes
import functools
import platform
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir

from tunecli.errors import CodegenError

#: Chunks per thread: more than one, so that a thread delayed by another process holds back at
#: most one small chunk of a loop.
CHUNKS_PER_THREAD = 4
#: Pause instructions a thread spins before it sleeps on a futex (pool threads between loops, the
#: caller waiting for the last claimed chunks).
SPIN_COUNT = 20000
#: Most pool threads (the caller is one more).
MAX_WORKERS = 255
ENTRY = "tunecli_parallel_for"

I32, I64, PTR, VOID = ir.IntType(32), ir.IntType(64), ir.PointerType(), ir.VoidType()
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98, "riscv64": 98}
_PAUSE = {"x86_64": "pause", "amd64": "pause", "aarch64": "yield", "arm64": "yield"}
_state: dict[str, Any] = {}


def _c(v: int, ty: ir.IntType = I32) -> ir.Constant:
    return ir.Constant(ty, v)


class _PoolIR:
    """The pool's module: its shared words (each on its own cache line) and functions."""

    def __init__(self, machine: str):
        if machine not in _SYS_FUTEX:
            raise CodegenError(f"runtime: the thread pool does not support {machine!r} (no futex number)")
        self.module = ir.Module("tunecli_thread_pool")
        self.module.triple = llvm.get_process_triple()
        self.sys_futex, self.pause_asm = _SYS_FUTEX[machine], _PAUSE.get(machine, "")
        g = self._global
        self.ticket = g("ticket", I64)  # (generation << 32) | chunks not yet claimed
        self.seq, self.sleepers = g("seq", I32), g("sleepers", I32)  # loops posted; pool threads asleep
        self.done, self.caller_sleeps = g("done", I32), g("caller_sleeps", I32)
        self.busy, self.gen = g("busy", I32), g("gen", I32)
        self.workers = g("workers", I32, internal=False)
        self.fn, self.closure = g("fn", PTR), g("closure", PTR)
        self.extent, self.nchunks, self.active = g("extent", I64), g("nchunks", I64), g("active", I32)
        self.spin = g("spin_count", I32, SPIN_COUNT, internal=False)
        self.chunks_per_thread = g("chunks_per_thread", I32, CHUNKS_PER_THREAD, internal=False)
        self.body_ty = ir.FunctionType(VOID, [PTR, I64, I64])
        syscall = ir.Function(self.module, ir.FunctionType(I64, [I64], var_arg=True), "syscall")
        self.syscall = syscall
        self.pthread_create = ir.Function(self.module, ir.FunctionType(I32, [PTR, PTR, PTR, PTR]),
                                          "pthread_create")
        self.run_chunks = self._run_chunks()
        self.worker = self._worker_main()
        self._parallel_for()

    def _global(self, name: str, ty: ir.Type, init: int | None = None, internal: bool = True) -> Any:
        v = ir.GlobalVariable(self.module, ty, f"tunecli_pool_{name}")
        v.initializer = ir.Constant(ty, None if ty == PTR else (init or 0))
        v.align = 64
        if internal:
            v.linkage = "internal"
        return v

    # small emitters ---------------------------------------------------------------------------
    def _pause(self, b: ir.IRBuilder) -> None:
        if self.pause_asm:
            b.asm(ir.FunctionType(VOID, []), self.pause_asm, "~{memory}", [], side_effect=True)

    def _futex(self, b: ir.IRBuilder, word: Any, op: int, value: ir.Value) -> None:
        b.call(self.syscall, [_c(self.sys_futex, I64), word, _c(op), value, ir.Constant(PTR, None),
                              ir.Constant(PTR, None), _c(0)])

    @staticmethod
    def _load(b: ir.IRBuilder, ptr: Any, ty: ir.Type, order: str = "seq_cst") -> ir.Value:
        return b.load_atomic(ptr, order, ty.width // 8 if isinstance(ty, ir.IntType) else 8, typ=ty)

    def _store(self, b: ir.IRBuilder, value: ir.Value, ptr: Any, order: str = "seq_cst") -> None:
        b.store_atomic(value, ptr, order, value.type.width // 8)

    # functions ---------------------------------------------------------------------------------
    def _run_chunks(self) -> ir.Function:
        """Claim chunks of the posted loop and run them until none is left; return how many ran."""
        f = ir.Function(self.module, ir.FunctionType(I32, []), "tunecli_pool_run_chunks")
        f.linkage = "internal"
        entry, claim, run, out = (f.append_basic_block(n) for n in ("entry", "claim", "run", "out"))
        b = ir.IRBuilder(entry)
        ran = b.alloca(I32)
        b.store(_c(0), ran)
        b.branch(claim)
        b.position_at_end(claim)
        t = self._load(b, self.ticket, I64, "acquire")
        left = b.and_(t, _c(0xFFFFFFFF, I64))
        has = b.icmp_unsigned("!=", left, _c(0, I64))
        try_block = f.append_basic_block("try")
        b.cbranch(has, try_block, out)
        b.position_at_end(try_block)
        pair = b.cmpxchg(self.ticket, t, b.sub(t, _c(1, I64)), "acq_rel", "acquire")
        b.cbranch(b.extract_value(pair, 1), run, claim)
        b.position_at_end(run)
        # the loop's fields are stable while one of its chunks is claimed and not yet counted done
        n = b.load(self.nchunks, typ=I64)
        extent = b.load(self.extent, typ=I64)
        k = b.sub(n, left)
        begin = b.udiv(b.mul(k, extent), n)
        end = b.udiv(b.mul(b.add(k, _c(1, I64)), extent), n)
        b.call(b.load(self.fn, typ=ir.PointerType(self.body_ty)), [b.load(self.closure, typ=PTR), begin, end])
        b.store(b.add(b.load(ran), _c(1)), ran)
        b.branch(claim)
        b.position_at_end(out)
        b.ret(b.load(ran))
        return f

    def _count_done(self, b: ir.IRBuilder, ran: ir.Value) -> None:
        """A pool thread's chunks of a loop are done: count them, wake the caller if it sleeps."""
        f = b.function
        add, wake, after = (f.append_basic_block(n) for n in ("count", "wake_caller", "counted"))
        b.cbranch(b.icmp_unsigned("!=", ran, _c(0)), add, after)
        b.position_at_end(add)
        b.atomic_rmw("add", self.done, ran, "seq_cst")
        b.cbranch(b.icmp_unsigned("!=", self._load(b, self.caller_sleeps, I32), _c(0)), wake, after)
        b.position_at_end(wake)
        self._futex(b, self.done, _FUTEX_WAKE_PRIVATE, _c(1))
        b.branch(after)
        b.position_at_end(after)

    def _worker_main(self) -> ir.Function:
        """A pool thread: run chunks of each posted loop; between loops spin, then sleep."""
        f = ir.Function(self.module, ir.FunctionType(PTR, [PTR]), "tunecli_pool_worker")
        f.linkage = "internal"
        blocks = {n: f.append_basic_block(n) for n in ("entry", "work", "run", "wait", "spin", "poll",
                                                      "sleep", "futex", "woken")}
        b = ir.IRBuilder(blocks["entry"])
        index = b.ptrtoint(f.args[0], I32)
        seen = b.alloca(I32)
        count = b.alloca(I32)
        b.store(self._load(b, self.seq, I32, "acquire"), seen)
        b.branch(blocks["work"])
        b.position_at_end(blocks["work"])
        wanted = b.icmp_unsigned("<", index, self._load(b, self.active, I32, "monotonic"))
        b.cbranch(wanted, blocks["run"], blocks["wait"])
        b.position_at_end(blocks["run"])
        self._count_done(b, b.call(self.run_chunks, []))
        b.branch(blocks["wait"])
        b.position_at_end(blocks["wait"])
        b.store(_c(0), count)
        b.branch(blocks["spin"])
        b.position_at_end(blocks["spin"])  # a new loop posted? then work, else pause
        s = self._load(b, self.seq, I32, "acquire")
        new = b.icmp_unsigned("!=", s, b.load(seen))
        b.cbranch(new, blocks["woken"], blocks["poll"])
        b.position_at_end(blocks["poll"])
        self._pause(b)
        c = b.add(b.load(count), _c(1))
        b.store(c, count)
        b.cbranch(b.icmp_unsigned("<", c, b.load(self.spin, typ=I32)), blocks["spin"], blocks["sleep"])
        b.position_at_end(blocks["sleep"])
        b.atomic_rmw("add", self.sleepers, _c(1), "seq_cst")
        s2 = self._load(b, self.seq, I32)
        b.cbranch(b.icmp_unsigned("==", s2, b.load(seen)), blocks["futex"], blocks["woken"])
        b.position_at_end(blocks["futex"])
        self._futex(b, self.seq, _FUTEX_WAIT_PRIVATE, b.load(seen))
        b.atomic_rmw("sub", self.sleepers, _c(1), "seq_cst")
        b.branch(blocks["wait"])
        woken = blocks["woken"]
        b.position_at_end(woken)
        # reached from spin (s) or sleep (s2): reread the counter and leave the sleepers if counted
        from_sleep = b.phi(ir.IntType(1))
        from_sleep.add_incoming(ir.Constant(ir.IntType(1), 0), blocks["spin"])
        from_sleep.add_incoming(ir.Constant(ir.IntType(1), 1), blocks["sleep"])
        b.store(self._load(b, self.seq, I32, "acquire"), seen)
        leave = f.append_basic_block("leave")
        b.cbranch(from_sleep, leave, blocks["work"])
        b.position_at_end(leave)
        b.atomic_rmw("sub", self.sleepers, _c(1), "seq_cst")
        b.branch(blocks["work"])
        return f

    def _parallel_for(self) -> None:
        fn_ty = ir.FunctionType(VOID, [ir.PointerType(self.body_ty), PTR, I64, I32])
        f = ir.Function(self.module, fn_ty, ENTRY)
        fn, closure, extent, nthreads = f.args
        names = ("entry", "check", "locked", "spawn", "spawned", "post", "wake", "claim", "wait",
                 "poll", "sleep", "futex", "finish", "serial", "ret")
        bl = {n: f.append_basic_block(n) for n in names}
        b = ir.IRBuilder(bl["entry"])
        tid = b.alloca(I64)
        count = b.alloca(I32)
        parallel = b.and_(b.icmp_signed(">", nthreads, _c(1)), b.icmp_signed(">", extent, _c(1, I64)))
        some = f.append_basic_block("some")
        b.cbranch(parallel, bl["check"], some)
        b.position_at_end(some)
        b.cbranch(b.icmp_signed(">", extent, _c(0, I64)), bl["serial"], bl["ret"])
        b.position_at_end(bl["check"])  # one loop at a time; another caller runs its loop serially
        pair = b.cmpxchg(self.busy, _c(0), _c(1), "acquire", "monotonic")
        b.cbranch(b.extract_value(pair, 1), bl["locked"], bl["serial"])
        b.position_at_end(bl["locked"])
        want = b.sub(nthreads, _c(1))
        want = b.select(b.icmp_unsigned(">", want, _c(MAX_WORKERS)), _c(MAX_WORKERS), want)
        b.branch(bl["spawn"])
        b.position_at_end(bl["spawn"])
        have = b.load(self.workers, typ=I32)
        more = f.append_basic_block("more")
        b.cbranch(b.icmp_unsigned("<", have, want), more, bl["spawned"])
        b.position_at_end(more)
        rc = b.call(self.pthread_create, [tid, ir.Constant(PTR, None), self.worker, b.inttoptr(have, PTR)])
        created = f.append_basic_block("created")
        b.cbranch(b.icmp_signed("==", rc, _c(0)), created, bl["spawned"])
        b.position_at_end(created)
        b.store(b.add(have, _c(1)), self.workers)
        b.branch(bl["spawn"])
        b.position_at_end(bl["spawned"])
        have = b.load(self.workers, typ=I32)
        active = b.select(b.icmp_unsigned("<", have, want), have, want)
        unlock_serial = f.append_basic_block("unlock_serial")
        b.cbranch(b.icmp_unsigned("==", active, _c(0)), unlock_serial, bl["post"])
        b.position_at_end(unlock_serial)
        self._store(b, _c(0), self.busy, "release")
        b.branch(bl["serial"])
        b.position_at_end(bl["post"])
        per = b.zext(b.load(self.chunks_per_thread, typ=I32), I64)
        total = b.mul(b.zext(b.add(active, _c(1)), I64), per)
        total = b.select(b.icmp_unsigned("<", total, _c(1, I64)), _c(1, I64), total)
        nchunks = b.select(b.icmp_unsigned("<", extent, total), extent, total)
        b.store(fn, self.fn)
        b.store(closure, self.closure)
        b.store(extent, self.extent)
        b.store(nchunks, self.nchunks)
        self._store(b, active, self.active, "monotonic")
        self._store(b, _c(0), self.done, "monotonic")
        gen = b.add(b.load(self.gen, typ=I32), _c(1))
        b.store(gen, self.gen)
        self._store(b, b.or_(b.shl(b.zext(gen, I64), _c(32, I64)), nchunks), self.ticket, "release")
        b.atomic_rmw("add", self.seq, _c(1), "seq_cst")
        b.cbranch(b.icmp_unsigned("!=", self._load(b, self.sleepers, I32), _c(0)), bl["wake"], bl["claim"])
        b.position_at_end(bl["wake"])
        self._futex(b, self.seq, _FUTEX_WAKE_PRIVATE, active)
        b.branch(bl["claim"])
        b.position_at_end(bl["claim"])
        mine = b.call(self.run_chunks, [])
        target = b.sub(b.trunc(nchunks, I32), mine)  # the chunks pool threads ran
        b.store(_c(0), count)
        b.branch(bl["wait"])
        b.position_at_end(bl["wait"])  # the chunks other threads claimed: spin, then sleep
        finished = b.icmp_unsigned("==", self._load(b, self.done, I32, "acquire"), target)
        b.cbranch(finished, bl["finish"], bl["poll"])
        b.position_at_end(bl["poll"])
        self._pause(b)
        c = b.add(b.load(count), _c(1))
        b.store(c, count)
        b.cbranch(b.icmp_unsigned("<", c, b.load(self.spin, typ=I32)), bl["wait"], bl["sleep"])
        b.position_at_end(bl["sleep"])
        self._store(b, _c(1), self.caller_sleeps)
        d = self._load(b, self.done, I32)
        b.cbranch(b.icmp_unsigned("==", d, target), bl["finish"], bl["futex"])
        b.position_at_end(bl["futex"])
        self._futex(b, self.done, _FUTEX_WAIT_PRIVATE, d)
        b.branch(bl["sleep"])
        b.position_at_end(bl["finish"])
        self._store(b, _c(0), self.caller_sleeps)
        self._store(b, _c(0), self.busy, "release")
        b.branch(bl["ret"])
        b.position_at_end(bl["serial"])
        b.call(fn, [closure, _c(0, I64), extent])
        b.branch(bl["ret"])
        b.position_at_end(bl["ret"])
        b.ret_void()


def pool_ir(machine: str | None = None) -> str:
    """The pool's LLVM IR (text) for ``machine`` (default: this one)."""
    return str(_PoolIR(machine or platform.machine().lower()).module)


@functools.cache
def _engine() -> Any:
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
