"""Stages ``smoke`` and ``templates``: kernels built for the GPU, run once on fresh random inputs
and compared with numpy (in a dry run: checked up to the launch, small twins simulated).

``smoke`` (about a minute): a vector add, and 5 random configs of the seed's conv2d
(``tutorial/conv2d_no_batching``, the template of TVM's ``tune_conv2d_cuda.py``, on resnet's last
layer).  ``templates``: random configs of every GPU template on a real layer; a config beyond
the device's limits must be refused when built (InstantiationError), never fail at launch.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tunecli import te
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.task import create
from tunecli.errors import InstantiationError

from .context import CheckFailed, Context
from .kernels import Built, build_kernel, describe, inspect, random_inputs, run_on_gpu, simulate

F32 = "float32"
SEED_TEMPLATE = "tutorial/conv2d_no_batching"
#: The seed's layer: resnet's last conv (1x512x7x7, 512 3x3 filters, stride 1, pad 1).
SEED = (1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1))
TOLERANCE = 1e-3  # largest error relative to max(1, |expected|)


def _t(*shape: int) -> tuple:
    return ("TENSOR", shape, F32)


#: Every GPU template on a real layer, and a small twin of it for the grid simulator.
TEMPLATES = {
    SEED_TEMPLATE: (SEED, (1, 7, 7, 16, 8, 3, 3, (1, 1), (1, 1))),
    "conv2d_nchw.cuda": ((_t(1, 512, 7, 7), _t(512, 512, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), F32),
                         (_t(1, 8, 7, 7), _t(16, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), F32)),
    "depthwise_conv2d_nchw.cuda": ((_t(1, 256, 56, 56), _t(256, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), F32),
                                   (_t(1, 8, 9, 9), _t(8, 2, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), F32)),
    "dense_small_batch.gpu": ((_t(1, 4096), _t(1000, 4096), None, F32), (_t(2, 96), _t(10, 96), None, F32)),
}


def vector_add(n: int) -> tuple[Any, list[Any]]:
    """``C = A + B`` in blocks of 256 threads."""
    A, B = te.placeholder((n,), name="A"), te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    bo, ti = s[C].split(C.op.axis[0], factor=256)
    s[C].bind(bo, te.thread_axis("blockIdx.x"))
    s[C].bind(ti, te.thread_axis("threadIdx.x"))
    return s, [A, B, C]


def check_kernel(ctx: Context, built: Built, inputs: list[np.ndarray], expected: np.ndarray) -> dict:
    """Up to the launch always; on the GPU one launch compared with ``expected``."""
    figures = inspect(built, inputs, (expected.shape, str(expected.dtype)), ctx.arch)
    if ctx.device is not None:
        figures["error"] = run_on_gpu(built, ctx.device, inputs, expected)
        if not figures["error"] <= TOLERANCE:
            raise CheckFailed(f"{built.module.entry_name}: wrong answer, error {figures['error']:.2e} "
                              f"({describe(figures)})")
    return figures


def run_smoke(ctx: Context) -> None:
    stage = "smoke"
    with ctx.check(stage, "vector add") as r:
        n = 1 << 20
        built = build_kernel(*vector_add(n), "vadd", ctx.target)
        rng = np.random.default_rng()
        a, b = (rng.uniform(size=n).astype(F32) for _ in range(2))
        figures = check_kernel(ctx, built, [a, b], a + b)
        r.numbers = describe(figures)
        if ctx.device is not None:
            dev = ctx.device
            args = [te_array(x, dev) for x in (a, b)] + [te_array(np.empty_like(a), dev)]
            t = built.module.time_evaluator(built.module.entry_name, dev, number=100, repeat=3)(*args).mean
            r.numbers += f"; {t * 1e6:.1f} us, {3 * 4 * n / t / 1e9:.0f} GB/s"
        else:
            twin = build_kernel(*vector_add(2048), "vadd_twin", ctx.target)
            x, y = (rng.uniform(size=2048).astype(F32) for _ in range(2))
            err = simulate(twin.func, [x, y], x + y)
            if err > 0:
                raise CheckFailed(f"simulated vector add is off by {err}")
            r.numbers += "; simulated twin (2048) exact"
    random_configs(ctx, stage, SEED_TEMPLATE, ctx.options.smoke_configs, fallback=False)


def run_templates(ctx: Context) -> None:
    for name in TEMPLATES:
        random_configs(ctx, "templates", name, ctx.options.configs, fallback=True)


def random_configs(ctx: Context, stage: str, name: str, count: int, fallback: bool) -> None:
    """``count`` random configs that build (and the fallback) of template ``name`` on its real
    layer; the configs refused at build time on the way are counted."""
    with ctx.check(stage, f"{name} random configs") as r:
        layer, twin = TEMPLATES[name]
        task = create(name, args=layer, target=ctx.target)
        space = task.config_space
        draws = iter([FallbackConfigEntity()] if fallback else [])
        built_n = refused = 0
        worst: dict = {}
        rng = np.random.default_rng()
        while built_n < count + fallback and refused < 20 * max(count, 1):
            config = next(draws, None)
            if config is None:
                config = space.get(ctx.rng.randrange(len(space)))
            try:
                sch, bufs = task.instantiate(config)
                built = build_kernel(sch, bufs, name, ctx.target)
            except InstantiationError:
                refused += 1
                continue
            built_n += 1
            inputs = random_inputs(bufs, rng)
            try:
                figures = check_kernel(ctx, built, inputs, task.reference(*inputs))
            except CheckFailed as err:
                raise CheckFailed(f"config {config}: {err}") from None
            if figures.get("registers", 0) >= worst.get("registers", 0):
                worst = figures
        if built_n < count + fallback:
            raise CheckFailed(f"only {built_n} configs fit the GPU, {refused} refused")
        r.numbers = f"{built_n} built, {refused} refused at build time; most registers: {describe(worst)}"
        if ctx.device is None:
            start = time.perf_counter()
            simulated = simulate_twin(ctx, name, twin, rng)
            r.numbers += f"; twin {simulated} simulated in {time.perf_counter() - start:.1f} s"
        else:
            r.numbers += "; all correct"


def simulate_twin(ctx: Context, name: str, layer: tuple, rng: np.random.Generator) -> str:
    """One random config of the small twin layer that fits, run in the grid simulator."""
    task = create(name, args=layer, target=ctx.target)
    space = task.config_space
    for _ in range(20):
        config = space.get(ctx.rng.randrange(len(space)))
        try:
            sch, bufs = task.instantiate(config)
            built = build_kernel(sch, bufs, name, ctx.target)
        except InstantiationError:
            continue
        inputs = random_inputs(bufs, rng)
        err = simulate(built.func, inputs, task.reference(*inputs), reverse=ctx.rng.random() < 0.5)
        if not err <= TOLERANCE:
            raise CheckFailed(f"simulated twin config {config} is off by {err:.2e}")
        return f"config {config.index}"
    raise CheckFailed("no random config of the small twin fits the GPU")


def te_array(host: np.ndarray, dev: Any) -> Any:
    import tunecli as tvm

    return tvm.nd.array(host, device=dev)
