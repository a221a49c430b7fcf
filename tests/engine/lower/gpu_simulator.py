"""A simulator of lowered GPU kernels: a grid of blocks of threads, run on numpy arrays.

The reference interpreter's Python translation (``ir_interpreter``) runs once per thread as a
generator: a loop bound to ``blockIdx.*``/``threadIdx.*`` takes the block or thread index (and
runs only in the indices below its extent, as the NVPTX backend emits it), a
``tvm_storage_sync`` barrier is a ``yield``.  The threads of a block run in lock-step between
barriers: each round runs every thread up to its next barrier, one thread after the other, in
the given order (forwards or backwards, so results that depend on the order show up).

``shared`` buffers live once per block and check every access: a thread reading an element
another thread wrote since the last barrier, or writing one another thread read or wrote since
then, is a race and an error, whatever the order; so are barriers not reached by every thread
of the block.  ``local`` buffers are per thread; all buffers start as NaN.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.dtype import parse_dtype
from tunecli.engine.lower.storage_sync import is_barrier
from tunecli.engine.lower.thread_scope import LAUNCH_TAGS, launch_extents

from .ir_interpreter import InterpError, _call, _cast, _chk, _Gen, _tdiv


class SharedArray:
    """One block's shared buffer: values plus, per element, who last wrote and read it when."""

    def __init__(self, name: str, size: int, dtype: str, clock: list[int]):
        fill = np.nan if parse_dtype(dtype).is_float else -77
        self.name, self.clock = name, clock
        self.data = np.full(size, fill, dtype=dtype)
        self.writer = np.full(size, -1, dtype=np.int64)
        self.write_phase = np.full(size, -1, dtype=np.int64)
        self.reader = np.full(size, -1, dtype=np.int64)  # -2: several threads
        self.read_phase = np.full(size, -1, dtype=np.int64)

    def load(self, i: Any, me: int) -> Any:
        i = _chk(i, self.data.size, self.name)
        phase = self.clock[0]
        if self.write_phase[i] == phase and self.writer[i] != me:
            raise InterpError(f"race on shared {self.name}[{i}]: thread {me} reads what thread "
                              f"{self.writer[i]} wrote without a barrier between")
        if self.read_phase[i] != phase:
            self.read_phase[i], self.reader[i] = phase, me
        elif self.reader[i] != me:
            self.reader[i] = -2
        return self.data[i]

    def store(self, i: Any, value: Any, me: int) -> None:
        i = _chk(i, self.data.size, self.name)
        phase = self.clock[0]
        if self.write_phase[i] == phase and self.writer[i] != me:
            raise InterpError(f"race on shared {self.name}[{i}]: threads {self.writer[i]} and {me} "
                              "write it without a barrier between")
        if self.read_phase[i] == phase and self.reader[i] != me:
            raise InterpError(f"race on shared {self.name}[{i}]: thread {me} overwrites what another "
                              "thread reads without a barrier between")
        self.write_phase[i], self.writer[i] = phase, me
        self.data[i] = value


class _GridGen(_Gen):
    def __init__(self, launch: dict[str, int]):
        super().__init__()
        self.launch = launch

    def expr(self, e: Any) -> str:
        if isinstance(e, E.BufferLoad) and e.buffer.scope == "shared":
            return f"{self.buf(e.buffer)}.load({self.expr(e.indices[0])}, _me)"
        return super().expr(e)

    def stmt(self, s: Any, ind: int) -> None:
        pad = "    " * ind
        if isinstance(s, S.For) and s.thread_tag in LAUNCH_TAGS:
            kind, axis = s.thread_tag.split(".")
            index = f"{'_bid' if kind == 'blockIdx' else '_tid'}[{'xyz'.index(axis)}]"
            if not isinstance(s.extent, E.IntImm):
                raise InterpError(f"loop {s.loop_var.name} bound to {s.thread_tag} has extent {s.extent}")
            self.lines.append(f"{pad}if {index} < {s.extent.value}:")
            self.lines.append(f"{pad}    {self.name(s.loop_var, 'v')} = {self.expr(s.min)} + {index}")
            self.stmt(s.body, ind + 1)
        elif is_barrier(s):
            self.lines.append(f"{pad}yield")
        elif isinstance(s, S.Allocate) and s.buffer.scope == "shared":
            b = self.buf(s.buffer)
            self.lines.append(f"{pad}{b} = _shared.get({b!r}) or _shared.setdefault({b!r}, _SharedArray("
                              f"{s.buffer.name!r}, {s.buffer.size}, {s.buffer.dtype!r}, _clock))")
            self.stmt(s.body, ind)
        elif isinstance(s, S.BufferStore) and s.buffer.scope == "shared":
            val = self.expr(s.value)
            if not parse_dtype(s.buffer.dtype).is_float:
                val = f"_cast({s.buffer.dtype!r}, {val})"
            self.lines.append(f"{pad}{self.buf(s.buffer)}.store({self.expr(s.indices[0])}, {val}, _me)")
        else:
            super().stmt(s, ind)


def _dims(launch: dict[str, int], kind: str) -> tuple[int, int, int]:
    return tuple(launch.get(f"{kind}.{a}", 1) for a in "xyz")  # type: ignore[return-value]


def run_grid(func: S.PrimFunc, *arrays: np.ndarray, reverse: bool = False) -> dict[str, Any]:
    """Run ``func`` over its whole grid on ``arrays`` (outputs in place).

    Returns ``{"grid": (x, y, z), "block": (x, y, z), "barriers": rounds per block}``.
    """
    launch = launch_extents(func.body)
    gen = _GridGen(launch)
    params = [gen.buf(p) for p in func.params]
    for p, a in zip(func.params, arrays, strict=True):
        if tuple(a.shape) != p.shape or str(a.dtype) != p.dtype:
            raise InterpError(f"argument {p.name}: expected {p.dtype}{list(p.shape)}, got {a.dtype}{a.shape}")
    gen.stmt(func.body, 1)
    src = (f"def _thread(_bid, _tid, _me, _shared, _clock, {', '.join(params)}):\n"
           "    if False:\n        yield\n" + "\n".join(gen.lines) + "\n")
    scope: dict[str, Any] = {"_np": np, "_chk": _chk, "_cast": _cast, "_call": _call, "_tdiv": _tdiv,
                             "_SharedArray": SharedArray}
    exec(compile(src, f"<{func.name}>", "exec"), scope)
    thread = scope["_thread"]
    flats = [a.reshape(-1) for a in arrays]
    grid, block = _dims(launch, "blockIdx"), _dims(launch, "threadIdx")
    tids = [(x, y, z) for z, y, x in itertools.product(*(range(n) for n in reversed(block)))]
    rounds = 0
    with np.errstate(over="ignore", invalid="ignore"):
        for bz, by, bx in itertools.product(*(range(n) for n in reversed(grid))):
            shared: dict[str, SharedArray] = {}
            clock = [0]
            live = [thread((bx, by, bz), t, n, shared, clock, *flats) for n, t in enumerate(tids)]
            if reverse:
                live.reverse()
            while live:
                waiting = []
                for g in live:
                    try:
                        next(g)
                        waiting.append(g)
                    except StopIteration:
                        pass
                if waiting and len(waiting) != len(live):
                    raise InterpError(f"block {(bx, by, bz)}: {len(live) - len(waiting)} of {len(live)} "
                                      "threads finished while the others wait at a barrier")
                live = waiting
                clock[0] += 1
            rounds = clock[0]
    return {"grid": grid, "block": block, "barriers": rounds - 1}
