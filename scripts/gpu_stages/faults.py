"""Stage ``faults``: CUDA errors become error records, and the next measurement works.

Through the measurement worker (the process boundary every runner uses): a kernel that reads 4
GiB past its input (an illegal address) and a good kernel launched with 2048 threads per block
(beyond the limits) each give RUNTIME_DEVICE, and after each a good kernel measures correctly in
the replaced worker (a fresh context).  In a dry run the same requests go through the worker,
which answers each with an error record (no driver) and keeps answering.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from tunecli import te
from tunecli.engine.codegen.compiled_kernel import LaunchShape
from tunecli.engine.measure.arrays import random_arguments
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.measure.timing import MeasureRequest, measure_in_worker
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.measure.worker import Worker
from tunecli.engine.target import Target

from .configs import vector_add
from .context import CheckFailed, Context
from .kernels import build_kernel, describe, inspect

STAGE = "faults"
N = 4096
FAR = 1 << 30  # elements past the input: 4 GiB


def far_read(n: int) -> tuple[Any, list[Any]]:
    """``C[i] = A[i + 2**30]``: every thread reads far outside ``A`` (an illegal address on a GPU)."""
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i + FAR], name="C")
    s = te.create_schedule(C.op)
    bo, ti = s[C].split(C.op.axis[0], factor=256)
    s[C].bind(bo, te.thread_axis("blockIdx.x"))
    s[C].bind(ti, te.thread_axis("threadIdx.x"))
    return s, [A, C]


def request(ctx: Context, module: Any, reference: np.ndarray | None = None) -> MeasureRequest:
    specs = tuple((tuple(s.shape), str(s.dtype)) for s in module.arg_specs)
    refs = ((len(specs) - 1, reference.tobytes()),) if reference is not None else ()
    return MeasureRequest(module.object_bytes(), module.entry_name, specs,
                          TimingOptions(number=10, repeat=2, timeout=30.0, warmup_ms=0.0), seed=7,
                          ref_outputs=refs, target=Target(ctx.target), launch=module.launch)


def run(ctx: Context) -> None:
    with ctx.check(STAGE, "kernels of the fault checks") as r:
        broken = build_kernel(*far_read(N), "far_read", ctx.target)
        good = build_kernel(*vector_add(N), "vadd_good", ctx.target)
        host = np.zeros(N, "float32")
        r.numbers = (f"far_read: {describe(inspect(broken, [host], ((N,), 'float32'), ctx.arch))}; "
                     f"vadd: {describe(inspect(good, [host, host], ((N,), 'float32'), ctx.arch))}")
    a, b, _ = random_arguments(list(request(ctx, good.module).arg_specs), 7)
    good_request = request(ctx, good.module, a + b)
    over = dataclasses.replace(good_request, launch=LaunchShape(good.module.launch.grid, (2048, 1, 1)))
    worker = Worker(name="gpu-check-faults")
    try:
        for name, bad in (("illegal address", request(ctx, broken.module)), ("launch beyond limits", over)):
            with ctx.check(STAGE, f"{name}, then a good kernel") as r:
                first = measure_in_worker(worker, bad)
                then = measure_in_worker(worker, good_request)
                r.numbers = (f"error {MeasureErrorNo(first.error_no).name} ({first.error.strip()[:160]}); "
                             f"next: {MeasureErrorNo(then.error_no).name}, worker restarts {worker.restarts}")
                if first.error_no != MeasureErrorNo.RUNTIME_DEVICE:
                    raise CheckFailed(f"the faulting launch gave {r.numbers}")
                expected = MeasureErrorNo.RUNTIME_DEVICE if ctx.device is None else MeasureErrorNo.NO_ERROR
                if then.error_no != expected:
                    raise CheckFailed(f"the measurement after the fault: {r.numbers}")
                if ctx.device is not None:
                    r.numbers += f", {min(then.costs) * 1e6:.1f} us"
    finally:
        worker.close()
