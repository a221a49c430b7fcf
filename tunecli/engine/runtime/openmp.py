"""OpenMP on the CPU: loading libgomp and the number of threads of kernels' ``parallel`` loops.

The thread count comes from :func:`set_num_threads`, else the environment variable
``TUNECLI_NUM_THREADS``, else TVM's ``TVM_NUM_THREADS`` (so TVM scripts that set it run on that
many threads), else the CPUs this process may run on.  The CPU device writes it into
a loaded kernel's ``<entry>__num_threads`` global before each launch, so it applies to kernels
already loaded and to calls from any Python thread.

Before libgomp is loaded, ``GOMP_SPINCOUNT`` defaults to :data:`SPIN_COUNT` (unless it or
``OMP_WAIT_POLICY`` is set): libgomp's default of 300 000 spins at each barrier makes a thread
that finishes its chunk first burn the core its partner needs whenever another process competes
for the CPUs (a parallel kernel then runs several times slower than on one thread; the figures
are in ``benchmarks/README.md``).

libgomp does not survive ``fork``: a child forked after its parent ran a parallel kernel hangs
in its first parallel region.  Processes that run kernels must be spawned (``multiprocessing``
``spawn`` context or a fresh interpreter), as the measurement workers are.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import os

import llvmlite.binding as llvm

from tunecli.errors import ArgumentError, CodegenError

ENV_VAR = "TUNECLI_NUM_THREADS"
#: The variables read for the thread count, the first one set wins.
ENV_VARS = (ENV_VAR, "TVM_NUM_THREADS")
SPIN_COUNT = "10000"
_state: dict[str, int] = {}
_GOMP_GLOBS = ("/usr/lib/x86_64-linux-gnu/libgomp.so.1", "/usr/lib/aarch64-linux-gnu/libgomp.so.1",
               "/usr/lib64/libgomp.so.1", "/usr/lib/libgomp.so.1", "/lib/*/libgomp.so.1",
               "/usr/lib/*/libgomp.so.1", "/usr/local/lib*/libgomp.so.1")


def find_libgomp() -> str:
    """Return a path (or soname) of libgomp that can be loaded; raise CodegenError when none exists."""
    candidates = [ctypes.util.find_library("gomp"), "libgomp.so.1"]
    for pattern in _GOMP_GLOBS:
        candidates.extend(sorted(glob.glob(pattern)))
    for cand in candidates:
        if not cand:
            continue
        try:
            ctypes.CDLL(cand, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        return cand
    raise CodegenError("runtime: libgomp (GNU OpenMP, libgomp.so.1) was not found; parallel loops need it "
                       "(install libgomp1)")


@functools.cache
def load_libgomp() -> str:
    """Load libgomp into this process for the JIT (once) and return its path."""
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)  # read once, when libgomp initialises
    path = find_libgomp()
    llvm.load_library_permanently(path)
    return path


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
