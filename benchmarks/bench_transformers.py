"""Transformers: BERT-base (sequence 128), GPT-2 (a 128-token prefill) and ViT-B/16 (224×224), batch
1, fp32, built by ``relay.build`` untuned (the pre-tuned package's records, else fallback configs)
and, with ``--log``, with a tuning log's best configs, vs onnxruntime's CPU provider with its
default graph optimizations, at 1 and 2 threads.

The built-in models of ``tunecli tune``'s ``model:`` registry are written as ONNX from the same
parameters (``engine.graph.frontend.onnx_export.to_onnx``), so both runtimes compute the same
network; the outputs are compared first (token ids drawn over the whole vocabulary).  Latencies
are timed round by round, each contender in turn (ours untuned, ours tuned, onnxruntime) with a
pause before each (``--settle``), ``--number`` runs per round after 50 ms of untimed runs;
medians of ``--rounds`` rounds, and each of ours as a ratio to onnxruntime's time (< 1: ours is
faster).  At 1 thread the medians of the process's CPU time per run are printed too: on a shared
machine a run descheduled for a while inflates its wall time but not its CPU time, so their
ratios are the steadier indication there (at 2 threads the CPU time adds up both threads).  Also
printed: each build's time and kernel count, the FLOPs of the network's dense and batched
products and the GFLOP/s they imply, and the process's peak RSS after each network.

``--kernels N`` also prints where the tuned build's time goes (the untuned one's without
``--log``), summed per fused operator pattern (the kernel name less its numeric suffix), the N
largest: each kernel timed alone on the network's buffers at 1 thread, called again and again
(CPU time, the fastest of 5 batches: its weights stay in the caches), and in the network at 1 and
at 2 threads (the fastest of ``IN_NETWORK_PASSES`` passes over all kernels in order, each call
timed once: its weights come from memory, as in a run).  The dense layers' and batched products'
GFLOP/s each way are printed beside OpenBLAS's sgemm on one thread, a practical ceiling of the
core; then onnxruntime's own profile of the same network at 1 and 2 threads, by operator type
(each node's fastest of as many runs), so that a loss at 2 threads can be traced to its operators.

``--layers N`` builds each model with N layers instead of 12 (same widths): a quick look at the
per-layer speed (the embeddings, and GPT-2's vocabulary-wide output layer, stay whole).

``--parts`` times, instead of the models, single parts at 1 thread against onnxruntime on the same
graph: patch embeddings (convolution + bias + flattened into tokens: ViT-B/16's, ViT-B/32's, and a
4×4 stem over 3 channels, which ``PatchConvToDense`` leaves alone) built with that pass disabled
and enabled, and the softmax of ViT's and BERT's attention scores and ViT's layer norm; each the
fastest of ``PART_ROUNDS`` single runs, the contenders in turn (the min: robust to a busy machine).

Usage::

    .venv/bin/python benchmarks/bench_transformers.py --quick          # 2 layers, 3 rounds
    .venv/bin/python benchmarks/bench_transformers.py                  # the three full models
    .venv/bin/python benchmarks/bench_transformers.py --network bert-base --log logs/bert.log
    .venv/bin/python benchmarks/bench_transformers.py --quick --network vit-b16 --kernels 12
    .venv/bin/python benchmarks/bench_transformers.py --parts
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import re
import time
from collections.abc import Callable
from typing import Any

import _common  # before numpy: unsets the OpenBLAS variables
import numpy as np

from tunecli.engine.graph.build_module import BuiltGraph, build
from tunecli.engine.graph.extract import operator_tasks, tunable_operators
from tunecli.engine.graph.frontend.onnx_export import to_onnx
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.job.network_models import MODELS
from tunecli.engine.log.history_best import apply_history_best
from tunecli.engine.runtime import set_num_threads
from tunecli.engine.runtime.graph_executor import GraphModule
from tunecli.engine.target import parse_target

#: The networks, as TLCBench and the issue measure them.
NETWORKS = ("bert-base", "gpt2", "vit-b16")
#: Token ids are drawn below these (the models' vocabularies).
VOCABULARY = {"bert-base": 30522, "gpt2": 50257}
TARGET = parse_target("llvm")
#: Passes over a network's kernels in order for their in-network times (``--kernels``).
IN_NETWORK_PASSES = 20
#: Single runs of each part, the contenders in turn (``--parts``).
PART_ROUNDS = 200
#: ``--parts``' patch embeddings: (input NCHW, weight OIHW).
PATCHES = {"ViT-B/16": ((1, 3, 224, 224), (768, 3, 16, 16)), "ViT-B/32": ((1, 3, 224, 224), (768, 3, 32, 32)),
           "4x4 stem, 3 channels": ((1, 3, 224, 224), (96, 3, 4, 4))}


def load(name: str, layers: int | None) -> tuple[Any, dict[str, Any], dict[str, np.ndarray]]:
    """The model (its default input shape, ``layers`` layers) and its seeded input."""
    model = MODELS[name]
    mod, params = model.load(1, model.sample_shape, "float32", **({"layers": layers} if layers else {}))
    rng = np.random.default_rng(0)
    if model.is_text:
        data = rng.integers(0, VOCABULARY[name], (1, *model.sample_shape)).astype("int64")
    else:
        data = rng.uniform(-1, 1, (1, *model.sample_shape)).astype("float32")
    return mod, params, {model.input_name: data}


def product_flops(mod: Any, params: dict[str, Any]) -> float:
    """FLOPs of one run's dense layers and batched products (each tunable call once, whichever of
    its alternative tasks a build runs)."""
    found = tunable_operators(mod, params, TARGET, ("nn.dense", "nn.batch_matmul", "nn.conv2d"))
    tasks = operator_tasks(found, TARGET)
    return sum(float(tasks[op.workloads[0]].flop or 0) * op.occurrences for op in found)


def timed_build(mod: Any, params: dict[str, Any], context: Any) -> tuple[BuiltGraph, float]:
    """``relay.build`` at opt_level 3 under ``context``, and its seconds."""
    start = time.perf_counter()
    with context, PassContext(opt_level=3):
        lib = build(mod, "llvm", params=params)
    return lib, time.perf_counter() - start


def kernel_calls(module: GraphModule, threads: int) -> list[tuple[str, Any, Any]]:
    """``(pattern, function, arguments)`` of each kernel call of a run, in order, at ``threads``
    threads (the pattern: the kernel's name less its numeric suffix)."""
    set_num_threads(threads)
    executor = module.executor
    return [(re.sub(r"_\d+$", "", name.removeprefix("tvmgen_default_fused_")), func, arguments)
            for (name, _), (func, arguments) in zip(executor.plan.ops, executor.kernel_calls(), strict=True)]


def in_network_seconds(module: GraphModule, threads: int) -> dict[str, float]:
    """Each pattern's time per run at ``threads`` threads in the network: the fastest of
    ``IN_NETWORK_PASSES`` passes over all kernels in order, each call timed once."""
    calls = kernel_calls(module, threads)
    fastest = [float("inf")] * len(calls)
    for _ in range(IN_NETWORK_PASSES):
        for i, (_, func, arguments) in enumerate(calls):
            start = time.perf_counter()
            func(*arguments)
            fastest[i] = min(fastest[i], time.perf_counter() - start)
    seconds: dict[str, float] = collections.defaultdict(float)
    for (pattern, _, _), t in zip(calls, fastest, strict=True):
        seconds[pattern] += t
    return seconds


def onnxruntime_profile(onnx_bytes: bytes, feed: dict[str, np.ndarray], threads: int) -> dict[str, float]:
    """onnxruntime's time per run by operator type at ``threads`` threads: each node's fastest of
    ``IN_NETWORK_PASSES`` runs (its profiler's kernel times), summed per type."""
    import json
    import os
    import tempfile

    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
    opts.enable_profiling = True
    opts.profile_file_prefix = os.path.join(tempfile.gettempdir(), "ort_profile")
    sess = ort.InferenceSession(onnx_bytes, opts, providers=["CPUExecutionProvider"])
    for _ in range(IN_NETWORK_PASSES):
        sess.run(None, feed)
    path = sess.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    fastest: dict[str, tuple[str, float]] = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            op, dur = e["args"]["op_name"], e["dur"] * 1e-6
            if e["name"] not in fastest or dur < fastest[e["name"]][1]:
                fastest[e["name"]] = (op, dur)
    per_op: dict[str, float] = collections.defaultdict(float)
    for op, dur in fastest.values():
        per_op[op] += dur
    return per_op


def kernel_breakdown(module: GraphModule, flops: float, count: int, onnx_bytes: bytes,
                     feed: dict[str, np.ndarray]) -> None:
    """Print the ``count`` fused operator patterns of ``module`` with the most time per run, each
    kernel timed alone at 1 thread and in the network at 1 and 2 threads (see the module
    docstring), the products' GFLOP/s, and onnxruntime's profile by operator type."""
    calls = kernel_calls(module, 1)
    alone: dict[str, float] = collections.defaultdict(float)
    for pattern, func, arguments in calls:
        func(*arguments)
        batches = []
        for _ in range(5):
            start = time.process_time()
            for _ in range(3):
                func(*arguments)
            batches.append((time.process_time() - start) / 3)
        alone[pattern] += min(batches)
    in_network = {t: in_network_seconds(module, t) for t in (1, 2)}
    counts = collections.Counter(pattern for pattern, _, _ in calls)

    def products(times: dict[str, float]) -> float:
        return sum(t for p, t in times.items() if p.startswith(("nn_dense", "nn_batch_matmul", "nn_conv2d")))

    print(f"  kernels: {sum(alone.values()) * 1e3:.2f} ms alone (1 thread, CPU), in the network "
          + ", ".join(f"{sum(v.values()) * 1e3:.2f} ms at {t} thread{'s' if t > 1 else ''}"
                      for t, v in in_network.items())
          + f"; the products {flops / products(alone) / 1e9:.1f} GFLOP/s alone, "
          + ", ".join(f"{flops / products(v) / 1e9:.1f}" for v in in_network.values()) + " in the network")
    print(f"  {_common.sgemm_peak_line([1])}")
    print("     alone    in network (1 / 2 threads)")
    for pattern, seconds in sorted(in_network[1].items(), key=lambda item: -item[1])[:count]:
        two = in_network[2][pattern]
        print(f"    {alone[pattern] * 1e3:8.3f} ms {seconds * 1e3:8.3f} ms {two * 1e3:8.3f} ms "
              f"{counts[pattern]:3d}x {pattern}")
    profiles = {t: onnxruntime_profile(onnx_bytes, feed, t) for t in (1, 2)}
    print("  onnxruntime by operator type (each node's fastest of "
          f"{IN_NETWORK_PASSES} runs; 1 / 2 threads): "
          + ", ".join(f"{sum(v.values()) * 1e3:.2f} ms" for v in profiles.values()))
    for op, seconds in sorted(profiles[1].items(), key=lambda item: -item[1])[:count]:
        print(f"             {seconds * 1e3:8.3f} ms {profiles[2].get(op, 0.0) * 1e3:8.3f} ms  {op}")


def bench(name: str, args: argparse.Namespace) -> None:
    import onnxruntime as ort

    mod, params, feed = load(name, args.layers)
    label = f"{name}" + (f" ({args.layers} layers)" if args.layers else "")
    builds = {"untuned": timed_build(mod, params, contextlib.nullcontext())}
    if args.log:
        builds["tuned"] = timed_build(mod, params, apply_history_best(args.log))
    flops = product_flops(mod, params)
    print(f"{label}: {flops / 1e9:.2f} GFLOP in dense layers and batched products per run")
    for kind, (lib, seconds) in builds.items():
        print(f"  {kind}: built in {seconds:.1f} s, {len(lib.kernels)} kernels ({lib.summary.line()})")
    onnx_bytes = to_onnx(mod, {k: np.asarray(v) for k, v in params.items()})
    modules = {}
    for kind, (lib, _) in builds.items():
        m = lib["default"](None)
        for key, value in feed.items():
            m.set_input(key, value)
        modules[kind] = m
    for threads in (1, 2):
        set_num_threads(threads)
        opts = ort.SessionOptions()  # default graph optimizations (ORT_ENABLE_ALL)
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        sess = ort.InferenceSession(onnx_bytes, opts, providers=["CPUExecutionProvider"])
        expected = sess.run(None, feed)[0]
        for kind, m in modules.items():
            m.run()
            got = m.get_output(0).numpy()
            error = float(np.abs(got - expected).max() / max(float(np.abs(expected).max()), 1e-30))
            if threads == 1:
                print(f"  {kind}: relative error to onnxruntime {error:.2g}")
        contenders: dict[str, Callable[[], Any]] = {kind: m.run for kind, m in modules.items()}
        contenders["onnxruntime"] = lambda sess=sess: sess.run(None, feed)
        times: dict[str, list[float]] = {kind: [] for kind in contenders}
        cpu: dict[str, list[float]] = {kind: [] for kind in contenders}
        for _ in range(args.rounds):
            for kind, run in contenders.items():
                time.sleep(args.settle)
                _common.warm_up(run)
                wall, cpu_per_wall = _common.batch_seconds(run, args.number)
                times[kind].append(wall)
                cpu[kind].append(wall * cpu_per_wall)
        medians = {kind: _common.median(values) for kind, values in times.items()}
        best = min(s for kind, s in medians.items() if kind != "onnxruntime")
        print(f"  threads={threads}: {ratios(medians)}   ours {flops / best / 1e9:.1f} GFLOP/s "
              f"(medians of {args.rounds} rounds x {args.number} runs)")
        if threads == 1:
            print(f"  threads=1, CPU time: {ratios({k: _common.median(v) for k, v in cpu.items()})}")
    if args.kernels:
        kernel_breakdown(modules.get("tuned", modules["untuned"]), flops, args.kernels, onnx_bytes, feed)
    print(f"  {_common.peak_memory_line()}")


def fastest_runs(contenders: dict[str, Callable[[], Any]]) -> dict[str, float]:
    """Each contender's fastest of ``PART_ROUNDS`` single runs, the contenders in turn."""
    for run in contenders.values():
        _common.warm_up(run)
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(PART_ROUNDS):
        for kind, run in contenders.items():
            start = time.perf_counter()
            run()
            best[kind] = min(best[kind], time.perf_counter() - start)
    return best


def part_graphs() -> dict[str, tuple[Any, dict[str, np.ndarray], np.ndarray]]:
    """``--parts``' graphs by label: (module, parameters, input)."""
    from tunecli import relay
    from tunecli.engine.graph import Function, IRModule
    from tunecli.engine.graph.ops.layer_norm import layer_norm

    rng = np.random.default_rng(0)
    parts = {}
    for label, (dshape, wshape) in PATCHES.items():
        x, w = relay.var("x", shape=dshape), relay.var("w", shape=wshape)
        b = relay.var("b", shape=(wshape[0], 1, 1))
        conv = relay.add(relay.nn.conv2d(x, w, strides=wshape[2:]), b)
        pixels = (dshape[2] // wshape[2]) * (dshape[3] // wshape[3])
        tokens = relay.transpose(relay.reshape(conv, (1, wshape[0], pixels)), (0, 2, 1))
        params = {"w": rng.normal(0, 0.05, wshape).astype("float32"),
                  "b": rng.normal(0, 1, (wshape[0], 1, 1)).astype("float32")}
        parts[f"patches {label}"] = (IRModule.from_expr(Function([x, w, b], tokens)), params,
                                     rng.uniform(-1, 1, dshape).astype("float32"))
    for label, shape in (("ViT 12x197x197", (12, 197, 197)), ("BERT 12x128x128", (12, 128, 128))):
        x = relay.var("x", shape=shape)
        parts[f"softmax {label}"] = (IRModule.from_expr(Function([x], relay.nn.softmax(x, axis=-1))), {},
                                     rng.normal(0, 3, shape).astype("float32"))
    x = relay.var("x", shape=(1, 197, 768))
    gamma, beta = relay.var("g", shape=(768,)), relay.var("b", shape=(768,))
    norm = IRModule.from_expr(Function([x, gamma, beta], layer_norm(x, gamma, beta)))
    parts["layer norm ViT 197x768"] = (norm, {"g": rng.uniform(0.5, 1.5, 768).astype("float32"),
                                              "b": rng.normal(0, 1, 768).astype("float32")},
                                       rng.normal(0, 1, (1, 197, 768)).astype("float32"))
    return parts


def bench_parts() -> None:
    """``--parts``: each part at 1 thread, ours (patch embeddings also without ``PatchConvToDense``)
    against onnxruntime on the same graph."""
    import onnxruntime as ort

    set_num_threads(1)
    for label, (mod, params, data) in part_graphs().items():
        builds: dict[str, list[str]] = {"ours": []}
        if label.startswith("patches"):
            builds = {"convolution": ["PatchConvToDense"], "ours": []}
        contenders: dict[str, Callable[[], Any]] = {}
        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = 1, 1
        sess = ort.InferenceSession(to_onnx(mod, params), opts, providers=["CPUExecutionProvider"])
        expected = sess.run(None, {"x": data})[0]
        for kind, disabled in builds.items():
            with PassContext(opt_level=3, disabled_pass=disabled):
                lib = build(mod, "llvm", params=params)
            m = lib["default"](None)
            m.set_input("x", data)
            m.run()
            error = float(np.abs(m.get_output(0).numpy() - expected).max() / np.abs(expected).max())
            if error > 1e-4:
                raise SystemExit(f"{label}: {kind} differs from onnxruntime by {error:.2g}")
            contenders[kind] = m.run
        contenders["onnxruntime"] = lambda sess=sess, data=data: sess.run(None, {"x": data})
        best = fastest_runs(contenders)
        ort_s = best["onnxruntime"]
        print(f"  {label:30s}" + "   ".join(
            f"{kind} {t * 1e3:.3f} ms" + ("" if kind == "onnxruntime" else f" ({t / ort_s:.2f}x)")
            for kind, t in best.items()))


def ratios(medians: dict[str, float]) -> str:
    """Each contender's median in ms, ours also as a ratio to onnxruntime's."""
    ort_s = medians["onnxruntime"]
    return "   ".join(f"{kind} {s * 1e3:8.2f} ms" + ("" if kind == "onnxruntime" else f" ({s / ort_s:4.2f}x)")
                      for kind, s in medians.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 layers, 3 rounds of 2 runs")
    parser.add_argument("--network", choices=NETWORKS, action="append",
                        help=f"a model (repeatable; default: {', '.join(NETWORKS)})")
    parser.add_argument("--layers", type=int, help="layers of each model (default: 12, its own)")
    parser.add_argument("--log", help="tuning log applied with apply_history_best (the tuned build)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=5)
    parser.add_argument("--settle", type=float, default=0.5)
    parser.add_argument("--parts", action="store_true",
                        help="time patch embeddings, softmax and layer norm alone against onnxruntime")
    parser.add_argument("--kernels", type=int, default=0,
                        help="also print the N costliest fused operators of the tuned build (else untuned), "
                             "alone and in the network at 1 and 2 threads, and onnxruntime's profile")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.number, args.settle = 3, 2, 0.2
        args.layers = args.layers or 2
    print(_common.load_line())
    if args.parts:
        print(f"parts at 1 thread, the fastest of {PART_ROUNDS} runs each (ratios: time to onnxruntime's)")
        bench_parts()
        return
    for name in args.network or list(NETWORKS):
        bench(name, args)


if __name__ == "__main__":
    main()
