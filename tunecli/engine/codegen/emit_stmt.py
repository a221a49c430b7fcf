"""Emission of IR statements: loops, stores, allocations, conditionals, for every backend.

By the time a statement reaches :class:`StmtEmitter`, unrolled loops have been expanded and
vectorized loops rewritten to Ramp/Broadcast vector code (``transform.unroll``,
``transform.vectorize``); loops of those kinds that remain (non-constant extents) run as serial
loops.  The backend emits the loops its target runs otherwise (``parallel`` loops on a CPU,
thread-bound loops on a GPU) and places allocations; :meth:`StmtEmitter.alloca` puts a stack
array in the function's entry block (64-byte aligned, so SROA/mem2reg turn local accumulators
into registers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from llvmlite import ir

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.errors import CodegenError

from . import emit_intrinsic
from .convert import convert, to_memory
from .emit_expr import ExprEmitter, single_index, unit_stride
from .llvm_types import PTR, VOID, dtype_of, element_bytes, memory_type, value_type

if TYPE_CHECKING:
    from tunecli.engine.target import Target

    from .backend import Backend
    from .compiled_kernel import LaunchShape

ALIGN = 64


@dataclass
class FunctionContext:
    """Per-module state shared by the kernel and the functions outlined from it.

    ``num_threads`` and ``outlined`` belong to the CPU's parallel loops; ``launch`` is set by a
    GPU backend when it declares the kernel; ``target`` (when known) lets an emitter use the
    target's own instructions (``vector_math``).
    """

    module: ir.Module
    entry_name: str
    backend: Backend
    num_threads: ir.GlobalVariable | None = None
    outlined: list[str] = field(default_factory=list)
    launch: LaunchShape | None = None
    target: Target | None = None


class StmtEmitter(ExprEmitter):
    """Emit the statements of one LLVM function.

    Parameters
    ----------
    ctx : FunctionContext
        The module being built.
    function : llvmlite.ir.Function
        The function to emit into; its entry block is created here.
    in_parallel : bool
        True inside an outlined parallel body (nested parallel loops then run serially).
    """

    def __init__(self, ctx: FunctionContext, function: ir.Function, in_parallel: bool = False) -> None:
        entry = function.append_basic_block("entry")  # holds only allocas, then jumps to "body"
        body = function.append_basic_block("body")
        self._allocas = ir.IRBuilder(entry)
        self._entry_jump = self._allocas.branch(body)
        super().__init__(ctx.module, ir.IRBuilder(body), ctx.backend)
        self.ctx = ctx
        self.function = function
        self.in_parallel = in_parallel
        self._stmt_table = {
            S.SeqStmt: self._seq, S.For: self._for, S.BufferStore: self._store, S.Allocate: self._allocate,
            S.IfThenElse: self._if, S.LetStmt: self._let_stmt, S.Evaluate: self._evaluate,
        }

    def stmt(self, s: S.Stmt) -> None:
        """Emit statement ``s`` at the builder's position."""
        method = self._stmt_table.get(type(s))
        if method is None:
            raise CodegenError(f"codegen: cannot emit statement {type(s).__name__}")
        self.shared.forget_reads()
        method(s)

    def alloca(self, ty: ir.Type, align: int = ALIGN) -> ir.Value:
        """An ``alloca`` of ``ty`` placed at the start of the entry block."""
        self._allocas.position_before(self._entry_jump)
        slot = self._allocas.alloca(ty)
        slot.align = align
        slot.type = PTR  # opaque pointer: accesses give their own element type
        return slot

    def stack_array(self, buffer: S.Buffer) -> ir.Value:
        """An ``alloca`` holding all elements of ``buffer`` (at least one)."""
        return self.alloca(ir.ArrayType(memory_type(buffer.dtype), max(buffer.size, 1)))

    # statements ---------------------------------------------------------------------------------
    def _seq(self, s: S.SeqStmt) -> None:
        for item in s.stmts:
            self.stmt(item)

    def _evaluate(self, s: S.Evaluate) -> None:
        if not isinstance(s.value, E.ConstExpr):
            self.expr(s.value)

    def _let_stmt(self, s: S.LetStmt) -> None:
        with self.binding(s.var, self.expr(s.value)):
            self.stmt(s.body)

    def _if(self, s: S.IfThenElse) -> None:
        cond = self.expr(s.condition)
        bld = self.builder
        if dtype_of(s.condition.dtype).lanes != 1:
            self._masked_if(cond, s)
            return
        if s.else_case is None:
            with bld.if_then(cond):
                self.stmt(s.then_case)
            return
        with bld.if_else(cond) as (then, otherwise):
            with then:
                self.stmt(s.then_case)
            with otherwise:
                self.stmt(s.else_case)

    def _masked_if(self, cond: ir.Value, s: S.IfThenElse) -> None:
        """An ``if`` with a vector condition: both cases run with their loads and stores masked."""
        bld = self.builder
        outer = self.mask
        try:
            self.mask = cond if outer is None else bld.and_(outer, cond)
            self.stmt(s.then_case)
            if s.else_case is not None:
                inverse = bld.xor(cond, ir.Constant(cond.type, [1] * cond.type.count))
                self.mask = inverse if outer is None else bld.and_(outer, inverse)
                self.stmt(s.else_case)
        finally:
            self.mask = outer

    def _store(self, s: S.BufferStore) -> None:
        bld = self.builder
        buf = s.buffer
        index = single_index(s)
        value_lanes = dtype_of(s.value.dtype).lanes
        index_lanes = dtype_of(index.dtype).lanes
        if value_lanes != index_lanes and value_lanes != 1:
            raise CodegenError(f"codegen: store to {buf.name!r} writes {value_lanes} lanes at "
                               f"{index_lanes} index lanes")
        if dtype_of(s.value.dtype).element != dtype_of(buf.dtype).element:
            raise CodegenError(f"codegen: store of a {s.value.dtype} value into {buf.name!r} "
                               f"of dtype {buf.dtype}")
        value = self.expr(s.value)
        if value_lanes == 1 and index_lanes > 1:
            value = self.splat(value, index_lanes)
        value = to_memory(bld, value, dtype_of(buf.dtype).with_lanes(index_lanes))
        align = element_bytes(buf.dtype)
        contiguous = unit_stride(index)
        if self.mask is not None:
            self._masked_store(buf, index, value, contiguous)
        elif index_lanes == 1:
            bld.store(value, self.element_pointer(buf, self.expr(index), index.dtype), align=align)
        elif contiguous:
            bld.store(value, self.element_pointer(buf, self.expr(index.base), index.base.dtype), align=align)
        else:  # scatter, lane by lane in order (later lanes win on equal addresses)
            ptrs = self.element_pointer(buf, self.expr(index), index.dtype)
            for lane in range(index_lanes):
                k = ir.Constant(ir.IntType(32), lane)
                bld.store(bld.extract_element(value, k), bld.extract_element(ptrs, k), align=align)

    def _masked_store(self, buf: S.Buffer, index: E.Expr, value: ir.Value, contiguous: bool) -> None:
        """Store the lanes of ``value`` selected by the current mask (``llvm.masked.store/scatter``)."""
        mask = self.mask
        assert mask is not None
        if dtype_of(index.dtype).lanes != mask.type.count:
            raise CodegenError(f"codegen: store to {buf.name!r} at a lane-invariant address under a "
                               "lane-dependent condition")
        align = ir.Constant(ir.IntType(32), element_bytes(buf.dtype))
        if contiguous:
            ptr = self.element_pointer(buf, self.expr(index.base), index.base.dtype)
            fn = emit_intrinsic.declare(self, "llvm.masked.store", VOID,
                                        [value.type, ptr.type, align.type, mask.type], [value.type, ptr.type])
            self.builder.call(fn, [value, ptr, align, mask])
            return
        ptrs = self.element_pointer(buf, self.expr(index), index.dtype)
        fn = emit_intrinsic.declare(self, "llvm.masked.scatter", VOID,
                                [value.type, ptrs.type, align.type, mask.type], [value.type, ptrs.type])
        self.builder.call(fn, [value, ptrs, align, mask])

    def _allocate(self, s: S.Allocate) -> None:
        buf = s.buffer
        if buf in self.buffers:
            raise CodegenError(f"codegen: buffer {buf.name!r} is allocated twice")
        ptr, release = self.backend.allocate(self, buf)
        self.buffers[buf] = ptr
        try:
            self.stmt(s.body)
        finally:
            del self.buffers[buf]
        if release is not None:
            release()

    # loops ------------------------------------------------------------------------------------------
    def _for(self, s: S.For) -> None:
        if self.backend.emit_loop(self, s):
            return
        ty = value_type(s.loop_var.dtype)
        lo = self.loop_bound(s.min, s.loop_var.dtype)
        hi = self.builder.add(lo, self.loop_bound(s.extent, s.loop_var.dtype))
        self.emit_range_loop(s.loop_var, lo, hi, lambda: self.stmt(s.body), ty)

    def loop_bound(self, e: E.Expr, dtype: str) -> ir.Value:
        """Emit a loop bound converted to the loop variable's dtype."""
        return convert(self.builder, self.expr(e), e.dtype, dtype)

    def emit_range_loop(self, var: E.Var, lo: ir.Value, hi: ir.Value, body: Callable[[], None],
                        ty: ir.Type) -> None:
        """Emit ``for var in [lo, hi): body()`` with a phi for ``var``."""
        bld = self.builder
        pre = bld.block
        header = self.function.append_basic_block("for_header")
        body_block = self.function.append_basic_block("for_body")
        exit_block = self.function.append_basic_block("for_exit")
        bld.branch(header)
        bld.position_at_end(header)
        i = bld.phi(ty)
        i.add_incoming(lo, pre)
        bld.cbranch(bld.icmp_signed("<", i, hi), body_block, exit_block)
        bld.position_at_end(body_block)
        with self.binding(var, i):
            body()
        nxt = bld.add(i, ir.Constant(ty, 1), flags=("nsw",))
        i.add_incoming(nxt, bld.block)
        bld.branch(header)
        bld.position_at_end(exit_block)
