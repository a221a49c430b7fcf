"""The threads of the BLAS library numpy loaded in this process: how many, and one while kernels run.

numpy's BLAS (OpenBLAS or MKL) is found among the libraries mapped into this process and told
its thread count through its own C entry point, so no extra package is needed.  Whoever times
kernels next to numpy keeps numpy's BLAS to one thread in the timing process
(:func:`single_blas_thread`): the threads of a multi-threaded OpenBLAS spin for a while after
each call, on the cores the kernels are timed on.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable, Iterator

_BLAS_SETTERS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_",
                 "scipy_openblas_set_num_threads", "openblas_set_num_threads64_", "MKL_Set_Num_Threads")
_BLAS_GETTERS = ("openblas_get_num_threads", "scipy_openblas_get_num_threads64_",
                 "scipy_openblas_get_num_threads", "openblas_get_num_threads64_", "MKL_Get_Max_Threads")


def _blas_function(names: tuple[str, ...]) -> Callable[..., int] | None:
    """The first of ``names`` exported by a BLAS library loaded in this process, or None."""
    with open("/proc/self/maps", encoding="utf-8") as maps:
        libs = {line.split()[-1] for line in maps if "blas" in line.lower() or "mkl" in line.lower()}
    for path in sorted(libs):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in names:
            func = getattr(lib, name, None)
            if func is not None:
                return func
    return None


def get_blas_threads() -> int:
    """Threads of the BLAS numpy loaded in this process; 0 when it cannot be asked.

    Returns
    -------
    int
    """
    getter = _blas_function(_BLAS_GETTERS)
    return int(getter()) if getter is not None else 0


def set_blas_threads(n: int) -> bool:
    """Limit the BLAS numpy loaded in this process to ``n`` threads; False when it cannot be told.

    Parameters
    ----------
    n : int

    Returns
    -------
    bool
    """
    setter = _blas_function(_BLAS_SETTERS)
    if setter is None:
        return False
    setter(ctypes.c_int(n))
    return True


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """numpy's BLAS on one thread inside the block, its thread count restored after.

    The threads of a multi-threaded OpenBLAS spin for a while after each call, on the cores
    that kernels are timed on, and slow the kernels timed beside them.
    """
    before = get_blas_threads()
    set_blas_threads(1)
    try:
        yield
    finally:
        if before > 0:
            set_blas_threads(before)
