"""The classifier layers of ResNet-18 and MobileNet (``dense`` + ``bias_add``, batch 1, fp32) built by
``relay.build`` vs numpy and onnxruntime's ``Gemm``, at 1 and 2 threads.

Each shape (``1×512 · 512×1000``: ResNet-18; ``1×1024 · 1024×1000``: MobileNet v1) is built as a
one-kernel network, weights bound as constants (so the packed weight panels are computed at
build time), twice: with the fallback config (no records, no pre-tuned package) and as a user's
untuned ``relay.build`` gets it (the pre-tuned packages first).  The same layer runs in numpy
(``x @ w.T + b``) and in onnxruntime's CPU provider (the graph exported to one ``Gemm``); outputs
are compared first.  Timing: ``_common.interleaved_medians`` (our run, then the reference, each
after a ``--settle`` pause and 50 ms of untimed calls; ``--number`` calls per round, medians of
``--rounds`` rounds).  Our time is ``GraphModule.run`` of the one-kernel graph.  Batches other
than 1 with ``--batch``.

``--tune TRIALS`` asks instead whether a tuned record's cost is what the network runs: each
layer's ``dense.x86`` task is tuned (``XGBTuner``, knob features, seed 0; LocalRunner
``number=50 repeat=3``, correctness checked) at ``--tune-threads`` threads, and the best record
is reported three ways: its cost as the tuner measured it (the kernel on the pre-packed weight),
the record's kernel as it stands in the network built with it (``debug_executor.time_kernels``;
panels folded at build time, bias fused), the fallback build's kernel (the GEMV fallback) and the
record's config with the packing inside the kernel (what the tuner measured before the weight was
given packed; ``time_evaluator``), interleaved round by round at ``--tune-threads``; then whole
``GraphModule.run`` calls of the tuned and fallback builds, interleaved.

Usage::

    .venv/bin/python benchmarks/bench_dense_gemv.py --quick     # 3 rounds
    .venv/bin/python benchmarks/bench_dense_gemv.py --batch 1 2 16
    .venv/bin/python benchmarks/bench_dense_gemv.py --tune 48 --quick
    .venv/bin/python benchmarks/bench_dense_gemv.py --log logs/resnet18.log   # a log's best record
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import _common  # before numpy: unsets the OpenBLAS variables
import numpy as np

from tunecli.engine.build import build as build_kernel
from tunecli.engine.graph.build_module import build
from tunecli.engine.graph.frontend.onnx_export import to_onnx
from tunecli.engine.graph.graph_expr import Function, var
from tunecli.engine.graph.ir_module import IRModule
from tunecli.engine.graph.models.layers import dense_add_bias
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.graph.traversal import free_vars
from tunecli.engine.log import record
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.measure import LocalBuilder, LocalRunner, measure_option
from tunecli.engine.ops import registry
from tunecli.engine.runtime import set_num_threads
from tunecli.engine.runtime.debug_executor import time_kernels
from tunecli.engine.task.task import create
from tunecli.engine.tuner import XGBTuner
from tunecli.engine.tuner.callback import log_to_file

TARGET = "llvm"
LAYERS = {"resnet-18 fc": (512, 1000), "mobilenet fc": (1024, 1000)}


def classifier(batch: int, k: int, n: int) -> tuple[IRModule, dict[str, np.ndarray]]:
    """``dense_add_bias`` of ``data [batch, k]`` to ``n`` units, with random weights."""
    data = var("data", shape=(batch, k), dtype="float32")
    out = dense_add_bias(data, "fc", units=n)
    rng = np.random.default_rng(k)
    params = {"fc_weight": rng.uniform(-0.05, 0.05, (n, k)).astype("float32"),
              "fc_bias": rng.uniform(-1, 1, n).astype("float32")}
    return IRModule.from_expr(Function(free_vars(out), out)), params


def built_module(mod: IRModule, params: dict, x: np.ndarray, pretuned: bool,
                 records: Any = ()) -> tuple[Any, Any, Any]:
    """The graph module with ``x`` set, the build and its output (``records``: a log applied
    instead of the pre-tuned packages)."""
    with PassContext(opt_level=3):
        if pretuned:
            lib = build(mod, TARGET, params=params)
        else:
            with ApplyHistoryBest(records or [], pretuned=False):
                lib = build(mod, TARGET, params=params)
    m = lib["default"](None)
    m.set_input("data", x)
    m.run()
    return m, lib, m.get_output(0).numpy()


def kernel_seconds(m: Any, lib: Any) -> float:
    """The one kernel's time as it stands in the graph (``debug_executor.time_kernels``), after
    50 ms of untimed runs."""
    _common.warm_up(m.run)
    (op,) = time_kernels(m.executor, lib.graph, number=50, repeat=5).ops
    return op.seconds


def bench(label: str, batch: int, k: int, n: int, args: argparse.Namespace) -> None:
    import onnxruntime as ort

    mod, params = classifier(batch, k, n)
    x = np.random.default_rng(0).uniform(-1, 1, (batch, k)).astype("float32")
    w, b = params["fc_weight"], params["fc_bias"]
    expected = x @ w.T + b
    onnx_bytes = to_onnx(mod, params)
    flops = 2.0 * batch * n * k
    for config, pretuned in (("fallback", False), ("untuned build", True)):
        m, lib, got = built_module(mod, params, x, pretuned)
        run = m.run
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        name = f"{label} b{batch} {config}"
        print(f"{name}: {lib.summary.line()}")
        _common.interleaved_medians(name, flops, run, lambda: x @ w.T + b, set_num_threads,
                                    args.rounds, args.number, args.settle)
        for threads in (1, 2):
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            sess = ort.InferenceSession(onnx_bytes, opts, providers=["CPUExecutionProvider"])
            feed = {"data": x}
            np.testing.assert_allclose(sess.run(None, feed)[0], expected, rtol=1e-4, atol=1e-4)
            _common.interleaved_medians(name, flops, run, lambda s=sess, f=feed: s.run(None, f),
                                        set_num_threads, args.rounds, args.number, args.settle,
                                        threads=(threads,), theirs_name="onnxruntime")


def best_record(task: Any, log: Path) -> tuple[Any, float] | None:
    """The config of ``task``'s best record in ``log`` and its mean cost (seconds); None if none."""
    best = min(((i, r) for i, r in record.load_from_file(log)
                if r.error_no == 0 and i.task.workload == task.workload),
               key=lambda ir: float(np.mean(ir[1].costs)), default=None)
    return None if best is None else (best[0].config, float(np.mean(best[1].costs)))


def tune_layer(task: Any, trials: int, log: Path) -> tuple[Any, float] | None:
    """Tune ``task`` into ``log``; the best record's config and its mean cost (seconds)."""
    builder = LocalBuilder()
    runner = LocalRunner(number=50, repeat=3, timeout=10, check_correctness=True)
    try:
        XGBTuner(task, feature_type="knob", seed=0).tune(
            trials, measure_option(builder, runner), callbacks=[log_to_file(str(log))])
    finally:
        builder.close()
        runner.close()
    return best_record(task, log)


def packing_kernel_timer(task: Any, cfg: Any, x: np.ndarray, w: np.ndarray) -> Any:
    """``f() -> median seconds`` of ``cfg``'s kernel with the weight packing inside (the 2-D weight)."""
    strategy = registry.get_strategy(task.name)
    call = strategy.declare(*task.args)
    with task.target:
        outs = strategy.outputs_of(cfg, call)
        sch = strategy.schedule(cfg, outs)
    mod = build_kernel(sch, [*call.inputs, *outs], target=task.target)
    out = np.zeros(tuple(outs[0].shape), "float32")
    timer = mod.time_evaluator(number=20, repeat=5)

    def seconds() -> float:
        _common.warm_up(lambda: mod(x, w, out))
        return _common.median(timer(x, w, out))
    return seconds


def bench_tuned(label: str, batch: int, k: int, n: int, args: argparse.Namespace) -> None:
    """A tuned record's cost in the tuner, with in-kernel packing, and in the network vs the fallback."""
    mod, params = classifier(batch, k, n)
    x = np.random.default_rng(0).uniform(-1, 1, (batch, k)).astype("float32")
    w, b = params["fc_weight"], params["fc_bias"]
    task = create("dense.x86", (batch, n, k, "float32"), TARGET)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "dense.log" if args.log is None else args.log
        best = tune_layer(task, args.tune, log) if args.log is None else best_record(task, log)
        if best is None:
            print(f"{label} b{batch}: no valid record of {task.workload} in {log}")
            return
        cfg, tuner_cost = best
        tuned, tuned_lib, got = built_module(mod, params, x, False, str(log))
    np.testing.assert_allclose(got, x @ w.T + b, rtol=1e-4, atol=1e-4)
    fallback, fallback_lib, _ = built_module(mod, params, x, False)
    set_num_threads(args.tune_threads)
    packing = packing_kernel_timer(task, cfg, x, w)
    name = f"{label} b{batch}"
    origin = f"best of {args.tune} trials" if args.log is None else f"best record of {args.log}"
    print(f"{name}: {origin} {cfg}; tuned build: {tuned_lib.summary.line()}; "
          f"fallback: {fallback_lib.summary.line()}")
    times: dict[str, list[float]] = {"tuned kernel in the network": [], "fallback kernel in the network": [],
                                     "the record's config packing in the kernel": []}
    for _ in range(args.rounds):  # interleaved, each after a settle pause
        for key, measure in zip(times, (lambda: kernel_seconds(tuned, tuned_lib),
                                        lambda: kernel_seconds(fallback, fallback_lib),
                                        packing), strict=True):
            time.sleep(args.settle)
            times[key].append(measure())
    med = {key: _common.median(v) for key, v in times.items()}
    how = "the kernel on the pre-packed weight" if args.log is None else "as logged"
    print(f"{name}: threads={args.tune_threads}  tuner cost {tuner_cost * 1e3:.4f} ms ({how}, no bias)")
    for key, t in med.items():
        print(f"{name}: threads={args.tune_threads}  {key:<42} {t * 1e3:.4f} ms  ({t / tuner_cost:.2f}x the "
              f"tuner cost; medians of {args.rounds} rounds)")
    ratio = med["tuned kernel in the network"] / med["fallback kernel in the network"]
    print(f"{name}: tuned / fallback kernel in the network {ratio:.2f} (< 1: the tuned record is faster)")
    _common.interleaved_medians(f"{name} tuned net", 2.0 * batch * n * k, tuned.run, fallback.run,
                                set_num_threads, args.rounds, args.number, args.settle,
                                threads=(args.tune_threads,), theirs_name="fallback net")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[1])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--number", type=int, default=200)
    parser.add_argument("--settle", type=float, default=0.3)
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument("--tune", type=int, default=0, metavar="TRIALS",
                        help="tune each layer's dense.x86 task; its record in the tuner vs the network")
    parser.add_argument("--tune-threads", type=int, default=1, help="threads while tuning and comparing")
    parser.add_argument("--log", type=Path, default=None,
                        help="as --tune, with each layer's best record in this log instead of tuning")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 3
    if args.tune or args.log:  # the measurement workers are spawned after this: they run at these threads
        os.environ["TUNECLI_NUM_THREADS"] = str(args.tune_threads)
    print(_common.load_line())
    print(_common.blas_description())
    for batch in args.batch:
        for label, (k, n) in LAYERS.items():
            (bench_tuned if args.tune or args.log else bench)(label, batch, k, n, args)
    print(_common.load_line())
    print(_common.peak_memory_line())


if __name__ == "__main__":
    main()
