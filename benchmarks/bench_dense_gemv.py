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
the same config with the packing inside the kernel (what the tuner measured before the weight
was given packed; ``time_evaluator`` in this process), and the network built with the record
(``GraphModule.run``, panels folded at build time), timed interleaved with the fallback
build (the GEMV fallback) at the same threads.

Usage::

    .venv/bin/python benchmarks/bench_dense_gemv.py --quick     # 3 rounds
    .venv/bin/python benchmarks/bench_dense_gemv.py --batch 1 2 16
    .venv/bin/python benchmarks/bench_dense_gemv.py --tune 48 --quick
"""

from __future__ import annotations

import argparse
import os
import tempfile
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


def built_run(mod: IRModule, params: dict, x: np.ndarray, pretuned: bool,
              records: Any = ()) -> tuple[Any, str, Any]:
    """The graph module's ``run`` with ``x`` set, the build's summary line and its output
    (``records``: a log applied instead of the pre-tuned packages)."""
    with PassContext(opt_level=3):
        if pretuned:
            lib = build(mod, TARGET, params=params)
        else:
            with ApplyHistoryBest(records or [], pretuned=False):
                lib = build(mod, TARGET, params=params)
    m = lib["default"](None)
    m.set_input("data", x)
    m.run()
    return m.run, lib.summary.line(), m.get_output(0).numpy()


def bench(label: str, batch: int, k: int, n: int, args: argparse.Namespace) -> None:
    import onnxruntime as ort

    mod, params = classifier(batch, k, n)
    x = np.random.default_rng(0).uniform(-1, 1, (batch, k)).astype("float32")
    w, b = params["fc_weight"], params["fc_bias"]
    expected = x @ w.T + b
    onnx_bytes = to_onnx(mod, params)
    flops = 2.0 * batch * n * k
    for config, pretuned in (("fallback", False), ("untuned build", True)):
        run, summary, got = built_run(mod, params, x, pretuned)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        name = f"{label} b{batch} {config}"
        print(f"{name}: {summary}")
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


def tune_layer(task: Any, trials: int, log: Path) -> tuple[Any, float]:
    """Tune ``task`` into ``log``; the best record's config and its mean cost (seconds)."""
    builder = LocalBuilder()
    runner = LocalRunner(number=50, repeat=3, timeout=10, check_correctness=True)
    try:
        XGBTuner(task, feature_type="knob", seed=0).tune(
            trials, measure_option(builder, runner), callbacks=[log_to_file(str(log))])
    finally:
        builder.close()
        runner.close()
    inp, res = min(((i, r) for i, r in record.load_from_file(log) if r.error_no == 0),
                   key=lambda ir: float(np.mean(ir[1].costs)))
    return inp.config, float(np.mean(res.costs))


def packing_kernel_seconds(task: Any, cfg: Any, x: np.ndarray, w: np.ndarray) -> float:
    """Median seconds of ``cfg``'s kernel with the weight packing inside (the 2-D weight)."""
    strategy = registry.get_strategy(task.name)
    call = strategy.declare(*task.args)
    with task.target:
        outs = strategy.outputs_of(cfg, call)
        sch = strategy.schedule(cfg, outs)
    mod = build_kernel(sch, [*call.inputs, *outs], target=task.target)
    out = np.zeros(tuple(outs[0].shape), "float32")
    return _common.median(mod.time_evaluator(number=50, repeat=5)(x, w, out))


def bench_tuned(label: str, batch: int, k: int, n: int, args: argparse.Namespace) -> None:
    """A tuned record's cost in the tuner, with in-kernel packing, and in the network vs the fallback."""
    mod, params = classifier(batch, k, n)
    x = np.random.default_rng(0).uniform(-1, 1, (batch, k)).astype("float32")
    w, b = params["fc_weight"], params["fc_bias"]
    task = create("dense.x86", (batch, n, k, "float32"), TARGET)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "dense.log"
        cfg, tuner_cost = tune_layer(task, args.tune, log)
        tuned_run, summary, got = built_run(mod, params, x, False, str(log))
    np.testing.assert_allclose(got, x @ w.T + b, rtol=1e-4, atol=1e-4)
    fallback_run, fallback_summary, _ = built_run(mod, params, x, False)
    set_num_threads(args.tune_threads)
    packing = packing_kernel_seconds(task, cfg, x, w)
    name = f"{label} b{batch}"
    print(f"{name}: best of {args.tune} trials {cfg}; tuned build: {summary}; fallback: {fallback_summary}")
    print(f"{name}: tuner cost {tuner_cost * 1e3:.4f} ms (pre-packed weight); the same config packing "
          f"in the kernel {packing * 1e3:.4f} ms")
    medians = _common.interleaved_medians(f"{name} tuned net", 2.0 * batch * n * k, tuned_run, fallback_run,
                                          set_num_threads, args.rounds, args.number, args.settle,
                                          threads=(args.tune_threads,), theirs_name="fallback GEMV")
    net, fallback = medians[args.tune_threads]
    print(f"{name}: threads={args.tune_threads} in-network / tuner cost {net / tuner_cost:.2f}; "
          f"in-network / packing-kernel cost {net / packing:.2f}; tuned / fallback {net / fallback:.2f} "
          f"(< 1: the tuned record is faster)")


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
    args = parser.parse_args()
    if args.quick:
        args.rounds = 3
    if args.tune:  # the measurement workers are spawned after this: they run at these threads
        os.environ["TUNECLI_NUM_THREADS"] = str(args.tune_threads)
    print(_common.load_line())
    print(_common.blas_description())
    for batch in args.batch:
        for label, (k, n) in LAYERS.items():
            (bench_tuned if args.tune else bench)(label, batch, k, n, args)
    print(_common.load_line())
    print(_common.peak_memory_line())


if __name__ == "__main__":
    main()
