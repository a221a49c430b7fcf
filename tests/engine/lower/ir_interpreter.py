"""A tiny reference interpreter of lowered PrimFuncs (the oracle for lowering correctness).

The function is translated to Python source and executed on numpy arrays: every load and store is
bounds-checked, temporaries start as NaN (floats) or a sentinel (ints) so reads of uninitialised
memory show up, vectorized/unrolled loops must have constant extents, and every remaining te node
(tensor reads, reductions) is an error.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.dtype import parse_dtype


class InterpError(AssertionError):
    """The lowered function is malformed or accessed memory out of bounds."""


def _chk(i: Any, n: int, name: str) -> int:
    i = int(i)
    if i < 0 or i >= n:
        raise InterpError(f"index {i} out of bounds of buffer {name} (size {n})")
    return i


def _cast(dtype: str, v: Any) -> Any:
    t = parse_dtype(dtype)
    if t.is_float:
        return np.dtype(dtype).type(v)
    if t.is_bool:
        return bool(v)
    if isinstance(v, (float, np.floating)):
        v = math.trunc(float(v))
    return np.array(int(v)).astype(dtype).item()


def _tdiv(a: Any, b: Any) -> Any:
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        q = abs(int(a)) // abs(int(b))
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


_CALLS = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "log10": np.log10, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "fabs": np.abs, "pow": np.power, "floor": np.floor, "ceil": np.ceil, "round": np.round,
    "trunc": np.trunc, "sin": np.sin, "cos": np.cos,
    "erf": np.vectorize(math.erf),
}


def _call(dtype: str, name: str, *args: Any) -> Any:
    if name not in _CALLS:
        raise InterpError(f"unknown intrinsic {name}")
    with np.errstate(all="ignore"):
        return np.dtype(dtype).type(_CALLS[name](*args))


class _Gen:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.lines: list[str] = []
        self.buffers: dict[int, S.Buffer] = {}

    def name(self, obj: Any, prefix: str) -> str:
        key = id(obj)
        if key not in self.names:
            self.names[key] = f"{prefix}{len(self.names)}"
        return self.names[key]

    def buf(self, b: S.Buffer) -> str:
        self.buffers[id(b)] = b
        return self.name(b, "b")

    def expr(self, e: Any) -> str:
        if isinstance(e, E.IntImm):
            return repr(bool(e.value)) if e.dtype == "bool" else repr(e.value)
        if isinstance(e, E.FloatImm):
            return f"_np.{e.dtype}({str(e.value)!r})"
        if isinstance(e, E.Var):
            return self.name(e, "v")
        if isinstance(e, (E.And, E.Or)):
            op = "and" if isinstance(e, E.And) else "or"
            return f"({self.expr(e.a)} {op} {self.expr(e.b)})"
        if isinstance(e, E.FloorDiv):
            if parse_dtype(e.dtype).is_float:
                return f"_np.floor({self.expr(e.a)} / {self.expr(e.b)})"
            return f"({self.expr(e.a)} // {self.expr(e.b)})"
        if isinstance(e, E.FloorMod):
            if parse_dtype(e.dtype).is_float:
                a, b = self.expr(e.a), self.expr(e.b)
                return f"({a} - _np.floor({a} / {b}) * {b})"
            return f"({self.expr(e.a)} % {self.expr(e.b)})"
        if isinstance(e, E.Div):
            return f"_tdiv({self.expr(e.a)}, {self.expr(e.b)})"
        if isinstance(e, (E.Min, E.Max)):
            return f"{e.symbol}({self.expr(e.a)}, {self.expr(e.b)})"
        if isinstance(e, E.BinaryOp):
            return f"({self.expr(e.a)} {e.symbol} {self.expr(e.b)})"
        if isinstance(e, E.Not):
            return f"(not {self.expr(e.a)})"
        if isinstance(e, E.Cast):
            return f"_cast({e.dtype!r}, {self.expr(e.value)})"
        if isinstance(e, E.Select):
            return f"({self.expr(e.true_value)} if {self.expr(e.condition)} else {self.expr(e.false_value)})"
        if isinstance(e, E.Call):
            args = "".join(", " + self.expr(a) for a in e.args)
            return f"_call({e.dtype!r}, {e.name!r}{args})"
        if isinstance(e, E.BufferLoad):
            if len(e.indices) != 1:
                raise InterpError(f"load of {e.buffer.name} is not flattened: {e}")
            b = self.buf(e.buffer)
            return f"{b}[_chk({self.expr(e.indices[0])}, {e.buffer.size}, {e.buffer.name!r})]"
        if isinstance(e, E.Let):
            return f"(lambda {self.name(e.var, 'v')}: {self.expr(e.body)})({self.expr(e.value)})"
        raise InterpError(f"unexpected node {type(e).__name__} in lowered code: {e}")

    def stmt(self, s: Any, ind: int) -> None:
        pad = "    " * ind
        if isinstance(s, S.SeqStmt):
            if not s.stmts:
                self.lines.append(pad + "pass")
            for x in s.stmts:
                self.stmt(x, ind)
        elif isinstance(s, S.For):
            if s.kind in (S.VECTORIZED, S.UNROLLED) and not isinstance(s.extent, E.IntImm):
                raise InterpError(f"{s.kind} loop {s.loop_var.name} has a non-constant extent {s.extent}")
            v = self.name(s.loop_var, "v")
            lo = self.expr(s.min)
            self.lines.append(f"{pad}for {v} in range({lo}, {lo} + {self.expr(s.extent)}):")
            self.stmt(s.body, ind + 1)
        elif isinstance(s, S.BufferStore):
            if len(s.indices) != 1:
                raise InterpError(f"store to {s.buffer.name} is not flattened")
            b = self.buf(s.buffer)
            val = self.expr(s.value)
            if not parse_dtype(s.buffer.dtype).is_float:
                val = f"_cast({s.buffer.dtype!r}, {val})"
            idx = f"_chk({self.expr(s.indices[0])}, {s.buffer.size}, {s.buffer.name!r})"
            self.lines.append(f"{pad}{b}[{idx}] = {val}")
        elif isinstance(s, S.Allocate):
            b = self.buf(s.buffer)
            fill = "_np.nan" if parse_dtype(s.buffer.dtype).is_float else "-77"
            self.lines.append(f"{pad}{b} = _np.full({s.buffer.size}, {fill}, dtype={s.buffer.dtype!r})")
            self.stmt(s.body, ind)
        elif isinstance(s, S.IfThenElse):
            self.lines.append(f"{pad}if {self.expr(s.condition)}:")
            self.stmt(s.then_case, ind + 1)
            if s.else_case is not None:
                self.lines.append(f"{pad}else:")
                self.stmt(s.else_case, ind + 1)
        elif isinstance(s, S.LetStmt):
            self.lines.append(f"{pad}{self.name(s.var, 'v')} = {self.expr(s.value)}")
            self.stmt(s.body, ind)
        elif isinstance(s, S.Evaluate):
            self.lines.append(f"{pad}{self.expr(s.value)}")
        else:
            raise InterpError(f"unexpected statement {type(s).__name__}")


def run(func: S.PrimFunc, *arrays: np.ndarray) -> None:
    """Execute ``func`` on ``arrays`` (one per parameter, shapes and dtypes checked); outputs in place."""
    if len(arrays) != len(func.params):
        raise InterpError(f"{func.name} takes {len(func.params)} arrays, got {len(arrays)}")
    gen = _Gen()
    params = []
    for p, a in zip(func.params, arrays, strict=True):
        if tuple(a.shape) != p.shape or str(a.dtype) != p.dtype:
            raise InterpError(f"argument {p.name}: expected {p.dtype}{list(p.shape)}, got {a.dtype}{a.shape}")
        params.append(gen.buf(p))
    gen.stmt(func.body, 1)
    src = f"def _kernel({', '.join(params)}):\n" + "\n".join(gen.lines) + "\n    return None\n"
    scope: dict[str, Any] = {"_np": np, "_chk": _chk, "_cast": _cast, "_call": _call, "_tdiv": _tdiv}
    exec(compile(src, f"<{func.name}>", "exec"), scope)
    flats = [a.reshape(-1) for a in arrays]
    for a, f in zip(arrays, flats, strict=True):
        if not np.shares_memory(a, f):
            raise InterpError("arrays must be contiguous")
    with np.errstate(over="ignore", invalid="ignore"):
        scope["_kernel"](*flats)
