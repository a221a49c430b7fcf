"""Helpers shared by the tuning benchmarks: BLAS environment, medians, memory, machine load.

Import this module *before* numpy when a benchmark compares with OpenBLAS: it removes
``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` from the environment so that OpenBLAS picks its
kernel for this CPU (``blas_description`` says which one it picked).  Interleaved 1/2-thread
timing of our kernel against numpy lives in ``bench_compiler.compare`` (reused, not repeated).
"""

from __future__ import annotations

import os

REMOVED_BLAS_ENV = {var: os.environ.pop(var) for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
                    if var in os.environ}

import resource  # noqa: E402
import statistics  # noqa: E402
from collections.abc import Sequence  # noqa: E402


def median(values: Sequence[float]) -> float:
    """Median of ``values`` (nan when empty)."""
    return statistics.median(values) if values else float("nan")


def peak_memory_mib() -> tuple[float, float]:
    """Peak RSS in MiB of this process and of its largest (waited-for) child process."""
    self_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return self_peak, child_peak


def peak_memory_line() -> str:
    """One printable line with the peak memory of this process and its largest worker."""
    self_peak, child_peak = peak_memory_mib()
    return (f"peak memory (ru_maxrss): this process {self_peak:.0f} MiB, largest finished worker "
            f"{child_peak:.0f} MiB (workers still alive are not counted)")


def load_line() -> str:
    """Cores and the 1/5/15-minute load average (the machine may be shared)."""
    load = os.getloadavg()
    return (f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
            "(timings are noisy when the load exceeds the core count)")


def blas_description() -> str:
    """The BLAS libraries loaded (file, version, kernel architecture, threads); numpy's is the one
    under ``numpy.libs`` (xgboost's scipy brings a second OpenBLAS once a model is trained)."""
    from threadpoolctl import threadpool_info

    parts = [f"{os.path.basename(i.get('filepath', '?'))} ({i.get('internal_api')} {i.get('version')}) "
             f"kernel={i.get('architecture')} threads={i.get('num_threads')}"
             for i in threadpool_info() if i.get("user_api") == "blas"]
    removed = ", ".join(f"{k}={v}" for k, v in REMOVED_BLAS_ENV.items()) or "none set"
    return f"BLAS: {'; '.join(parts) or 'none found'} (unset before numpy loaded: {removed})"
