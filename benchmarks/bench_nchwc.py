"""ResNet-18's twelve conv2d layers as ``conv2d_NCHWc.x86`` kernels vs numpy im2col + BLAS.

For each task of ``jobs/resnet18_conv2d_nchwc.yaml`` (TVM's workloads) the config comes from
``apply_history_best`` over ``--log`` (tuned records; absent: none), which falls back to the
pre-tuned packages (``--tophub DIR``, e.g. TVM's tophub folder or what ``tunecli best -o
DIR/llvm.log`` wrote) and then to the fallback config; the line says which one was used.  Our
kernel runs on blocked data and a pre-packed kernel (the layout transforms are a graph's, done
once); numpy computes the same convolution from NCHW data by im2col and one BLAS matmul.  Both
sides are checked against each other, then timed interleaved at 1 and 2 threads
(``_common.interleaved_compare``); the summary gives the summed times per thread count.

Usage::

    .venv/bin/python benchmarks/bench_nchwc.py --quick                      # 3 layers, 3 rounds
    .venv/bin/python benchmarks/bench_nchwc.py --log logs/resnet18_conv2d_nchwc.log
    .venv/bin/python benchmarks/bench_nchwc.py --tophub ../shared/reference/tophub --threads 1
"""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

import _common  # before numpy: unsets the OpenBLAS variables
import numpy as np

from tunecli.engine.build import build
from tunecli.engine.job.spec import load_job
from tunecli.engine.job.tasks import create_tasks
from tunecli.engine.log import tophub
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.ops import reference as ref
from tunecli.engine.runtime import set_num_threads

JOB = Path(__file__).resolve().parents[1] / "jobs" / "resnet18_conv2d_nchwc.yaml"


def im2col_conv(data: np.ndarray, kernel: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """NCHW convolution (batch 1) as one matmul of the kernel with the im2col matrix."""
    _, c, h, w = data.shape
    o, _, kh, kw = kernel.shape
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    padded = np.pad(data[0], ((0, 0), (pad, pad), (pad, pad)))
    cols = np.empty((c, kh, kw, oh, ow), dtype=data.dtype)
    for y in range(kh):
        for x in range(kw):
            cols[:, y, x] = padded[:, y: y + stride * oh: stride, x: x + stride * ow: stride]
    return (kernel.reshape(o, -1) @ cols.reshape(c * kh * kw, oh * ow)).reshape(1, o, oh, ow)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log", help="tuning log of the job's tasks (default: none)")
    parser.add_argument("--tophub", help="pre-tuned package directory searched before the shipped one")
    parser.add_argument("--layers", type=int, nargs="*", help="indices of the layers (default: all twelve)")
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="layers 1, 2 and 11; 3 rounds of 5 calls")
    opts = parser.parse_args()
    if opts.quick:
        opts.layers, opts.rounds, opts.number = opts.layers or [1, 2, 11], 3, 5
    if opts.tophub:
        tophub.set_locations([opts.tophub])
    print(_common.load_line())
    print(_common.blas_description())
    tasks = create_tasks(load_job(JOB))
    history = ApplyHistoryBest(opts.log if opts.log else [])
    tuned = {t.workload for t in tasks if opts.log and history.best_by_target.get((t.target, t.workload))}
    totals = {n: [0.0, 0.0] for n in opts.threads}
    rng = np.random.default_rng(0)
    for index in opts.layers if opts.layers is not None else range(len(tasks)):
        task = tasks[index]
        with task.target, history:
            config = history.query(task.target, task.workload)
            sch, tensors = task.instantiate(config)
        source = "tuned" if task.workload in tuned else "fallback" if config.is_fallback else "pre-tuned"
        mod = build(sch, tensors, target=task.target)
        data_t, kernel_t = task.args[0], task.args[1]
        data = rng.standard_normal(data_t[1]).astype("float32")
        kernel = rng.standard_normal(kernel_t[1]).astype("float32")
        ic_bn, oc_bn = tensors[0].shape[-1], tensors[-1].shape[-1]
        blocked = [ref.nchw_to_nchwc(data, ic_bn), ref.oihw_to_kernel_nchwc(kernel, ic_bn, oc_bn)]
        out = np.zeros(tensors[-1].shape, dtype="float32")
        stride, pad = task.args[2][0], task.args[3][0]
        mod(*blocked, out)
        np.testing.assert_allclose(ref.nchwc_to_nchw(out), im2col_conv(data, kernel, stride, pad),
                                   rtol=1e-3, atol=1e-2)
        label = f"layer {index} {data_t[1][1]}->{kernel_t[1][0]} {kernel_t[1][2]}x{kernel_t[1][3]} s{stride}"
        print(f"{label}: {source} config {config}")
        ratios = _common.interleaved_compare(label, task.flop, partial(mod, *blocked, out),
                                             partial(im2col_conv, data, kernel, stride, pad), set_num_threads,
                                             opts.rounds, opts.number, threads=opts.threads,
                                             theirs_name="numpy im2col")
        for n, ratio in ratios.items():
            set_num_threads(n)
            ours = min(mod.time_evaluator(number=opts.number, repeat=3)(*blocked, out))
            totals[n][0] += ours
            totals[n][1] += ours * ratio
    for n, (ours, numpy_time) in totals.items():
        print(f"summed: threads={n} ours {ours * 1e3:.2f} ms, numpy im2col {numpy_time * 1e3:.2f} ms, "
              f"ours at {numpy_time / ours if ours else float('nan'):.2f}x numpy's speed")
    print(_common.peak_memory_line())


if __name__ == "__main__":
    main()
