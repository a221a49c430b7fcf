"""A kernel job's convolutions as ``apply`` builds them vs onnxruntime running the same convolution
(one Conv per ONNX model, same process, same threads).

For each task of ``--job`` (default ``jobs/resnet18_conv2d.yaml``: ResNet-18's twelve layers as
``conv2d_nchw.x86`` tasks) the task is created as a job's task is (``job.tasks.create_tasks``: on
x86 a ``conv2d_nchw.x86`` task runs as ``conv2d_nchw_winograd.x86`` for 3x3 stride-1 layers,
with 512-bit vectors ``conv2d_nchw_1x1.x86`` for unpadded 1x1 ones whose pixels fill the vectors
and ``conv2d_nchw_pixels.x86`` for the 7x7 stem, else ``conv2d_nchw_blocked.x86``: the rule is
``ops.x86.conv2d_nchw_blocked.kernel_job_template``; ``--as-named`` keeps ``conv2d_nchw.x86``, the
template before that change), its config comes from ``apply_history_best`` over ``--log``
(absent: the pre-tuned package's record of the convolution, ``conv2d_NCHWc.x86``'s or
``conv2d_NCHWc_winograd.x86``'s, else the nearest record's, else the fallback config;
``--no-package``: fallback configs), and the kernel is built.  Our kernel takes the NCHW data and
returns the NCHW result, its data packing and result unpacking timed with it; its weight is packed (or
Winograd-transformed) once, before timing, as ``relay.build`` does with a constant weight
(``ops.x86.conv2d_nchw_blocked.weight_for_kernel``), and onnxruntime gets the weight as an
initializer, which it also prepares once.  Both outputs are checked against each other, then timed
interleaved with a settle pause (``_common.interleaved_medians``) at 1 and 2 threads, each batch
``--number`` calls or as many as fill ``--batch-ms`` (the same for both sides); the summary gives
the summed times, their ratio and the slowest layer against onnxruntime.

Usage::

    .venv/bin/python benchmarks/bench_kernel_jobs.py --quick           # 3 layers, 3 rounds
    .venv/bin/python benchmarks/bench_kernel_jobs.py --quick --tune 8  # the same after 8 trials each
    .venv/bin/python benchmarks/bench_kernel_jobs.py                   # untuned (package configs)
    .venv/bin/python benchmarks/bench_kernel_jobs.py --no-package      # untuned (fallback configs)
    .venv/bin/python benchmarks/bench_kernel_jobs.py --log logs/resnet18_conv2d.log   # tuned
    .venv/bin/python benchmarks/bench_kernel_jobs.py --as-named --layers 8 11         # the old template
    .venv/bin/python benchmarks/bench_kernel_jobs.py --cpu-time        # a loaded machine: CPU seconds
    .venv/bin/python benchmarks/bench_kernel_jobs.py --job avx2.yaml --onednn-isa AVX2
    .venv/bin/python benchmarks/bench_kernel_jobs.py --log tuned.log --against-untuned --cpu-time

``--onednn-isa ISA`` times PyTorch's oneDNN convolution (its weight prepacked once,
``torch.utils.mkldnn.to_mkldnn``; the input's blocking and the result's unblocking timed) with
oneDNN's instruction set capped at ``ISA`` (``ONEDNN_MAX_CPU_ISA``) in place of onnxruntime, whose
kernels take the machine's widest vectors: with a job of ``target: llvm -mcpu=haswell
-mattr=+avx2,+fma`` on an AVX-512 machine, an AVX2 library against our AVX2 code on the same core.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import _common  # before numpy: unsets the OpenBLAS variables
import numpy as np
import yaml
from bench_nchwc import conv_session

from tunecli.engine.actions.job_file import tune_job
from tunecli.engine.build import build
from tunecli.engine.job.spec import Job, load_job
from tunecli.engine.job.tasks import create_tasks
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.ops.x86.conv2d_nchw_1x1 import GEMM_1X1
from tunecli.engine.ops.x86.conv2d_nchw_blocked import BLOCKED, WINOGRAD, weight_for_kernel
from tunecli.engine.ops.x86.conv2d_nchw_pixels import PIXELS
from tunecli.engine.runtime import set_num_threads
from tunecli.engine.task.config_source import config_source
from tunecli.engine.task.task import Task
from tunecli.engine.te.window import get_pad_tuple, pair

JOB = Path(__file__).resolve().parents[1] / "jobs" / "resnet18_conv2d.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--job", default=str(JOB), help="a kernel job of conv2d_nchw.x86 tasks")
    parser.add_argument("--log", help="tuning log of the job's tasks (default: none, fallback configs)")
    parser.add_argument("--no-package", action="store_true",
                        help="neither the pre-tuned package's records nor nearest records: fallback configs "
                             "where --log has no record")
    parser.add_argument("--as-named", action="store_true",
                        help="build conv2d_nchw.x86 itself (its kernel packs the weight on every call)")
    parser.add_argument("--layers", type=int, nargs="*", help="indices of the layers (default: all)")
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=10, help="calls per timed batch, at least")
    parser.add_argument("--batch-ms", type=float, default=10.0,
                        help="more calls per batch where --number calls of the faster side take less than "
                             "this (ms): 10 calls of a 0.05 ms layer are mostly timer and scheduler noise")
    parser.add_argument("--settle", type=float, default=0.5, help="pause before each timed batch (s)")
    parser.add_argument("--tune", type=int, metavar="TRIALS",
                        help="first tune the layers TRIALS trials each (XGB) as the kernel job does, into "
                             "--log (default: a temporary log), and use that log")
    parser.add_argument("--cpu-time", action="store_true",
                        help="1 thread, each side timed by this process's CPU seconds per call instead of "
                             "wall time: on a loaded machine a descheduled kernel then costs nothing extra")
    parser.add_argument("--onednn-isa", metavar="ISA",
                        help="compare with PyTorch's oneDNN convolution capped at ISA (e.g. AVX2) instead of "
                             "onnxruntime")
    parser.add_argument("--against-untuned", action="store_true",
                        help="compare with our own kernel of the untuned config (what the layer builds "
                             "without --log) instead of onnxruntime: does tuning end faster than untuned")
    parser.add_argument("--quick", action="store_true",
                        help="layers 2, 8 and 10; 3 rounds of 5 calls (with --tune: at most 8 trials)")
    opts = parser.parse_args()
    if opts.quick:
        opts.layers, opts.rounds, opts.number, opts.settle = opts.layers or [2, 8, 10], 3, 5, 0.2
        opts.tune = min(opts.tune, 8) if opts.tune else opts.tune
    if opts.cpu_time:
        opts.threads = [1]
    if opts.onednn_isa:
        os.environ["ONEDNN_MAX_CPU_ISA"] = opts.onednn_isa  # read once, at oneDNN's first use
    reference = ("untuned" if opts.against_untuned else f"oneDNN {opts.onednn_isa}" if opts.onednn_isa
                 else "onnxruntime")
    print(_common.load_line())
    print(_common.sgemm_peak_line(opts.threads))
    job = load_job(opts.job)
    layers = range(len(job.tasks)) if opts.layers is None else [i for i in opts.layers if i < len(job.tasks)]
    if opts.tune:
        opts.log = _tune(job, list(layers), opts.tune, opts.log)
    tasks = _tasks(job, list(layers), opts.as_named)
    history = ApplyHistoryBest(opts.log if opts.log else [], pretuned=not opts.no_package,
                               nearest=not opts.no_package)
    totals = {n: [0.0, 0.0] for n in opts.threads}
    worst = {n: (0.0, "") for n in opts.threads}
    rng = np.random.default_rng(0)
    untuned = ApplyHistoryBest([], pretuned=not opts.no_package, nearest=not opts.no_package)
    for index, task in zip(layers, tasks, strict=True):
        _, h, w, ci, co, kh, kw, stride, padding, _, _ = task.args
        data = rng.standard_normal((1, ci, h, w)).astype("float32")
        weight = rng.standard_normal((co, ci, kh, kw)).astype("float32")
        ours_call, out, config = _kernel(task, history, data, weight)
        source = config_source(config).text()
        label = f"layer {index} {ci}->{co} {kh}x{kw} s{pair(stride, 'stride')[0]} {h}x{w}"
        print(f"{label}: {task.name}, config {config} from {source}")
        pads = list(get_pad_tuple(padding, (kh, kw)))
        for n in opts.threads:
            if opts.against_untuned:
                theirs_call, untuned_out, untuned_config = _kernel(task, untuned, data, weight)
                set_threads = set_num_threads
                print(f"{label}: untuned config {untuned_config} from {config_source(untuned_config).text()}")
            elif opts.onednn_isa:
                theirs_call, set_threads = _onednn_conv(data, weight, pair(stride, "stride"), pads)
            else:
                sess = conv_session(data, weight, pair(stride, "stride"), pads, 1, n)
                theirs_call, set_threads = partial(sess.run, None, {"x": data}), set_num_threads
            set_threads(n)
            result = theirs_call()
            if opts.against_untuned:
                result = untuned_out
            np.testing.assert_allclose(out, result[0] if isinstance(result, list) else result, rtol=1e-3,
                                       atol=1e-2)
            calls = ours_call, theirs_call
            number = _batch_calls(calls, opts.number, opts.batch_ms / 1e3)
            if opts.cpu_time:
                ours, theirs = _cpu_medians(*calls, opts.rounds, number, opts.settle)
                print(f"{label:<28} threads=1  ours {ours * 1e3:7.3f} ms CPU, {reference} "
                      f"{theirs * 1e3:7.3f} ms CPU, ours/{reference} {ours / theirs:5.2f}x  (medians of "
                      f"{opts.rounds} rounds x {number} calls)")
            else:
                ((ours, theirs),) = _common.interleaved_medians(
                    label, task.flop, *calls, set_threads, opts.rounds, number, settle=opts.settle,
                    threads=[n], theirs_name=reference).values()
            totals[n][0] += ours
            totals[n][1] += theirs
            worst[n] = max(worst[n], (ours / theirs, label))
    for n, (ours, theirs) in totals.items():
        print(f"summed: threads={n} ours {ours * 1e3:.2f} ms, {reference} {theirs * 1e3:.2f} ms, "
              f"ours/{reference} time {ours / theirs if theirs else float('nan'):.2f}x; slowest layer "
              f"against {reference}: {worst[n][1]} at {worst[n][0]:.2f}x its time")
    print(_common.peak_memory_line())


def _kernel(task: Task, history: ApplyHistoryBest, data: np.ndarray,
            weight: np.ndarray) -> tuple[Callable[[], object], np.ndarray, Any]:
    """A call of the task's kernel with ``history``'s config on ``data`` and ``weight`` (prepared once
    in the kernel's layout), its output array after one call, and the config."""
    with task.target, history:
        config = history.query(task.target, task.workload)
        sch, tensors = task.instantiate(config)
    mod = build(sch, tensors, target=task.target)
    kernel_shape = [int(d) for d in tensors[1].shape]
    blocked = task.name in (BLOCKED, WINOGRAD, GEMM_1X1, PIXELS)
    packed = weight_for_kernel(task.name, weight, kernel_shape) if blocked else weight
    out = np.zeros([int(d) for d in tensors[-1].shape], dtype="float32")
    mod(data, packed, out)
    return partial(mod, data, packed, out), out.copy(), config


def _batch_calls(calls: tuple[Callable[[], object], ...], number: int, seconds: float) -> int:
    """Calls per timed batch, the same for each side: ``number``, or as many as the faster side
    (the best of three calls each) runs in ``seconds``."""
    fastest = min(min(_common.batch_seconds(fn, 1)[0] for _ in range(3)) for fn in calls)
    return max(number, math.ceil(seconds / fastest)) if fastest > 0 else number


def _onednn_conv(data: np.ndarray, weight: np.ndarray, strides: tuple[int, int],
                 pads: list[int]) -> tuple[Callable[[], np.ndarray], Callable[[int], None]]:
    """PyTorch's oneDNN convolution of NCHW ``data`` (the weight prepacked once) returning NCHW, and a
    thread setter for it and our runtime."""
    import torch
    from torch.utils import mkldnn

    if pads[0] != pads[2] or pads[1] != pads[3]:
        raise SystemExit("--onednn-isa: asymmetric padding is not supported")
    conv = torch.nn.Conv2d(weight.shape[1], weight.shape[0], weight.shape[2:], strides, tuple(pads[:2]),
                           bias=False).eval()
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(weight))
    packed = mkldnn.to_mkldnn(conv)
    x = torch.from_numpy(data)

    def run() -> np.ndarray:
        with torch.no_grad():
            return packed(x.to_mkldnn()).to_dense().numpy()

    def set_threads(n: int) -> None:
        set_num_threads(n)
        torch.set_num_threads(n)

    return run, set_threads


def _cpu_medians(ours: Callable[[], object], theirs: Callable[[], object], rounds: int, number: int,
                 settle: float) -> tuple[float, float]:
    """Median CPU seconds per call of each, in alternate batches on 1 thread."""
    set_num_threads(1)
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for fn, out in zip((ours, theirs), times, strict=True):
            time.sleep(settle)
            _common.warm_up(fn)
            start = time.process_time()
            for _ in range(number):
                fn()
            out.append((time.process_time() - start) / number)
    return _common.median(times[0]), _common.median(times[1])


def _tune(job: Job, layers: list[int], trials: int, log: str | None) -> str:
    """Tune ``layers`` of ``job`` as a job of those tasks (``tune_job``: XGB, ``trials`` each); the log."""
    folder = Path(tempfile.mkdtemp(prefix="bench_kernel_jobs_"))
    log = log or str(folder / "tuned.log")
    entries = [{"template": job.tasks[i].template, "args": job.tasks[i].args} for i in layers]
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump({
        "name": f"{job.name}_bench", "target": str(job.target), "tasks": entries,
        "tuner": {"kind": "xgb", "n_trial": trials, "seed": 0},
        "measure": {"builder": {"n_parallel": 2, "timeout": 30},
                    "runner": {"number": 5, "repeat": 2, "min_repeat_ms": 20, "timeout": 10}}}))
    start = time.time()
    summary = tune_job(str(path), log=log)
    print(f"tuned {len(entries)} layers x {trials} trials in {time.time() - start:.0f} s into {log}")
    for task in summary.tasks:
        print(f"  {task.template}: {task.measured} measured, {task.errors} errors, best "
              f"{task.best_flops / 1e9:.1f} GFLOP/s")
    return log


def _tasks(job: Job, layers: list[int], as_named: bool) -> list:
    """The job's tasks of ``layers``, as a job creates them or (``as_named``) of the named template."""
    if not as_named:
        return create_tasks(job, layers)
    from tunecli.engine.job.tasks import bind_args, resolve_template
    from tunecli.engine.task.task import create

    out = []
    for i in layers:
        template = resolve_template(job.tasks[i])
        out.append(create(template.name, bind_args(job.tasks[i], template), job.target))
    return out


if __name__ == "__main__":
    main()
