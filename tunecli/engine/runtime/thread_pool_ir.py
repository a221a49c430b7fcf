"""The thread pool's code, as LLVM IR: its shared words, ``parallel_for``, the chunk claiming of
:mod:`.thread_pool` and the pool threads' spin-then-sleep loop (atomics, ``pthread_create`` and the
``futex`` system call from libc)."""

from __future__ import annotations

import platform

import llvmlite.binding as llvm
from llvmlite import ir

from tunecli.errors import CodegenError

#: Chunks per thread: more than one, so that the chunks of a thread delayed by another process
#: can be taken by the others, and a thread that is descheduled holds back one small chunk at most.
CHUNKS_PER_THREAD = 4
#: How long a thread spins before it sleeps on a futex (pool threads between loops, the caller
#: waiting for the last claimed chunks), in microseconds.
SPIN_MICROSECONDS = 50
#: Pause instructions spun before the pool measures how long one takes.
SPIN_COUNT = 2000
#: Most pool threads (the caller is one more).
MAX_WORKERS = 255
ENTRY = "tunecli_parallel_for"

I32, I64, PTR, VOID = ir.IntType(32), ir.IntType(64), ir.PointerType(), ir.VoidType()
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98, "riscv64": 98}
_PAUSE = {"x86_64": "pause", "amd64": "pause", "aarch64": "yield", "arm64": "yield"}


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
        # each thread's chunks not yet claimed, (back << 32) | front, on a cache line of its own
        self.ranges = g("ranges", ir.ArrayType(ir.ArrayType(I64, 8), MAX_WORKERS + 1))
        self.parts = g("parts", I32)  # threads taking part in the posted loop
        self.seq, self.sleepers = g("seq", I32), g("sleepers", I32)  # loops posted; pool threads asleep
        self.done, self.caller_sleeps = g("done", I32), g("caller_sleeps", I32)
        self.busy = g("busy", I32)
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
        self._pause_function()
        self.run_chunks = self._run_chunks()
        self.worker = self._worker_main()
        self._parallel_for()

    def _global(self, name: str, ty: ir.Type, init: int | None = None,
                internal: bool = True) -> ir.GlobalVariable:
        v = ir.GlobalVariable(self.module, ty, f"tunecli_pool_{name}")
        v.initializer = ir.Constant(ty, init or 0) if isinstance(ty, ir.IntType) else ir.Constant(ty, None)
        v.align = 64
        if internal:
            v.linkage = "internal"
        return v

    # small emitters ---------------------------------------------------------------------------
    def _pause(self, b: ir.IRBuilder) -> None:
        if self.pause_asm:
            b.asm(ir.FunctionType(VOID, []), self.pause_asm, "~{memory}", [], side_effect=True)

    def _spin_step(self, b: ir.IRBuilder, count: ir.Value, again: ir.Block, give_up: ir.Block) -> None:
        """One pause of a spin: on to ``again`` while fewer than ``spin_count``, else to ``give_up``."""
        self._pause(b)
        c = b.add(b.load(count), _c(1))
        b.store(c, count)
        b.cbranch(b.icmp_unsigned("<", c, b.load(self.spin, typ=I32)), again, give_up)

    def _futex(self, b: ir.IRBuilder, word: ir.Value, op: int, value: ir.Value) -> None:
        b.call(self.syscall, [_c(self.sys_futex, I64), word, _c(op), value, ir.Constant(PTR, None),
                              ir.Constant(PTR, None), _c(0)])

    @staticmethod
    def _load(b: ir.IRBuilder, ptr: ir.Value, ty: ir.Type, order: str = "seq_cst") -> ir.Value:
        return b.load_atomic(ptr, order, ty.width // 8 if isinstance(ty, ir.IntType) else 8, typ=ty)

    def _store(self, b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, order: str = "seq_cst") -> None:
        b.store_atomic(value, ptr, order, value.type.width // 8)

    # functions ---------------------------------------------------------------------------------
    def _pause_function(self) -> None:
        """``pause(n)``: ``n`` pause instructions (timed to size the spins)."""
        f = ir.Function(self.module, ir.FunctionType(VOID, [I32]), "tunecli_pool_pause")
        entry, loop, out = (f.append_basic_block(n) for n in ("entry", "loop", "out"))
        b = ir.IRBuilder(entry)
        b.cbranch(b.icmp_signed(">", f.args[0], _c(0)), loop, out)
        b.position_at_end(loop)
        i = b.phi(I32)
        i.add_incoming(_c(0), entry)
        self._pause(b)
        nxt = b.add(i, _c(1))
        i.add_incoming(nxt, loop)
        b.cbranch(b.icmp_signed("<", nxt, f.args[0]), loop, out)
        b.position_at_end(out)
        b.ret_void()

    def _slot(self, b: ir.IRBuilder, index: ir.Value) -> ir.Value:
        return b.gep(self.ranges, [_c(0), index, _c(0)], inbounds=True)

    def _run_chunks(self) -> ir.Function:
        """Run the chunks of thread ``slot``'s range front to back, then take chunks from the back of
        the other threads' ranges until none is left; return how many ran."""
        f = ir.Function(self.module, ir.FunctionType(I32, [I32]), "tunecli_pool_run_chunks")
        f.linkage = "internal"
        slot = f.args[0]
        names = ("entry", "own", "own_try", "steal", "victim", "steal_try", "next", "run", "out")
        bl = {n: f.append_basic_block(n) for n in names}
        b = ir.IRBuilder(bl["entry"])
        ran, chunk, step = b.alloca(I32), b.alloca(I64), b.alloca(I32)
        b.store(_c(0), ran)
        b.store(_c(1), step)
        parts = self._load(b, self.parts, I32, "monotonic")
        b.cbranch(b.icmp_unsigned("<", slot, parts), bl["own"], bl["out"])
        # own range: (back << 32) | front, the owner advances the front
        b.position_at_end(bl["own"])
        mine = self._slot(b, slot)
        w = self._load(b, mine, I64, "acquire")
        front, back = b.and_(w, _c(0xFFFFFFFF, I64)), b.lshr(w, _c(32, I64))
        b.cbranch(b.icmp_unsigned("<", front, back), bl["own_try"], bl["steal"])
        b.position_at_end(bl["own_try"])
        pair = b.cmpxchg(mine, w, b.add(w, _c(1, I64)), "acq_rel", "acquire")
        b.store(front, chunk)
        b.cbranch(b.extract_value(pair, 1), bl["run"], bl["own"])
        # the others' ranges, from the back: slot + 1, slot + 2, ... (mod parts)
        b.position_at_end(bl["steal"])
        k = b.load(step)
        b.cbranch(b.icmp_unsigned("<", k, parts), bl["victim"], bl["out"])
        b.position_at_end(bl["victim"])
        v = b.urem(b.add(slot, k), parts)
        theirs = self._slot(b, v)
        w = self._load(b, theirs, I64, "acquire")
        front, back = b.and_(w, _c(0xFFFFFFFF, I64)), b.lshr(w, _c(32, I64))
        b.cbranch(b.icmp_unsigned("<", front, back), bl["steal_try"], bl["next"])
        b.position_at_end(bl["steal_try"])
        last = b.sub(back, _c(1, I64))
        pair = b.cmpxchg(theirs, w, b.or_(b.shl(last, _c(32, I64)), front), "acq_rel", "acquire")
        b.store(last, chunk)
        b.cbranch(b.extract_value(pair, 1), bl["run"], bl["steal"])
        b.position_at_end(bl["next"])
        b.store(b.add(k, _c(1)), step)
        b.branch(bl["steal"])
        # one chunk: the loop's fields are stable while it is claimed and not yet counted done
        b.position_at_end(bl["run"])
        n = b.load(self.nchunks, typ=I64)
        extent = b.load(self.extent, typ=I64)
        c = b.load(chunk)
        begin = b.udiv(b.mul(c, extent), n)
        end = b.udiv(b.mul(b.add(c, _c(1, I64)), extent), n)
        b.call(b.load(self.fn, typ=ir.PointerType(self.body_ty)), [b.load(self.closure, typ=PTR), begin, end])
        b.store(b.add(b.load(ran), _c(1)), ran)
        b.branch(bl["own"])
        b.position_at_end(bl["out"])
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
        b.cbranch(wanted, blocks["run"], blocks["sleep"])  # a thread not wanted sleeps at once
        b.position_at_end(blocks["run"])
        self._count_done(b, b.call(self.run_chunks, [b.add(index, _c(1))]))
        b.branch(blocks["wait"])
        b.position_at_end(blocks["wait"])
        b.store(_c(0), count)
        b.branch(blocks["spin"])
        b.position_at_end(blocks["spin"])  # a new loop posted? then work, else pause
        s = self._load(b, self.seq, I32, "acquire")
        new = b.icmp_unsigned("!=", s, b.load(seen))
        b.cbranch(new, blocks["woken"], blocks["poll"])
        b.position_at_end(blocks["poll"])
        self._spin_step(b, count, blocks["spin"], blocks["sleep"])
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
        parts = b.add(active, _c(1))
        self._store(b, parts, self.parts, "monotonic")
        parts64 = b.zext(parts, I64)
        fill, filled = f.append_basic_block("fill"), f.append_basic_block("filled")
        pre = b.block
        b.branch(fill)
        b.position_at_end(fill)  # thread j's range: chunks [j * nchunks / parts, (j + 1) * nchunks / parts)
        j = b.phi(I64)
        j.add_incoming(_c(0, I64), pre)
        nxt = b.add(j, _c(1, I64))
        lo = b.udiv(b.mul(j, nchunks), parts64)
        hi = b.udiv(b.mul(nxt, nchunks), parts64)
        self._store(b, b.or_(b.shl(hi, _c(32, I64)), lo), self._slot(b, b.trunc(j, I32)), "release")
        j.add_incoming(nxt, fill)
        b.cbranch(b.icmp_unsigned("<", nxt, parts64), fill, filled)
        b.position_at_end(filled)
        b.atomic_rmw("add", self.seq, _c(1), "seq_cst")
        b.cbranch(b.icmp_unsigned("!=", self._load(b, self.sleepers, I32), _c(0)), bl["wake"], bl["claim"])
        b.position_at_end(bl["wake"])
        self._futex(b, self.seq, _FUTEX_WAKE_PRIVATE, _c(0x7FFFFFFF))  # all: a wanted one may be behind
        b.branch(bl["claim"])
        b.position_at_end(bl["claim"])
        mine = b.call(self.run_chunks, [_c(0)])
        target = b.sub(b.trunc(nchunks, I32), mine)  # the chunks pool threads ran
        b.store(_c(0), count)
        b.branch(bl["wait"])
        b.position_at_end(bl["wait"])  # the chunks other threads claimed: spin, then sleep
        finished = b.icmp_unsigned("==", self._load(b, self.done, I32, "acquire"), target)
        b.cbranch(finished, bl["finish"], bl["poll"])
        b.position_at_end(bl["poll"])
        self._spin_step(b, count, bl["wait"], bl["sleep"])
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
