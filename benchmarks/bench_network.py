"""Whole networks: ResNet-18, MobileNet v1 and v2 (or any built-in model of ``tunecli tune``'s
``model:`` registry; 224×224, batch 1, fp32) built by ``relay.build`` with pre-tuned or fallback
configs (or a tuning log, and the graph tuner's records) vs onnxruntime's CPU provider, at 1 and 2
threads.

Issue 30's untuned sets: ``--unseen`` runs ResNet-50, SqueezeNet 1.1 and EfficientNet-B0 (our own
definitions, ``engine/graph/models``) with the pre-tuned packages turned off (``tophub``'s
``NONE``), so every config is a fallback one: the package holds records of some of their workloads
(11 of EfficientNet-B0's 47 tasks, MobileNet v2's; 6 of ResNet-50's 21, ResNet-18's stem and 3x3
layers, and one more from a nearest record), which a network never seen by tunecli would not get.
``--with-package`` runs ResNet-18, MobileNet v1 and v2 with the shipped package.  ``--no-package``
turns the package off for the networks named with ``--network``; ``--package-dir DIR`` builds the
networks that take a package with DIR's searched first (``tophub.set_locations``: a candidate
package, e.g. new records, against ``--no-package`` or the shipped one).  Each build prints where its
configs came from (tuned: a log or the package; nearest records; fallback), and a table of
ours/onnxruntime per network ends the run.

The relay.testing model is exported to ONNX from the same parameters
(``engine.graph.frontend.onnx_export.to_onnx``), so both runtimes compute the same network; the
outputs are compared first.  Latencies are timed
round by round, ours then onnxruntime's (onnxruntime's first in every other round, so that
neither side always follows the other) with a pause before each (``--settle``), each side
``--number`` runs per round after 50 ms of untimed runs; medians of ``--rounds`` rounds.  Also
printed: the CPU time at 1 thread (ours and onnxruntime's; steadier than wall time when the machine
is shared), the build time, the kernel count, the executor's planned intermediate memory beside the
weights and the largest activation, and the process's peak RSS.

With ``--profile``, after the timed comparison at each thread count, each kernel of our build is
timed alone in graph order (``engine.runtime.debug_executor.time_kernels``: medians of ``--rounds``
batches of ``--number`` calls, each batch at least 5 ms) and the 15 slowest are printed with their
share and output shape, with the summed kernel time beside the whole run's median; then the
kernels timed within whole runs instead (each once per run, finding the caches as the kernels
before it left them: weights and scratch buffers streamed from memory) and the five that lose most
against their repeated calls.  Then each of
our convolution kernels beside onnxruntime's convolution node of the same output (channels within
a vector's padding, rows, columns), window and input channels per group (so not a batch norm
onnxruntime runs as a depthwise 1x1 convolution) in the same network, from onnxruntime's own per-node profile
(``SessionOptions.enable_profiling``, ``--number`` x ``--rounds`` runs): the fastest batch of ours
against the fastest single run of theirs (robust to other load; a single run's minimum favours
onnxruntime a little), the layers that lose most first, and the matched layers summed.  Layers
timed against a one-node onnxruntime model (``bench_nchwc.py``) flatter us: there onnxruntime
reorders its blocked layout in and out of every convolution.

Usage::

    .venv/bin/python benchmarks/bench_network.py --quick            # ResNet-18 only, 3 rounds
    .venv/bin/python benchmarks/bench_network.py                    # both networks, 15 rounds
    .venv/bin/python benchmarks/bench_network.py --log resnet18.log # tuned configs
    .venv/bin/python benchmarks/bench_network.py --network resnet-18 --log logs/resnet18.log \
        --graph-log logs/resnet18.graph.log                         # graph-tuned
    .venv/bin/python benchmarks/bench_network.py --quick --profile  # where our time goes, per kernel
    .venv/bin/python benchmarks/bench_network.py --unseen --with-package  # issue 30's untuned sets
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from typing import Any, TypeAlias

import _common  # before numpy: unsets the OpenBLAS variables
import numpy as np

from tunecli.engine.graph.build_module import build
from tunecli.engine.graph.frontend.onnx_export import to_onnx
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.graph_tuner.graph_best import ApplyGraphBest
from tunecli.engine.job.network_models import MODELS
from tunecli.engine.log import tophub
from tunecli.engine.log.history_best import apply_history_best
from tunecli.engine.runtime import GraphModule, GraphProfile, set_num_threads, time_kernels

#: Networks run when none is named.
DEFAULT_NETWORKS = ("resnet-18", "mobilenet", "mobilenet_v2")
#: Networks tunecli has no records of, built with the packages off (``--unseen``).
UNSEEN_NETWORKS = ("resnet-50", "squeezenet1.1", "efficientnet-b0")
#: Kernels listed by ``--profile``, and the shortest batch of one kernel's timing.
PROFILE_TOP = 15
#: onnxruntime's node in its profile: name, operator, output shape, second input's shape, seconds.
OrtNode: TypeAlias = tuple[str, str, tuple[int, ...], tuple[int, ...], float]
#: onnxruntime pads a blocked convolution's output channels up to its block (1000 -> 1008).
ORT_CHANNEL_PADDING = 16
PROFILE_MIN_REPEAT_MS = 5.0


def bench(name: str, package: bool, args: argparse.Namespace) -> dict[int, float]:
    """Build ``name`` (with the pre-tuned packages or without) and time it against onnxruntime:
    ours/onnxruntime by thread count (0: CPU time at 1 thread)."""
    import onnxruntime as ort

    model = MODELS[name]
    mod, params = model.load(1, model.image_shape, "float32")
    kernels_best = apply_history_best(args.log) if args.log else contextlib.nullcontext()
    graph_best = ApplyGraphBest(args.graph_log) if args.graph_log else contextlib.nullcontext()
    start = time.perf_counter()
    tophub.set_locations((args.package_dir or None) if package else tophub.DISABLED)
    try:
        with kernels_best, graph_best, PassContext(opt_level=3):
            lib = build(mod, "llvm", params=params)
    finally:
        tophub.set_locations(None)
    build_s = time.perf_counter() - start
    m = lib["default"](None)
    data = np.random.default_rng(0).uniform(-1, 1, (1, *model.image_shape)).astype("float32")
    m.set_input(model.input_name, data)
    onnx_bytes = to_onnx(mod, {k: np.asarray(v) for k, v in params.items()})
    planned, unplanned = lib.plan.intermediate_bytes()
    weights = sum(np.asarray(v).nbytes for v in lib.get_params().values())
    largest = lib.plan.largest_output_bytes()
    ratios = {}
    source = f"with the package{' in ' + ', '.join(args.package_dir) if args.package_dir else ''}" \
        if package else "no package"
    print(f"{name} ({source}): built in {build_s:.1f} s, {len(lib.kernels)} kernels ({lib.summary.line()})")
    print(f"  memory: weights {weights / 2**20:.1f} MiB, planned intermediates {planned / 2**20:.2f} MiB "
          f"(without reuse {unplanned / 2**20:.2f} MiB), largest activation {largest / 2**20:.2f} MiB")
    for threads in (1, 2):
        set_num_threads(threads)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        sess = ort.InferenceSession(onnx_bytes, opts, providers=["CPUExecutionProvider"])
        feed = {model.input_name: data}

        def theirs_run(sess: Any = sess, feed: dict = feed) -> Any:
            return sess.run(None, feed)

        m.run()
        expected = sess.run(None, feed)[0]
        np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-3, atol=1e-5)
        ours, theirs, ours_cpu, theirs_cpu = [], [], [], []
        sides = [(m.run, ours, ours_cpu), (theirs_run, theirs, theirs_cpu)]
        for r in range(args.rounds):
            for run, wall_list, cpu_list in sides if r % 2 == 0 else sides[::-1]:
                time.sleep(args.settle)
                _common.warm_up(run)
                wall, cpu_per_wall = _common.batch_seconds(run, args.number)
                wall_list.append(wall)
                cpu_list.append(wall * cpu_per_wall)
        mo, mt = _common.median(ours), _common.median(theirs)
        print(f"  threads={threads}: ours {mo * 1e3:8.2f} ms   onnxruntime {mt * 1e3:8.2f} ms   "
              f"ours/onnxruntime {mo / mt:5.2f}x  (medians of {args.rounds} rounds x {args.number} runs)")
        ratios[threads] = mo / mt
        if threads == 1:
            co, ct = _common.median(ours_cpu), _common.median(theirs_cpu)
            print(f"  threads=1, CPU time: ours {co * 1e3:8.2f} ms   onnxruntime {ct * 1e3:8.2f} ms   "
                  f"ours/onnxruntime {co / ct:5.2f}x  (steadier than wall time on a busy machine)")
            ratios[0] = co / ct
        if args.profile:
            profile = print_profile(m, lib.get_graph_json(), mo, args)
            theirs_nodes = onnxruntime_nodes(onnx_bytes, feed, threads, args)
            print_layer_comparison(profile, lib.get_graph_json(), theirs_nodes)
    return ratios


def print_profile(m: GraphModule, graph_json: str, run_seconds: float,
                  args: argparse.Namespace) -> GraphProfile:
    """The slowest kernels of ``m`` at the current thread count, and their sum beside a whole run."""
    profile = time_kernels(m.executor, graph_json, args.number, args.rounds, PROFILE_MIN_REPEAT_MS)
    total = profile.kernel_seconds
    print(f"    kernels: summed {total * 1e3:.2f} ms vs whole run {run_seconds * 1e3:.2f} ms "
          f"({total / run_seconds:.0%}); the {PROFILE_TOP} slowest of {len(profile.ops)} kernel calls:")
    print(f"    {'ms':>8} {'share':>6}  {'output shape':<22} kernel")
    for op in profile.slowest(PROFILE_TOP):
        print(f"    {op.seconds * 1e3:8.3f} {op.share:6.1%}  {str(op.shape):<22} {op.func_name}")
    in_order = kernels_within_runs(m, args.number * args.rounds)
    print(f"    the kernels within whole runs, each as the run leaves the caches (medians of "
          f"{args.number * args.rounds} runs): summed {sum(in_order) * 1e3:.2f} ms; the {PROFILE_TOP // 3} "
          f"that lose most against repeated calls (weights and scratch streamed from memory):")
    losses = sorted(zip(in_order, profile.ops, strict=True), key=lambda p: p[1].seconds - p[0])
    for seconds, op in losses[:PROFILE_TOP // 3]:
        print(f"    {seconds * 1e3:8.3f} vs {op.seconds * 1e3:.3f} ms  {str(op.shape):<22} {op.func_name}")
    return profile


def kernels_within_runs(m: GraphModule, runs: int) -> list[float]:
    """Each kernel's median seconds over ``runs`` runs of the graph, kernel by kernel in order (so
    each finds the weights, inputs and scratch memory where the kernels before it left them)."""
    calls = m.executor.kernel_calls()
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(runs):
        for (func, call_args), samples in zip(calls, times, strict=True):
            start = time.perf_counter()
            func(*call_args)
            samples.append(time.perf_counter() - start)
    return [_common.median(samples) for samples in times]


def onnxruntime_nodes(onnx_bytes: bytes, feed: dict, threads: int,
                      args: argparse.Namespace) -> list[OrtNode]:
    """onnxruntime's nodes in execution order from its own profile of ``--number`` x ``--rounds``
    runs: (node name, operator, output shape, second input's shape, fastest run's seconds)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        opts.profile_file_prefix = os.path.join(tmp, "ort")
        sess = ort.InferenceSession(onnx_bytes, opts, providers=["CPUExecutionProvider"])
        for _ in range(args.number * args.rounds + 1):
            sess.run(None, feed)
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    nodes: dict[str, tuple[str, tuple[int, ...], tuple[int, ...], list[float]]] = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            outs, ins = ([tuple(next(iter(s.values()))) for s in e["args"].get(key, [])]
                         for key in ("output_type_shape", "input_type_shape"))
            entry = nodes.setdefault(e["name"][:-len("_kernel_time")], (
                e["args"].get("op_name", "?"), outs[0] if outs else (), ins[1] if len(ins) > 1 else (), []))
            entry[3].append(e["dur"] * 1e-6)
    # The first run (before the loop's) is onnxruntime's warm-up: its own profile counts it too.
    return [(name, op, out, weight, min(times[1:] or times))
            for name, (op, out, weight, times) in nodes.items()]


def _conv_output(shape: tuple[int, ...]) -> tuple[int, int, int] | None:
    """(channels, rows, columns) of a convolution's NCHW or NCHW{b}c output."""
    if len(shape) == 5:
        return shape[1] * shape[4], shape[2], shape[3]
    return (shape[1], shape[2], shape[3]) if len(shape) == 4 else None


def _our_windows(graph_json: str) -> dict[int, tuple[int, int, int]]:
    """The kernel window and input channels per group of each convolution node of our graph: its
    weight is blocked ``[O/o, I/i, KH, KW, i, o]`` (depthwise: ``i`` is 1) or, for Winograd (3x3
    only), transformed ``[a, a, O/o, I/i, i, o]``."""
    g = json.loads(graph_json)
    shapes, rows = g["attrs"]["shape"][1], g["node_row_ptr"]
    windows = {}
    for nid, node in enumerate(g["nodes"]):
        func = node.get("attrs", {}).get("func_name", "")
        if node["op"] == "tvm_op" and "conv2d" in func and len(node["inputs"]) > 1:
            weight = shapes[rows[node["inputs"][1][0]] + node["inputs"][1][1]]
            if "winograd" in func:
                windows[nid] = (3, 3, weight[3] * weight[4])
            elif len(weight) == 6:
                windows[nid] = (weight[2], weight[3], weight[1] * weight[4])
    return windows


def print_layer_comparison(profile: GraphProfile, graph_json: str,
                           theirs: list[OrtNode]) -> None:
    """Our convolution kernels beside onnxruntime's convolution nodes of the same output and window,
    in graph order (see the module docstring); the layers we lose most on first."""
    pending = [(name, _conv_output(out), (*weight[2:4], weight[1]), seconds)
               for name, op, out, weight, seconds in theirs if "Conv" in op and len(weight) == 4]
    windows = _our_windows(graph_json)
    pairs = []
    for op in profile.ops:
        out = _conv_output(tuple(op.shape))
        if op.node not in windows or out is None:
            continue
        match = next((p for p in pending if p[1] is not None and p[1][1:] == out[1:]
                      and p[2][:2] == windows[op.node][:2]
                      and windows[op.node][2] <= p[2][2] < windows[op.node][2] + ORT_CHANNEL_PADDING
                      and out[0] <= p[1][0] < out[0] + ORT_CHANNEL_PADDING), None)
        if match is not None:
            pending.remove(match)
            pairs.append((min(op.results), match[3], op, match[0]))
    if not pairs:
        print("    no convolution of ours matched one of onnxruntime's")
        return
    ours, ort_sum = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    print(f"    convolutions beside onnxruntime's in the same network (fastest batch / run): {len(pairs)} "
          f"matched, ours {ours * 1e3:.2f} ms vs {ort_sum * 1e3:.2f} ms ({ours / ort_sum:.2f}x); "
          f"the {min(PROFILE_TOP, len(pairs))} we lose most on:")
    print(f"    {'ours ms':>8} {'ort ms':>8} {'ratio':>6}  {'output shape':<22} kernel / onnxruntime node")
    for mine, them, op, node in sorted(pairs, key=lambda p: p[1] - p[0])[:PROFILE_TOP]:
        print(f"    {mine * 1e3:8.3f} {them * 1e3:8.3f} {mine / them:5.2f}x  {str(op.shape):<22} "
              f"{op.func_name} / {node}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="3 rounds of 2 runs (ResNet-18 only when no network is named)")
    parser.add_argument("--network", choices=sorted(MODELS), action="append",
                        help=f"a built-in model (repeatable; default: {', '.join(DEFAULT_NETWORKS)})")
    parser.add_argument("--unseen", action="store_true",
                        help=f"{', '.join(UNSEEN_NETWORKS)} without the pre-tuned package")
    parser.add_argument("--with-package", action="store_true",
                        help=f"{', '.join(DEFAULT_NETWORKS)} with the pre-tuned package")
    parser.add_argument("--no-package", action="store_true",
                        help="build the --network networks without the pre-tuned package")
    parser.add_argument("--package-dir", action="append", metavar="DIR",
                        help="a package directory searched before the shipped one (repeatable)")
    parser.add_argument("--log", help="tuning log applied with apply_history_best")
    parser.add_argument("--graph-log",
                        help="graph tuner records applied with apply_graph_best (inside --log)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=5)
    parser.add_argument("--settle", type=float, default=0.5)
    parser.add_argument("--profile", action="store_true",
                        help=f"also time each kernel; print the {PROFILE_TOP} slowest at each thread count")
    args = parser.parse_args()
    for directory in args.package_dir or ():
        if not os.path.isdir(directory):
            parser.error(f"--package-dir {directory}: not a directory")
    if args.quick:
        args.rounds, args.number, args.settle = 3, 2, 0.2
    runs = [(name, not args.no_package) for name in args.network or ()]
    runs += [(name, False) for name in UNSEEN_NETWORKS if args.unseen]
    runs += [(name, True) for name in DEFAULT_NETWORKS if args.with_package]
    if not runs:
        runs = [(name, True) for name in (["resnet-18"] if args.quick else DEFAULT_NETWORKS)]
    print(_common.load_line())
    table = [(name, package, bench(name, package, args)) for name, package in runs]
    print(f"{'network':<18} {'package':<8} {'1 thread':>9} {'2 threads':>10} {'1 thread CPU':>13}  "
          "(ours/onnxruntime, medians)")
    for name, package, ratios in table:
        print(f"{name:<18} {'yes' if package else 'no':<8} {ratios[1]:8.2f}x {ratios[2]:9.2f}x "
              f"{ratios[0]:12.2f}x")
    print(_common.peak_memory_line())


if __name__ == "__main__":
    main()
