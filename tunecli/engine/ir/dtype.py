"""Data types as TVM spells them: ``float32``, ``int8``, ``bool``, and vector forms ``float32x16``."""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from tunecli.errors import ExprError

_PATTERN = re.compile(r"^(float|int|uint|bool)(\d*)(?:x(\d+))?$")


@dataclass(frozen=True)
class DataType:
    """A parsed dtype: ``code`` is float/int/uint/bool, ``bits`` its width, ``lanes`` its vector length."""

    code: str
    bits: int
    lanes: int = 1

    @property
    def is_float(self) -> bool:
        return self.code == "float"

    @property
    def is_int(self) -> bool:
        return self.code in ("int", "uint")

    @property
    def is_bool(self) -> bool:
        return self.code == "bool"

    @property
    def element(self) -> str:
        """The scalar dtype string of this (possibly vector) type."""
        return "bool" if self.is_bool else f"{self.code}{self.bits}"

    def with_lanes(self, lanes: int) -> str:
        """Return the dtype string of this element type with ``lanes`` lanes."""
        return self.element if lanes == 1 else f"{self.element}x{lanes}"

    def __str__(self) -> str:
        return self.with_lanes(self.lanes)


@functools.cache
def parse_dtype(dtype: str) -> DataType:
    """Parse a dtype string; raise ExprError naming it when it is not one."""
    match = _PATTERN.match(str(dtype))
    if not match:
        raise ExprError(f"unknown dtype {dtype!r}: expected e.g. float32, float64, int32, int8, bool")
    code, bits, lanes = match.groups()
    if code == "bool":
        nbits = 1
    else:
        nbits = int(bits) if bits else 32
        allowed = (16, 32, 64) if code == "float" else (8, 16, 32, 64)
        if nbits not in allowed:
            raise ExprError(f"unsupported dtype {dtype!r}")
    return DataType(code, nbits, int(lanes) if lanes else 1)


def lanes_of(dtype: str) -> int:
    """Number of vector lanes of a dtype string."""
    return parse_dtype(dtype).lanes


def element_of(dtype: str) -> str:
    """Scalar element dtype string of a (vector) dtype string."""
    return parse_dtype(dtype).element


def promote(a: str, b: str) -> str:
    """The dtype two scalar operands are computed in: wider float wins, float beats int, wider int wins."""
    if a == b:
        return a
    ta, tb = parse_dtype(a), parse_dtype(b)
    lanes = max(ta.lanes, tb.lanes)
    if ta.is_float or tb.is_float:
        bits = max(t.bits for t in (ta, tb) if t.is_float)
        return DataType("float", bits).with_lanes(lanes)
    if ta.is_bool and tb.is_bool:
        return DataType("bool", 1).with_lanes(lanes)
    ints = [t for t in (ta, tb) if t.is_int] or [ta]
    widest = max(ints, key=lambda t: t.bits)
    return DataType(widest.code, max(t.bits for t in ints)).with_lanes(lanes)


def min_of(dtype: str) -> int | float:
    """The smallest value of a scalar dtype (-inf for floats, 0 for bool and unsigned types)."""
    t = parse_dtype(dtype)
    if t.is_float:
        return -math.inf
    if t.code == "uint" or t.is_bool:
        return 0
    return -(1 << (t.bits - 1))


def max_of(dtype: str) -> int | float:
    """The largest value of a scalar dtype (+inf for floats, 1 for bool)."""
    t = parse_dtype(dtype)
    if t.is_float:
        return math.inf
    if t.is_bool:
        return 1
    return (1 << (t.bits if t.code == "uint" else t.bits - 1)) - 1
