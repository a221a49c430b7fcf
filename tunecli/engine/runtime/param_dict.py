"""TVM's parameter files (``relay.save_param_dict`` / ``load_param_dict``, ``runtime.save_param_dict``):
named arrays in TVM's binary layout, so files written by either tool load in the other.

Layout (little-endian): the list magic and a reserved u64; the names (a u64 count, then each a
u64 length and its UTF-8 bytes); the arrays (a u64 count, then each: the array magic, a reserved
u64, the device as two i32 (CPU, 0), the rank as i32, the dtype as u8 code, u8 bits, u16 lanes,
the shape as i64s, the data's byte size as i64, the data in C order).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

import numpy as np

from tunecli.errors import ArgumentError

from .ndarray import NDArray

LIST_MAGIC = 0xF7E58D4F05049CB7
ARRAY_MAGIC = 0xDD5E40F096B4A13F
_CPU = 1
# DLPack type codes
_INT, _UINT, _FLOAT = 0, 1, 2


def _dtype_code(dtype: np.dtype, name: str) -> tuple[int, int]:
    if dtype == np.bool_:
        return _UINT, 1
    kind = {"i": _INT, "u": _UINT, "f": _FLOAT}.get(dtype.kind)
    if kind is None:
        raise ArgumentError(f"save_param_dict: parameter {name!r} has dtype {dtype}, not an int, uint, "
                            "float or bool")
    return kind, dtype.itemsize * 8


def _numpy_dtype(code: int, bits: int, lanes: int) -> np.dtype:
    if lanes != 1:
        raise ArgumentError(f"load_param_dict: vector dtype of {lanes} lanes is not supported")
    if code == _UINT and bits == 1:
        return np.dtype(np.bool_)
    kind = {_INT: "i", _UINT: "u", _FLOAT: "f"}.get(code)
    if kind is None or bits % 8:
        raise ArgumentError(f"load_param_dict: unknown dtype (code {code}, {bits} bits)")
    return np.dtype(f"<{kind}{bits // 8}")


def save_param_dict(params: Mapping[str, object]) -> bytearray:
    """The bytes of ``params`` (name -> array: NDArray, numpy array or anything ``numpy.asarray``
    takes) in TVM's parameter-file layout."""
    out = bytearray(struct.pack("<QQ", LIST_MAGIC, 0))
    names = list(params)
    out += struct.pack("<Q", len(names))
    for name in names:
        encoded = str(name).encode("utf-8")
        out += struct.pack("<Q", len(encoded)) + encoded
    out += struct.pack("<Q", len(names))
    for name in names:
        data = np.ascontiguousarray(np.asarray(params[name]))
        code, bits = _dtype_code(data.dtype, name)
        out += struct.pack("<QQiiiBBH", ARRAY_MAGIC, 0, _CPU, 0, data.ndim, code, bits, 1)
        out += struct.pack(f"<{data.ndim}q", *data.shape)
        raw = data.astype(data.dtype.newbyteorder("<"), copy=False).tobytes()
        out += struct.pack("<q", len(raw)) + raw
    return out


class _Reader:
    def __init__(self, blob: bytes):
        self.blob, self.pos = memoryview(blob), 0

    def take(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.blob):
            raise ArgumentError(f"load_param_dict: the data ends after {len(self.blob)} bytes, inside a "
                                "record")
        values = struct.unpack_from(fmt, self.blob, self.pos)
        self.pos += size
        return values

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.blob):
            raise ArgumentError(f"load_param_dict: an array of {size} bytes runs past the end of the data")
        data = bytes(self.blob[self.pos:self.pos + size])
        self.pos += size
        return data


def load_param_dict(blob: bytes | bytearray) -> dict[str, NDArray]:
    """The named arrays of a parameter file's bytes (ArgumentError when they are not one)."""
    r = _Reader(bytes(blob))
    magic, _ = r.take("<QQ")
    if magic != LIST_MAGIC:
        raise ArgumentError("load_param_dict: not a TVM parameter file (wrong magic number)")
    (count,) = r.take("<Q")
    names = [r.raw(r.take("<Q")[0]).decode("utf-8") for _ in range(count)]
    (arrays,) = r.take("<Q")
    if arrays != count:
        raise ArgumentError(f"load_param_dict: {count} names but {arrays} arrays")
    out: dict[str, NDArray] = {}
    for name in names:
        magic, _, _, _, ndim, code, bits, lanes = r.take("<QQiiiBBH")
        if magic != ARRAY_MAGIC:
            raise ArgumentError(f"load_param_dict: array {name!r} has a wrong magic number")
        shape = r.take(f"<{ndim}q")
        dtype = _numpy_dtype(code, bits, lanes)
        (size,) = r.take("<q")
        data = np.frombuffer(r.raw(size), dtype=dtype)
        if data.size != int(np.prod(shape, dtype=np.int64)):
            raise ArgumentError(f"load_param_dict: array {name!r} holds {data.size} values for shape {shape}")
        out[name] = np.array(data.reshape(shape)).view(NDArray)
    return out


__all__ = ["load_param_dict", "save_param_dict"]
