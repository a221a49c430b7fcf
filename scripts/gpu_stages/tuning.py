"""Stage ``tuning``: the seed's conv2d tuned for the GPU, its best against PyTorch's cuDNN.

``tutorial/conv2d_no_batching`` on resnet's last layer, ``--trials`` trials (XGBoost's tuner,
the GA tuner without xgboost) with ``LocalBuilder``/``LocalRunner(check_correctness=True)``: no
measured config may give a wrong answer.  The best config is built under
``apply_history_best``, checked on fresh inputs and timed with CUDA events; PyTorch's cuDNN conv2d
(fp32, TF32 off) is timed in the same run; the goal is at least 0.8x cuDNN's speed.  In a dry run
the tuner's first batch goes through the real builder (PTX and launch shapes for every config
that fits) and PyTorch's conv2d on the CPU is compared with the template's reference.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from tunecli import autotvm
from tunecli.engine.measure.builder import BuildResult, LocalBuilder
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput
from tunecli.engine.target import Target
from tunecli.engine.task.task import create

from .configs import SEED, SEED_TEMPLATE, TOLERANCE
from .context import CheckFailed, Context
from .kernels import build_kernel, max_error, random_inputs, run_on_gpu
from .table import FAILED, SKIPPED

STAGE = "tuning"
GOAL = 0.8  # of cuDNN's speed
NO_TORCH = "torch is not installed"


def make_tuner(task: Any) -> Any:
    try:
        import xgboost  # noqa: F401
    except ImportError:
        return autotvm.tuner.GATuner(task)
    return autotvm.tuner.XGBTuner(task)


def run(ctx: Context) -> None:
    task = create(SEED_TEMPLATE, args=SEED, target=ctx.target)
    if ctx.device is None:
        dry_builds(ctx, task)
        with ctx.check(STAGE, "cuDNN comparison (PyTorch on the CPU)") as r:
            r.numbers = cudnn(ctx, task, np.random.default_rng(1))[1]
            if r.numbers == NO_TORCH:
                r.status = SKIPPED
        return
    best = tune(ctx, task)
    with ctx.check(STAGE, "cuDNN conv2d (PyTorch)") as r:
        theirs, r.numbers = cudnn(ctx, task, np.random.default_rng(1))
        if theirs is None:
            r.status = SKIPPED
    with ctx.check(STAGE, "tuned / cuDNN speed") as r:
        if best is None or theirs is None:
            r.status, r.numbers = SKIPPED, "no tuned time or no cuDNN time"
        else:
            ratio = theirs / best
            r.numbers = f"{ratio:.2f}x cuDNN (goal >= {GOAL}x)"
            r.status = None if ratio >= GOAL else FAILED


def dry_builds(ctx: Context, task: Any) -> None:
    with ctx.check(STAGE, "first batch through LocalBuilder") as r:
        tuner = make_tuner(task)
        configs = tuner.next_batch(16)
        builder = LocalBuilder(timeout=60)
        builder.set_task(task)
        try:
            results = builder.build([MeasureInput(Target(ctx.target), task, c) for c in configs])
        finally:
            builder.close()
        built = [x for x in results if isinstance(x, BuildResult)]
        errors = [MeasureErrorNo(x.error_no).name for x in results if not isinstance(x, BuildResult)]
        bad = [x for x in built if x.launch is None or not x.obj.lstrip().startswith(b"//")]
        if bad or any(e != "INSTANTIATION_ERROR" for e in errors):
            raise CheckFailed(f"{len(bad)} builds without PTX or launch shape; errors {errors}")
        r.numbers = (f"{len(configs)} configs ({type(tuner).__name__}): {len(built)} PTX, "
                     f"{len(errors)} refused")


def tune(ctx: Context, task: Any) -> float | None:
    """Tune, then build, check and time the best config; its seconds per run (None if none ran)."""
    ctx.out.mkdir(parents=True, exist_ok=True)
    log = ctx.out / "conv2d_cuda.log"
    log.unlink(missing_ok=True)
    with ctx.check(STAGE, f"{ctx.options.trials} trials with check_correctness") as r:
        option = autotvm.measure_option(
            builder=autotvm.LocalBuilder(timeout=20),
            runner=autotvm.LocalRunner(number=20, repeat=3, min_repeat_ms=50, timeout=10,
                                       check_correctness=True))
        tuner = make_tuner(task)
        start = time.perf_counter()
        tuner.tune(n_trial=ctx.options.trials, measure_option=option,
                   callbacks=[autotvm.callback.log_to_file(str(log))])
        counts: dict[str, int] = {}
        for _, result in autotvm.record.load_from_file(str(log)):
            name = MeasureErrorNo(int(result.error_no)).name
            counts[name] = counts.get(name, 0) + 1
        r.numbers = f"{type(tuner).__name__}, {time.perf_counter() - start:.0f} s; {counts}"
        if counts.get("WRONG_ANSWER") or not counts.get("NO_ERROR"):
            raise CheckFailed(r.numbers)
    seconds = None
    with ctx.check(STAGE, "best config on fresh inputs") as r:
        with autotvm.apply_history_best(str(log)) as history:
            config = history.query(Target(ctx.target), task.workload)
        sch, bufs = task.instantiate(config)
        built = build_kernel(sch, bufs, "seed_conv2d_best", ctx.target)
        inputs = random_inputs(bufs, np.random.default_rng())
        err = run_on_gpu(built, ctx.device, inputs, task.reference(*inputs))
        if not err <= TOLERANCE:
            raise CheckFailed(f"the best config's answer is off by {err:.2e}")
        args = [_array(x, ctx.device) for x in inputs] + [_array(np.empty(SEED_OUT, "float32"), ctx.device)]
        timer = built.module.time_evaluator(built.module.entry_name, ctx.device, number=400, repeat=3)
        seconds = timer(*args).mean
        r.numbers = (f"config {config.index}: {seconds * 1e6:.1f} us, "
                     f"{task.flop / seconds / 1e12:.2f} TFLOPS, error {err:.1e}")
    return seconds


SEED_OUT = (1, 512, 7, 7)


def _array(host: np.ndarray, dev: Any) -> Any:
    import tunecli as tvm

    return tvm.nd.array(host, device=dev)


def cudnn(ctx: Context, task: Any, rng: np.random.Generator) -> tuple[float | None, str]:
    """PyTorch's conv2d (fp32, TF32 off) on the seed's layer: seconds per run on the GPU (None on
    the CPU) and the row's text; CheckFailed when its answer is not the template's reference."""
    try:
        import torch
    except ImportError:
        return None, NO_TORCH
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    a, w = (rng.uniform(-1, 1, shape).astype("float32") for shape in ((1, 512, 7, 7), (512, 512, 3, 3)))
    on = "cuda" if ctx.device is not None else "cpu"
    x, k = torch.from_numpy(a).to(on), torch.from_numpy(w).to(on)
    y = torch.nn.functional.conv2d(x, k, padding=1)
    err = max_error(y.cpu().numpy(), task.reference(a, w))
    if not err <= TOLERANCE:
        raise CheckFailed(f"PyTorch's conv2d differs from the template's reference by {err:.2e}")
    if on == "cpu":
        return None, f"torch {torch.__version__} conv2d equals the reference (error {err:.1e})"
    for _ in range(20):
        torch.nn.functional.conv2d(x, k, padding=1)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(400):
        torch.nn.functional.conv2d(x, k, padding=1)
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3 / 400
    return seconds, (f"{seconds * 1e6:.1f} us, {task.flop / seconds / 1e12:.2f} TFLOPS (fp32, TF32 off, "
                     f"cuDNN {torch.backends.cudnn.version()})")
