"""Helpers shared by the tuning benchmarks: BLAS environment, medians, memory, machine load.

Import this module *before* numpy when a benchmark compares with OpenBLAS: it removes
``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE`` from the environment so that OpenBLAS picks its
kernel for this CPU (``blas_description`` says which one it picked).

``interleaved_compare`` times our kernel against numpy at 1 and 2 threads, round by round, and
pauses ``settle`` seconds before each side: OpenBLAS's worker threads keep spinning for a while
after a call (and our thread pool's, briefly, after ours), so a 2-thread kernel timed right after
the other side gets part of a core less (the figures are in ``benchmarks/README.md``,
bench_dense_tuned's pitfall).
"""

from __future__ import annotations

import os

REMOVED_BLAS_ENV = {var: os.environ.pop(var) for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
                    if var in os.environ}

import resource  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402


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


def sgemm_peak_line(threads: Sequence[int], n: int = 1024, calls: int = 10) -> str:
    """OpenBLAS's single-precision GEMM speed (``n``³, best of ``calls``) at each thread count: the
    practical compute ceiling of the machine that kernel speeds can be read against."""
    import numpy as np
    from threadpoolctl import threadpool_limits

    a = np.random.default_rng(0).standard_normal((n, n)).astype("float32")
    parts = []
    for k in threads:
        with threadpool_limits(limits=k, user_api="blas"):
            a @ a
            best = min(batch_seconds(lambda: a @ a, 1)[0] for _ in range(calls))
        parts.append(f"{2 * n ** 3 / best / 1e9:.1f} GFLOP/s on {k} thread{'s' if k > 1 else ''}")
        time.sleep(0.5)
    return f"practical peak (OpenBLAS sgemm {n}^3, best of {calls}): " + ", ".join(parts)


def batch_seconds(fn: Callable[[], object], number: int) -> tuple[float, float]:
    """Wall seconds per call of ``number`` calls, and the process's CPU seconds per wall second."""
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(number):
        fn()
    wall = time.perf_counter() - start
    return wall / number, (time.process_time() - cpu) / wall


def warm_up(fn: Callable[[], object], seconds: float = 0.05) -> None:
    """Call ``fn`` untimed for ``seconds`` (at least once)."""
    end = time.perf_counter() + seconds
    fn()
    while time.perf_counter() < end:
        fn()


def interleaved_compare(label: str, flops: float, ours: Callable[[], object], theirs: Callable[[], object],
                        set_threads: Callable[[int], None], rounds: int, number: int,
                        settle: float = 0.5, threads: Sequence[int] = (1, 2),
                        theirs_name: str = "numpy") -> dict[int, float]:
    """Time ``ours`` and ``theirs`` (numpy, or what ``theirs_name`` says) alternately at each
    thread count; print medians.

    ``set_threads(n)`` sets our runtime's threads; numpy's are limited with threadpoolctl.  Each
    round times ``number`` calls of one side after a ``settle``-second pause and 50 ms of untimed
    calls (an idle core runs slowly for its first tens of milliseconds of work), then the other.

    Returns
    -------
    dict
        threads -> median speed ratio ours/theirs (> 1: ours is faster).
    """
    medians = interleaved_medians(label, flops, ours, theirs, set_threads, rounds, number, settle, threads,
                                  theirs_name)
    return {n: mt / mo for n, (mo, mt) in medians.items()}


def interleaved_medians(label: str, flops: float, ours: Callable[[], object], theirs: Callable[[], object],
                        set_threads: Callable[[int], None], rounds: int, number: int,
                        settle: float = 0.5, threads: Sequence[int] = (1, 2),
                        theirs_name: str = "numpy") -> dict[int, tuple[float, float]]:
    """``interleaved_compare``'s timing, returning threads -> (our median, their median) seconds."""
    from threadpoolctl import threadpool_limits

    medians = {}
    for n in threads:
        set_threads(n)
        with threadpool_limits(n):
            ours(), theirs()  # warm-up
            t_ours, t_np, busy = [], [], []
            for _ in range(rounds):
                time.sleep(settle)
                warm_up(ours)
                wall, cores = batch_seconds(ours, number)
                t_ours.append(wall)
                busy.append(cores)
                time.sleep(settle)
                warm_up(theirs)
                t_np.append(batch_seconds(theirs, number)[0])
        mo, mn = median(t_ours), median(t_np)
        medians[n] = (mo, mn)
        print(f"{label:<28} threads={n}  ours {flops / mo / 1e9:7.1f} GFLOP/s ({mo * 1e3:7.3f} ms, "
              f"{median(busy):.2f} cores busy)  {theirs_name} {flops / mn / 1e9:7.1f} GFLOP/s "
              f"({mn * 1e3:7.3f} ms)  "
              f"ratio {mn / mo:5.2f}x  (medians of {rounds} rounds x {number} calls)")
    return medians
