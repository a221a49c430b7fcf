"""Convolution layers as ``conv2d_NCHWc.x86`` / ``depthwise_conv2d_NCHWc.x86`` /
``conv2d_NCHWc_winograd.x86`` kernels vs onnxruntime's CPU provider running the same convolution
(one Conv per model, same threads).

For each task of ``--job`` (default ``jobs/resnet18_conv2d_nchwc.yaml``, ResNet-18's twelve
layers with TVM's workloads; ``jobs/mobilenet_depthwise_nchwc.yaml`` holds MobileNet's depthwise
layers, ``jobs/resnet18_conv2d_winograd.yaml`` ResNet-18's 3x3 stride-1 layers as Winograd
tasks) the config comes from ``apply_history_best`` over ``--log`` (tuned records; absent:
none), which falls back to the pre-tuned packages (``--tophub DIR``, or the one shipped with
tunecli) and then to the fallback config; the line says which one was used.  Our kernel runs on
blocked data and a pre-packed kernel (a Winograd kernel transformed by
``reference.winograd_kernel_transform``): the layout transforms are the graph's, done once at
build time.  onnxruntime runs a one-node ONNX model (Conv with the kernel as an initializer,
NCHW data), with ``intra_op_num_threads`` equal to our thread count.  Both outputs are checked
against each other, then timed interleaved at 1 and 2 threads
(``_common.interleaved_medians``); the summary gives the summed times per thread count and the worst layer.

Usage::

    .venv/bin/python benchmarks/bench_nchwc.py --quick                      # 3 layers, 3 rounds
    .venv/bin/python benchmarks/bench_nchwc.py --log logs/resnet18_conv2d_nchwc.log
    .venv/bin/python benchmarks/bench_nchwc.py --job jobs/mobilenet_depthwise_nchwc.yaml --log ...
    .venv/bin/python benchmarks/bench_nchwc.py --job jobs/resnet18_conv2d_winograd.yaml --threads 1
    .venv/bin/python benchmarks/bench_nchwc.py --tophub ../shared/reference/tophub --threads 1
"""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path
from typing import Any

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


def conv_session(data: np.ndarray, kernel: np.ndarray, strides: Any, pads: Any, groups: int,
                 threads: int) -> Any:
    """An onnxruntime session of one Conv (``kernel`` an initializer) on ``threads`` threads."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node("Conv", ["x", "w"], ["y"], strides=list(strides), pads=list(pads), group=groups,
                            kernel_shape=list(kernel.shape[2:]))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, data.shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([node], "conv", [x], [y], [numpy_helper.from_array(kernel, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--job", default=str(JOB),
                        help="a job of conv2d_NCHWc / depthwise_conv2d_NCHWc / conv2d_NCHWc_winograd tasks")
    parser.add_argument("--log", help="tuning log of the job's tasks (default: none)")
    parser.add_argument("--tophub", help="pre-tuned package directory searched before the shipped one")
    parser.add_argument("--layers", type=int, nargs="*", help="indices of the layers (default: all)")
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=10)
    parser.add_argument("--quick", action="store_true",
                        help="layers 1, 2 and 11 (those the job has); 3 rounds of 5 calls")
    opts = parser.parse_args()
    if opts.quick:
        opts.layers, opts.rounds, opts.number = opts.layers or [1, 2, 11], 3, 5
    if opts.tophub:
        tophub.set_locations([opts.tophub])
    print(_common.load_line())
    print(_common.sgemm_peak_line(opts.threads))
    tasks = create_tasks(load_job(opts.job))
    history = ApplyHistoryBest(opts.log if opts.log else [])
    tuned = {t.workload for t in tasks if opts.log and history.best_by_target.get((t.target, t.workload))}
    totals = {n: [0.0, 0.0] for n in opts.threads}
    worst = {n: (float("inf"), "") for n in opts.threads}
    rng = np.random.default_rng(0)
    layers = range(len(tasks)) if opts.layers is None else [i for i in opts.layers if i < len(tasks)]
    for index in layers:
        task = tasks[index]
        with task.target, history:
            config = history.query(task.target, task.workload)
            sch, tensors = task.instantiate(config)
        source = "tuned" if task.workload in tuned else "fallback" if config.is_fallback else "pre-tuned"
        mod = build(sch, tensors, target=task.target)
        data_t, kernel_t, strides, pads = task.args[0], task.args[1], task.args[2], task.args[3]
        data = rng.standard_normal(data_t[1]).astype("float32")
        kernel = rng.standard_normal(kernel_t[1]).astype("float32")
        ic_bn, oc_bn = tensors[0].shape[-1], tensors[-1].shape[-1]
        depthwise = task.name.startswith("depthwise")
        if task.name.startswith("conv2d_NCHWc_winograd"):
            packed = ref.winograd_kernel_transform(kernel, tensors[1].shape[0] - 2, ic_bn, oc_bn)
        else:
            # A depthwise kernel [C, 1, KH, KW] packs as an OIHW kernel with input blocks of 1.
            packed = ref.oihw_to_kernel_nchwc(kernel, 1 if depthwise else ic_bn, oc_bn)
        blocked = [ref.nchw_to_nchwc(data, ic_bn), packed]
        out = np.zeros(tensors[-1].shape, dtype="float32")
        groups = data.shape[1] if depthwise else 1
        onnx_pads = [pads[0], pads[1], pads[2], pads[3]]
        mod(*blocked, out)
        label = (f"layer {index} {data_t[1][1]}->{kernel_t[1][0]} {kernel_t[1][2]}x{kernel_t[1][3]} "
                 f"s{strides[0]} {data_t[1][2]}x{data_t[1][3]}")
        print(f"{label}: {source} config {config}")
        for n in opts.threads:
            sess = conv_session(data, kernel, strides, onnx_pads, groups, n)
            feed = {"x": data}
            expected = sess.run(None, feed)[0]
            np.testing.assert_allclose(ref.nchwc_to_nchw(out), expected, rtol=1e-3, atol=1e-2)
            ((ours, theirs),) = _common.interleaved_medians(
                label, task.flop, partial(mod, *blocked, out), partial(sess.run, None, feed), set_num_threads,
                opts.rounds, opts.number, threads=[n], theirs_name="onnxruntime").values()
            totals[n][0] += ours
            totals[n][1] += theirs
            worst[n] = min(worst[n], (theirs / ours, label))
    for n, (ours, theirs) in totals.items():
        print(f"summed: threads={n} ours {ours * 1e3:.2f} ms, onnxruntime {theirs * 1e3:.2f} ms, "
              f"ours/onnxruntime time {ours / theirs if theirs else float('nan'):.2f}x; slowest layer "
              f"against onnxruntime: {worst[n][1]} at {1 / worst[n][0]:.2f}x its time")
    print(_common.peak_memory_line())


if __name__ == "__main__":
    main()
