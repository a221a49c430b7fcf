"""Argument arrays of a measured kernel: reproducible random inputs, outputs before a guard page.

A kernel that writes one element past the end of an output returns normally and corrupts
memory silently. Each output therefore lives in its own anonymous ``mmap`` whose last page is
made ``PROT_NONE``, with the array ending at that page (its start rounded down to 64 bytes,
the alignment TVM promises kernels): an overrun of a 64-byte multiple array faults at the
first byte past its end (SIGSEGV), and a worker process reports that as a runtime error.
"""

from __future__ import annotations

import ctypes
import math
import mmap
from collections.abc import Iterable, Sequence

import numpy as np

#: Alignment of every argument's start, in bytes (TVM's ``kAllocAlignment``).
ALIGNMENT = 64

ArgSpecT = tuple[tuple[int, ...], str]

_PROT_NONE = 0
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def normalize_arg_specs(specs: Iterable[object]) -> tuple[ArgSpecT, ...]:
    """Return ``((shape, dtype), ...)`` from ArgSpec objects, ``(shape, dtype)`` or ``(name, shape, dtype)``.

    Parameters
    ----------
    specs : iterable
        One entry per kernel argument.

    Returns
    -------
    tuple of (tuple of int, str)
    """
    out = []
    for spec in specs:
        if hasattr(spec, "shape") and hasattr(spec, "dtype"):
            shape, dtype = spec.shape, spec.dtype  # type: ignore[attr-defined]
        else:
            shape, dtype = spec[-2], spec[-1]  # type: ignore[index]
        out.append((tuple(int(d) for d in shape), str(dtype)))
    return tuple(out)


def output_indices_of(specs: Sequence[object]) -> tuple[int, ...]:
    """Indices of the output arguments: those flagged ``is_output``, else the last one.

    Parameters
    ----------
    specs : sequence
        ArgSpec-like objects (an ``is_output`` attribute is used when present).

    Returns
    -------
    tuple of int
    """
    flagged = tuple(i for i, s in enumerate(specs) if getattr(s, "is_output", False))
    return flagged or ((len(specs) - 1,) if specs else ())


def guarded_empty(shape: Sequence[int], dtype: str) -> np.ndarray:
    """Return an uninitialised array that ends just before a ``PROT_NONE`` page.

    Parameters
    ----------
    shape : sequence of int
    dtype : str

    Returns
    -------
    numpy.ndarray
        Writable, C-contiguous, 64-byte aligned; it keeps its mapping alive.
    """
    dt = np.dtype(dtype)
    count = math.prod(shape)
    nbytes = count * dt.itemsize
    page = mmap.PAGESIZE
    data_pages = max(1, -(-nbytes // page))
    region = mmap.mmap(-1, (data_pages + 1) * page)
    anchor = ctypes.c_char.from_buffer(region)
    base = ctypes.addressof(anchor)
    del anchor  # release the buffer export; the address stays valid while ``region`` lives
    if _libc.mprotect(base + data_pages * page, page, _PROT_NONE) != 0:
        raise OSError(ctypes.get_errno(), "mprotect of the guard page failed")
    offset = data_pages * page - nbytes
    offset -= offset % ALIGNMENT
    return np.frombuffer(region, dtype=dt, count=count, offset=offset).reshape(tuple(shape))


def random_array(shape: Sequence[int], dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Random contents for one argument: floats in [0, 1), integers in [0, 8), booleans 0/1."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.random(tuple(shape)).astype(dt)
    if dt.kind in "iu":
        return rng.integers(0, 8, size=tuple(shape)).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=tuple(shape)).astype(dt)
    raise ValueError(f"measure: unsupported argument dtype {dtype!r}")


def random_arguments(arg_specs: Sequence[ArgSpecT], seed: int) -> list[np.ndarray]:
    """Make one array per ``(shape, dtype)`` with reproducible random contents.

    The same ``seed`` and specs give the same arrays in every process, so a reference can be
    computed away from the kernel (in the tuner, or on an RPC client).

    Parameters
    ----------
    arg_specs : sequence of (shape, dtype)
    seed : int

    Returns
    -------
    list of numpy.ndarray
    """
    rng = np.random.default_rng(seed)
    return [random_array(shape, dtype, rng) for shape, dtype in arg_specs]


def kernel_arguments(arg_specs: Sequence[ArgSpecT], seed: int,
                     output_indices: Iterable[int]) -> list[np.ndarray]:
    """Random arguments where each output is a copy placed before a guard page.

    Parameters
    ----------
    arg_specs : sequence of (shape, dtype)
    seed : int
    output_indices : iterable of int

    Returns
    -------
    list of numpy.ndarray
    """
    arrays = random_arguments(arg_specs, seed)
    for index in output_indices:
        guarded = guarded_empty(*arg_specs[index])
        guarded[...] = arrays[index]
        arrays[index] = guarded
    return arrays


def poison(array: np.ndarray) -> None:
    """Fill ``array`` with a value a correct kernel overwrites: NaN for floats, 0xA5 bytes else."""
    if array.dtype.kind == "f":
        array.fill(np.nan)
    else:
        array.view(np.uint8).fill(0xA5)
