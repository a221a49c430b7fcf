"""Mapping of IR dtypes to LLVM types and constants.

Booleans are ``i1`` in registers and one byte (``i8``) in memory, as numpy stores them.
"""

from __future__ import annotations

import functools

from llvmlite import ir

from tunecli.engine.ir.dtype import DataType, parse_dtype
from tunecli.errors import CodegenError

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()

_SCALAR = {
    ("float", 16): ir.HalfType(),
    ("float", 32): ir.FloatType(),
    ("float", 64): ir.DoubleType(),
    ("int", 8): I8, ("int", 16): ir.IntType(16), ("int", 32): I32, ("int", 64): I64,
    ("uint", 8): I8, ("uint", 16): ir.IntType(16), ("uint", 32): I32, ("uint", 64): I64,
    ("bool", 1): I1,
}


@functools.cache
def dtype_of(dtype: str) -> DataType:
    """Parse ``dtype``; raise CodegenError naming it when codegen cannot handle it."""
    t = parse_dtype(dtype)
    if (t.code, t.bits) not in _SCALAR:
        raise CodegenError(f"codegen: dtype {dtype!r} is not supported by the LLVM backend")
    return t


@functools.cache
def value_type(dtype: str) -> ir.Type:
    """LLVM type of a value of ``dtype`` in registers (``<N x T>`` for vector dtypes)."""
    t = dtype_of(dtype)
    scalar = _SCALAR[(t.code, t.bits)]
    return scalar if t.lanes == 1 else ir.VectorType(scalar, t.lanes)


@functools.cache
def memory_type(dtype: str) -> ir.Type:
    """LLVM type of a value of ``dtype`` in memory (bool is ``i8``)."""
    t = dtype_of(dtype)
    scalar = I8 if t.is_bool else _SCALAR[(t.code, t.bits)]
    return scalar if t.lanes == 1 else ir.VectorType(scalar, t.lanes)


def element_bytes(dtype: str) -> int:
    """Size in bytes of one element of ``dtype`` in memory."""
    t = dtype_of(dtype)
    return 1 if t.is_bool else t.bits // 8


def constant(dtype: str, value: float | int) -> ir.Constant:
    """An LLVM constant of the scalar or vector ``dtype`` (vectors are splats)."""
    t = dtype_of(dtype)
    scalar = _SCALAR[(t.code, t.bits)]
    if t.is_float:
        c = ir.Constant(scalar, float(value))
    else:
        v = int(value)
        if t.code == "uint" and v < 0:
            v &= (1 << t.bits) - 1
        c = ir.Constant(scalar, v)
    if t.lanes == 1:
        return c
    return ir.Constant(ir.VectorType(scalar, t.lanes), [c] * t.lanes)
