"""The C heap of a process that runs kernels: scratch buffers reused from run to run.

A CPU kernel's scratch buffers too large for its stack come from ``aligned_alloc`` and go back
with ``free`` on every call.  glibc serves a block above its mmap threshold (128 KiB at first,
raised as mapped blocks are freed) with a fresh ``mmap`` and unmaps it on ``free``, and returns
free memory at the top of its heap to the system above a trim threshold; depending on what the
process allocated before, each run of a network then faults its scratch pages in again, and the
same library runs measurably slower in one process (a device server's worker) than in another.
:func:`keep_scratch_memory` fixes both thresholds so that scratch buffers up to
:data:`MMAP_THRESHOLD` bytes are reused from the heap.  Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import functools

#: Blocks up to this size come from the heap (glibc's largest allowed mmap threshold on 64-bit).
MMAP_THRESHOLD = 32 << 20
#: Free memory at the top of the heap kept for reuse before glibc returns it to the system.
TRIM_THRESHOLD = 256 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


@functools.cache
def keep_scratch_memory() -> bool:
    """Make this process's heap keep freed blocks for reuse (once); True when glibc took the settings."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mmap_set = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    return bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)) and mmap_set
