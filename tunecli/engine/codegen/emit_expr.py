"""Emission of IR expressions as LLVM instructions (scalar and ``<N x T>`` vector).

:class:`ExprEmitter` holds the builder and the environment (loop/let variables and buffer base
pointers) and maps each expression class to an emitter method through a table.  Float
``+ - *`` carry the ``contract`` fast-math flag so that LLVM forms FMAs without reassociating.
``Select`` is lazy: when a branch may read memory (or divide) it is emitted as control flow, or,
for vector conditions, with masked loads; LLVM ``select`` is used only when both sides are safe.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from llvmlite import ir

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.stmt import Buffer
from tunecli.errors import CodegenError

from . import emit_intrinsic
from .convert import convert, from_memory
from .expr_sharing import NOT_SHARED, SharedValues
from .llvm_types import I1, I64, constant, dtype_of, element_bytes, memory_type, value_type

if TYPE_CHECKING:
    from .backend import Backend

FLOAT_FLAGS = ("contract",)
_CMP = {E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">=", E.EQ: "==", E.NE: "!="}


def _nonzero_constant(e: E.Expr) -> bool:
    """True for a non-zero integer constant (or a broadcast of one)."""
    e = e.value if isinstance(e, E.Broadcast) else e
    return isinstance(e, E.IntImm) and e.value != 0


class ExprEmitter:
    """Emit expressions into ``builder``; ``vars`` and ``buffers`` bind IR names to LLVM values.

    ``backend`` answers the target-specific questions (math functions, target-only calls).
    Buffer pointers may be in any address space: accesses keep the space of the buffer's pointer.
    """

    def __init__(self, module: ir.Module, builder: ir.IRBuilder, backend: Backend) -> None:
        self.module = module
        self.builder = builder
        self.backend = backend
        self.vars: dict[E.Var, ir.Value] = {}
        self.buffers: dict[Buffer, ir.Value] = {}
        self.mask: ir.Value | None = None  # lanes of a vector Select being evaluated
        self._safe_memo: dict[int, tuple[E.Expr, bool]] = {}  # id -> (node kept alive, is_safe)
        self.shared = SharedValues()  # cleared by the statement emitter at each statement
        self._table = {
            E.IntImm: self._const, E.FloatImm: self._const, E.Var: self._var,
            E.Add: self._arith, E.Sub: self._arith, E.Mul: self._arith, E.Div: self._div,
            E.FloorDiv: self._floordiv, E.FloorMod: self._floormod, E.Min: self._minmax,
            E.Max: self._minmax, E.And: self._logic, E.Or: self._logic, E.Not: self._not,
            E.Cast: self._cast, E.Select: self._select, E.Call: self._call, E.Ramp: self._ramp,
            E.Broadcast: self._broadcast, E.BufferLoad: self._load, E.Let: self._let,
        }
        for cls in _CMP:
            self._table[cls] = self._compare

    # entry ------------------------------------------------------------------------------------
    def expr(self, e: E.Expr) -> ir.Value:
        """Emit ``e`` and return its LLVM value (``i1`` for bool)."""
        method = self._table.get(type(e))
        if method is None:
            raise CodegenError(f"codegen: cannot emit expression {type(e).__name__} ({e})")
        if isinstance(e, NOT_SHARED):
            return method(e)
        value = self.shared.get(e, self.builder.block, self.mask)
        if value is None:
            value = method(e)
            self.shared.put(e, self.builder.block, self.mask, value)
        return value

    def declare(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        """Return the function ``name`` of this module, declaring it on first use."""
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name)
        return fn

    def splat(self, value: ir.Value, lanes: int) -> ir.Value:
        """Broadcast a scalar LLVM value to ``lanes`` lanes."""
        b = self.builder
        vt = ir.VectorType(value.type, lanes)
        if isinstance(value, ir.Constant):
            return ir.Constant(vt, [value] * lanes)
        first = b.insert_element(ir.Constant(vt, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
        zeros = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes)
        return b.shuffle_vector(first, ir.Constant(vt, ir.Undefined), zeros)

    # leaves -------------------------------------------------------------------------------------
    def _const(self, e: E.ConstExpr) -> ir.Value:
        return constant(e.dtype, e.value)

    def _var(self, e: E.Var) -> ir.Value:
        if e not in self.vars:
            raise CodegenError(f"codegen: variable {e.name!r} is used outside the statement that binds it")
        return self.vars[e]

    def _let(self, e: E.Let) -> ir.Value:
        with self.binding(e.var, self.expr(e.value)):
            return self.expr(e.body)

    @contextlib.contextmanager
    def binding(self, var: E.Var, value: ir.Value) -> Iterator[None]:
        """Bind ``var`` to ``value`` for the duration of a ``with`` block (restoring any outer binding)."""
        outer = self.vars.get(var)
        self.vars[var] = value
        self.shared.clear()
        try:
            yield
        finally:
            self.shared.clear()
            if outer is None:
                del self.vars[var]
            else:
                self.vars[var] = outer

    # arithmetic ---------------------------------------------------------------------------------
    def _arith(self, e: E.BinaryOp) -> ir.Value:
        a, b = self.expr(e.a), self.expr(e.b)
        t = dtype_of(e.dtype)
        op = {E.Add: "add", E.Sub: "sub", E.Mul: "mul"}[type(e)]
        if t.is_float:
            return getattr(self.builder, "f" + op)(a, b, flags=FLOAT_FLAGS)
        if isinstance(a, ir.Constant) and isinstance(b, ir.Constant) and t.lanes == 1:
            py = {"add": int.__add__, "sub": int.__sub__, "mul": int.__mul__}[op](a.constant, b.constant)
            return constant(e.dtype, _wrap(py, t.bits, t.code == "int"))
        flags = ("nsw",) if t.code == "int" and t.bits >= 32 else ()
        return getattr(self.builder, op)(a, b, flags=flags)

    def _divisor(self, e: E.Expr) -> ir.Value:
        """An integer divisor; lanes masked off by a vector Select divide by 1 instead (no trap)."""
        b = self.expr(e)
        if self.mask is None or _nonzero_constant(e):
            return b
        return self.builder.select(self.mask, b, constant(e.dtype, 1))

    def _div(self, e: E.Div) -> ir.Value:
        t = dtype_of(e.dtype)
        if t.is_float:
            return self.builder.fdiv(self.expr(e.a), self.expr(e.b))
        a, b = self.expr(e.a), self._divisor(e.b)
        return self.builder.sdiv(a, b) if t.code == "int" else self.builder.udiv(a, b)

    def _floor_parts(self, e: E.BinaryOp) -> tuple[ir.Value, ir.Value, ir.Value, ir.Value]:
        """Truncated quotient and remainder, the divisor, and whether they need a floor fix-up."""
        bld = self.builder
        a, b = self.expr(e.a), self._divisor(e.b)
        q, r = bld.sdiv(a, b), bld.srem(a, b)
        zero = constant(e.dtype, 0)
        divisor = e.b.value if isinstance(e.b, E.Broadcast) else e.b
        if isinstance(divisor, E.IntImm) and divisor.value > 0:
            fix = bld.icmp_signed("<", r, zero)
        else:
            nonzero = bld.icmp_signed("!=", r, zero)
            signs = bld.icmp_signed("!=", bld.icmp_signed("<", r, zero), bld.icmp_signed("<", b, zero))
            fix = bld.and_(nonzero, signs)
        return q, r, b, fix

    def _floordiv(self, e: E.FloorDiv) -> ir.Value:
        t = dtype_of(e.dtype)
        if t.is_float:
            return self._float_call("floor", e.dtype, [self.builder.fdiv(self.expr(e.a), self.expr(e.b))])
        if t.code != "int":
            return self.builder.udiv(self.expr(e.a), self._divisor(e.b))
        q, _, _, fix = self._floor_parts(e)
        return self.builder.sub(q, self.builder.zext(fix, q.type))

    def _floormod(self, e: E.FloorMod) -> ir.Value:
        t = dtype_of(e.dtype)
        bld = self.builder
        if t.is_float:
            a, b = self.expr(e.a), self.expr(e.b)
            fl = self._float_call("floor", e.dtype, [bld.fdiv(a, b)])
            return bld.fsub(a, bld.fmul(fl, b))
        if t.code != "int":
            return bld.urem(self.expr(e.a), self._divisor(e.b))
        _, r, b, fix = self._floor_parts(e)
        return bld.select(fix, bld.add(r, b), r)

    def _minmax(self, e: E.BinaryOp) -> ir.Value:
        a, b = self.expr(e.a), self.expr(e.b)
        op = "<" if isinstance(e, E.Min) else ">"
        return self.builder.select(self._cmp(op, e.a.dtype, a, b), a, b)

    def _cmp(self, op: str, dtype: str, a: ir.Value, b: ir.Value) -> ir.Value:
        t = dtype_of(dtype)
        if t.is_float:
            if op == "!=":
                return self.builder.fcmp_unordered(op, a, b)
            return self.builder.fcmp_ordered(op, a, b)
        if t.code == "int":
            return self.builder.icmp_signed(op, a, b)
        return self.builder.icmp_unsigned(op, a, b)

    def _compare(self, e: E.CmpOp) -> ir.Value:
        return self._cmp(_CMP[type(e)], e.a.dtype, self.expr(e.a), self.expr(e.b))

    def _logic(self, e: E.BinaryOp) -> ir.Value:
        a, b = self.expr(e.a), self.expr(e.b)
        return self.builder.and_(a, b) if isinstance(e, E.And) else self.builder.or_(a, b)

    def _not(self, e: E.Not) -> ir.Value:
        a = self.expr(e.a)
        if dtype_of(e.dtype).is_bool:
            return self.builder.xor(a, constant(e.dtype, 1))
        return self.builder.not_(a)

    # conversions and vectors -------------------------------------------------------------------
    def _cast(self, e: E.Cast) -> ir.Value:
        src, dst = dtype_of(e.value.dtype), dtype_of(e.dtype)
        v = self.expr(e.value)
        if src.lanes == 1 and dst.lanes > 1:
            v = self.splat(v, dst.lanes)
        return convert(self.builder, v, src.with_lanes(dst.lanes), e.dtype)

    def _ramp(self, e: E.Ramp) -> ir.Value:
        base = self.splat(self.expr(e.base), e.lanes)
        stride = self.expr(e.stride)
        vdtype = dtype_of(e.dtype)
        if isinstance(stride, ir.Constant):
            steps = constant(vdtype.element, 0).type
            offs = ir.Constant(ir.VectorType(steps, e.lanes), [i * stride.constant for i in range(e.lanes)])
        else:
            lanes = ir.Constant(value_type(e.dtype), list(range(e.lanes)))
            offs = self.builder.mul(lanes, self.splat(stride, e.lanes))
        return self.builder.add(base, offs)

    def _broadcast(self, e: E.Broadcast) -> ir.Value:
        return self.splat(self.expr(e.value), e.lanes)

    # control-dependent values ---------------------------------------------------------------------
    def _select(self, e: E.Select) -> ir.Value:
        bld = self.builder
        cond_lanes = dtype_of(e.condition.dtype).lanes
        if self._safe(e.true_value) and self._safe(e.false_value):
            cond = self.expr(e.condition)
            t, f = self.expr(e.true_value), self.expr(e.false_value)
            if cond_lanes == 1 and isinstance(t.type, ir.VectorType):
                cond = self.splat(cond, t.type.count)
            return bld.select(cond, t, f)
        cond = self.expr(e.condition)
        if cond_lanes > 1:
            return self._masked_select(cond, e)
        with bld.if_else(cond) as (then, otherwise):
            with then:
                t = self.expr(e.true_value)
                t_block = bld.block
            with otherwise:
                f = self.expr(e.false_value)
                f_block = bld.block
        phi = bld.phi(t.type)
        phi.add_incoming(t, t_block)
        phi.add_incoming(f, f_block)
        return phi

    def _safe(self, e: E.Expr) -> bool:
        """True when evaluating ``e`` cannot fault: it reads no memory and divides no integers
        (remembered for every node below ``e``: nested Selects ask again)."""
        hit = self._safe_memo.get(id(e))
        if hit is not None:
            return hit[1]
        if isinstance(e, E.BufferLoad) or (
                isinstance(e, (E.Div, E.FloorDiv, E.FloorMod)) and not dtype_of(e.dtype).is_float
                and not _nonzero_constant(e.b)):
            safe = False
        else:
            safe = all(self._safe_field(getattr(e, f)) for f in getattr(e, "_fields", ()))
        self._safe_memo[id(e)] = (e, safe)
        return safe

    def _safe_field(self, value: object) -> bool:
        if isinstance(value, tuple):
            return all(self._safe_field(v) for v in value)
        return self._safe(value) if hasattr(value, "_fields") else True  # type: ignore[arg-type]

    def _masked_select(self, cond: ir.Value, e: E.Select) -> ir.Value:
        bld = self.builder
        outer = self.mask
        inverse = bld.xor(cond, ir.Constant(cond.type, [1] * cond.type.count))
        try:
            self.mask = cond if outer is None else bld.and_(outer, cond)
            t = self.expr(e.true_value)
            self.mask = inverse if outer is None else bld.and_(outer, inverse)
            f = self.expr(e.false_value)
        finally:
            self.mask = outer
        return bld.select(cond, t, f)

    # memory ------------------------------------------------------------------------------------
    def base_pointer(self, buffer: Buffer) -> ir.Value:
        """The LLVM pointer to the first element of ``buffer``."""
        ptr = self.buffers.get(buffer)
        if ptr is None:
            raise CodegenError(f"codegen: buffer {buffer.name!r} is neither a parameter nor allocated here")
        return ptr

    def element_pointer(self, buffer: Buffer, index: ir.Value, index_dtype: str) -> ir.Value:
        """``&buffer[index]`` for a scalar index, or the ``<N x ptr>`` of a vector index."""
        t = dtype_of(index_dtype)
        wide = I64 if t.lanes == 1 else ir.VectorType(I64, t.lanes)
        if isinstance(index, ir.Constant) and t.lanes == 1:
            index = ir.Constant(I64, index.constant)
        elif t.bits < 64:
            index = self.builder.sext(index, wide) if t.code == "int" else self.builder.zext(index, wide)
        ptr = self.builder.gep(self.base_pointer(buffer), [index], inbounds=True,
                               source_etype=memory_type(buffer.dtype))
        if t.lanes > 1:  # llvmlite does not infer vector GEP results
            ptr.type = ir.VectorType(self.base_pointer(buffer).type, t.lanes)
        return ptr

    def _load(self, e: E.BufferLoad) -> ir.Value:
        bld = self.builder
        buf = e.buffer
        index = single_index(e)
        lanes = dtype_of(e.dtype).lanes
        align = element_bytes(buf.dtype)
        if lanes == 1:
            if self.mask is not None:
                return self._guarded_scalar_load(e)
            ptr = self.element_pointer(buf, self.expr(index), index.dtype)
            raw = bld.load(ptr, typ=memory_type(buf.dtype), align=align)
        elif unit_stride(index):
            ptr = self.element_pointer(buf, self.expr(index.base), index.base.dtype)
            vt = memory_type(e.dtype)
            if self.mask is None:
                raw = bld.load(ptr, typ=vt, align=align)
            else:
                fn = emit_intrinsic.declare(self, "llvm.masked.load", vt,
                                            [ptr.type, ir.IntType(32), self.mask.type, vt], [vt, ptr.type])
                raw = bld.call(fn, [ptr, ir.Constant(ir.IntType(32), align), self.mask,
                                    ir.Constant(vt, None)])
        else:
            ptrs = self.element_pointer(buf, self.expr(index), index.dtype)
            vt = memory_type(e.dtype)
            mask = self.mask if self.mask is not None else ir.Constant(ir.VectorType(I1, lanes), [1] * lanes)
            fn = emit_intrinsic.declare(self, "llvm.masked.gather", vt,
                                    [ptrs.type, ir.IntType(32), mask.type, vt], [vt, ptrs.type])
            raw = bld.call(fn, [ptrs, ir.Constant(ir.IntType(32), align), mask, ir.Constant(vt, None)])
        return from_memory(bld, raw, e.dtype)

    def _guarded_scalar_load(self, e: E.BufferLoad) -> ir.Value:
        """A scalar load under a vector mask: performed only when some lane is active."""
        bld = self.builder
        mask, self.mask = self.mask, None
        try:
            red = emit_intrinsic.declare(self, "llvm.vector.reduce.or", I1, [mask.type], [mask.type])
            any_lane = bld.call(red, [mask])
            with bld.if_else(any_lane) as (then, otherwise):
                with then:
                    v = self.expr(e)
                    v_block = bld.block
                with otherwise:
                    o_block = bld.block
            phi = bld.phi(v.type)
            phi.add_incoming(v, v_block)
            phi.add_incoming(ir.Constant(v.type, None), o_block)
            return phi
        finally:
            self.mask = mask

    # calls -----------------------------------------------------------------------------------------
    def _call(self, e: E.Call) -> ir.Value:
        return emit_intrinsic.emit_call(self, e)

    def _float_call(self, name: str, dtype: str, args: list[ir.Value]) -> ir.Value:
        return self.backend.math_call(self, name, dtype, args)


def unit_stride(index: E.Expr) -> bool:
    """True for a ``Ramp(base, 1, lanes)`` index: one contiguous vector access."""
    return isinstance(index, E.Ramp) and isinstance(index.stride, E.IntImm) and index.stride.value == 1


def single_index(e: E.BufferLoad) -> E.Expr:
    """The one flat index of a load or store (codegen runs after flattening)."""
    if len(e.indices) != 1:
        raise CodegenError(f"codegen: access to {e.buffer.name!r} has {len(e.indices)} indices; "
                           "expected one flat index after flattening")
    return e.indices[0]


def _wrap(value: int, bits: int, signed: bool) -> int:
    """Two's-complement wrap of a Python int to ``bits`` bits."""
    value &= (1 << bits) - 1
    if signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value
