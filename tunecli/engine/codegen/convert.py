"""Conversions of LLVM values between dtypes, and between register and memory forms.

Casts follow numpy's C-cast rules (truncation toward zero for float → int, sign or zero
extension by the source's signedness); booleans are ``i1`` in registers and ``i8`` in memory.
"""

from __future__ import annotations

from llvmlite import ir

from .llvm_types import dtype_of, memory_type, value_type


def from_memory(builder: ir.IRBuilder, raw: ir.Value, dtype: str) -> ir.Value:
    """Turn a value loaded from memory into its register form (bytes → i1 for bool)."""
    if not dtype_of(dtype).is_bool:
        return raw
    return builder.icmp_unsigned("!=", raw, ir.Constant(raw.type, None))


def to_memory(builder: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
    """Turn a register value into its memory form (i1 → i8 for bool)."""
    if not dtype_of(dtype).is_bool:
        return value
    return builder.zext(value, memory_type(dtype))


def convert(builder: ir.IRBuilder, v: ir.Value, src_dtype: str, dst_dtype: str) -> ir.Value:
    """Convert ``v`` from ``src_dtype`` to ``dst_dtype`` (same lanes), numpy's C-cast rules."""
    src, dst = dtype_of(src_dtype), dtype_of(dst_dtype)
    ty = value_type(dst_dtype)
    if (src.code, src.bits) == (dst.code, dst.bits):
        return v
    if dst.is_bool:
        zero = ir.Constant(v.type, None)
        if src.is_float:
            return builder.fcmp_unordered("!=", v, zero)
        return builder.icmp_unsigned("!=", v, zero)
    if src.is_float and dst.is_float:
        return builder.fpext(v, ty) if dst.bits > src.bits else builder.fptrunc(v, ty)
    if src.is_float:
        return builder.fptosi(v, ty) if dst.code == "int" else builder.fptoui(v, ty)
    if dst.is_float:
        return builder.sitofp(v, ty) if src.code == "int" else builder.uitofp(v, ty)
    if dst.bits == src.bits:
        return v
    if dst.bits < src.bits:
        return builder.trunc(v, ty)
    return builder.sext(v, ty) if src.code == "int" else builder.zext(v, ty)
