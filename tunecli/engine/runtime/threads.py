"""Threads of kernels' ``parallel`` loops: their number, and the pool a loaded kernel runs them on.

The thread count comes from :func:`set_num_threads`, else the environment variable
``TUNECLI_NUM_THREADS``, else TVM's ``TVM_NUM_THREADS`` (so TVM scripts that set it run on that
many threads), else the CPUs this process may run on.  The CPU device writes it into
a loaded kernel's ``<entry>__num_threads`` global before each launch, so it applies to kernels
already loaded and to calls from any Python thread.

A loader points a kernel's ``<entry>__parallel_for`` global at the process's thread pool
(:func:`bind_thread_pool`, :mod:`.thread_pool`).  The pool's threads are its own, not libgomp's,
and a process may ``fork`` after running parallel kernels: the child runs their loops on its
calling thread alone (a pool thread is never waited for before it has started).
"""

from __future__ import annotations

import ctypes
import os

from tunecli.errors import ArgumentError

from .thread_pool import parallel_for_address

ENV_VAR = "TUNECLI_NUM_THREADS"
#: The variables read for the thread count, the first one set wins.
ENV_VARS = (ENV_VAR, "TVM_NUM_THREADS")
_state: dict[str, int] = {}


def bind_thread_pool(global_address: int) -> None:
    """Write the thread pool's entry into a loaded kernel's ``<entry>__parallel_for`` global."""
    ctypes.c_void_p.from_address(global_address).value = parallel_for_address()


def _default_threads() -> int:
    for name in ENV_VARS:
        env = os.environ.get(name, "").strip()
        if env:
            try:
                n = int(env)
            except ValueError:
                n = 0
            if n < 1:
                raise ArgumentError(f"runtime: {name}={env!r} must be a positive integer")
            return n
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (``n`` ≥ 1) in the parallel loops of kernels called from now on."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ArgumentError(f"runtime: set_num_threads needs a positive integer, got {n!r}")
    _state["threads"] = n


def get_num_threads() -> int:
    """The number of threads parallel loops use (see the module docstring for the default)."""
    if "threads" not in _state:
        _state["threads"] = _default_threads()
    return _state["threads"]
