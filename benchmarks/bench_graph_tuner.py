"""The graph tuner on ResNet-18: its choice vs each convolution's fastest kernel, and end to end.

Part 1 (the tuner): the kernel records of ``--log`` (default: the pre-tuned x86 package; a log
with several records per workload gives the tuner choices) become candidates, the layout
transforms between them are measured (``min_exec_num`` runs each), and DPTuner and PBQPTuner
choose.  Printed: time spent measuring transforms and solving, the predicted network cost
(kernels + transforms) of the DP choice, of the PBQP choice and of the kernel-tuned-only choice
(each convolution's fastest record, paying the transforms between them).

Part 2 (needs ``relay.build``; skipped with a message otherwise): ResNet-18 built under
``apply_history_best(--log)`` (kernel-tuned only) and under ``apply_graph_best`` of the DP
choice (the log's records for the rest), outputs compared, latencies timed interleaved at 1 and 2
threads with a settle pause and 50 ms of untimed runs before each batch (medians); the ratio
graph-tuned / kernel-only should be <= 1.

Usage::

    .venv/bin/python benchmarks/bench_graph_tuner.py --quick
    .venv/bin/python benchmarks/bench_graph_tuner.py --log logs/resnet18.log --image 224
"""

from __future__ import annotations

import argparse
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import _common  # before numpy: unsets the OpenBLAS variables
import numpy as np

from tunecli import relay
from tunecli.autotvm import apply_graph_best, apply_history_best
from tunecli.autotvm.graph_tuner import DPTuner, PBQPTuner
from tunecli.engine.runtime import set_num_threads

TOPHUB_X86 = Path(__file__).resolve().parents[1] / ".." / "shared" / "reference" / "tophub" / "llvm_v0.04.log"


def tune(tuner_class: type, mod: object, shape: tuple, opts: argparse.Namespace,
         layout_records: list | None) -> tuple[object, float, float]:
    """A tuner run: (tuner, seconds measuring transforms, seconds solving)."""
    tuner = tuner_class(mod["main"], {"data": shape}, opts.log, [relay.op.get("nn.conv2d")], "llvm",
                        max_sch_num=opts.max_sch_num, verbose=False)
    start = time.perf_counter()
    tuner.benchmark_layout_transform(min_exec_num=opts.min_exec_num, layout_records=layout_records)
    measured = time.perf_counter() - start
    start = time.perf_counter()
    tuner.run()
    return tuner, measured, time.perf_counter() - start


def predicted(tuner: object) -> float:
    """The chosen records' predicted network cost (kernels + transforms)."""
    chosen = tuner.get_optimal_records()
    return tuner.problem.total([cands.index(r) for cands, r in zip(tuner.candidates, chosen, strict=True)])


def end_to_end(mod: object, params: dict, shape: tuple, opts: argparse.Namespace, graph_log: str) -> None:
    """Part 2: kernel-tuned-only vs graph-tuned builds of the network."""
    if not hasattr(relay, "build"):
        print("end to end: skipped (relay.build is not in this tree yet)")
        return
    import tunecli as tvm
    import tunecli.contrib.graph_executor as runtime

    data = np.random.default_rng(0).uniform(size=shape).astype("float32")
    modules = {}
    for name in ("kernel-only", "graph"):
        # The graph tuner's records cover the convolutions; the log's best records the rest (dense).
        graph_context = apply_graph_best(graph_log) if name == "graph" else nullcontext()
        with apply_history_best(opts.log), graph_context:
            with tvm.transform.PassContext(opt_level=3):
                lib = relay.build(mod, target="llvm", params=params)
        print(f"{name}: {lib.summary.line()}, {len(lib.kernels)} kernels")
        module = runtime.GraphModule(lib["default"](tvm.cpu()))
        module.set_input("data", data)
        modules[name] = module
    outs = {}
    for name, module in modules.items():
        module.run()
        outs[name] = module.get_output(0).numpy()
    np.testing.assert_allclose(outs["graph"], outs["kernel-only"], rtol=1e-4, atol=1e-5)
    for threads in opts.threads:
        set_num_threads(threads)
        times: dict[str, list[float]] = {name: [] for name in modules}
        for _ in range(opts.rounds):
            for name, module in modules.items():
                time.sleep(opts.settle)
                _common.warm_up(module.run)
                times[name].append(_common.batch_seconds(module.run, opts.number)[0])
        kernel_only, graph = _common.median(times["kernel-only"]), _common.median(times["graph"])
        print(f"end to end, {threads} thread(s): kernel-tuned only {kernel_only * 1e3:.3f} ms, graph-tuned "
              f"{graph * 1e3:.3f} ms, ratio {graph / kernel_only:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log", default=str(TOPHUB_X86), help="kernel records (default: pre-tuned x86)")
    parser.add_argument("--image", type=int, default=224, help="image height and width")
    parser.add_argument("--max-sch-num", type=int, default=20)
    parser.add_argument("--min-exec-num", type=int, default=2000)
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=10)
    parser.add_argument("--settle", type=float, default=0.5, help="seconds of rest before each timed batch")
    parser.add_argument("--quick", action="store_true", help="min_exec_num 50, 2 rounds of 2 runs")
    opts = parser.parse_args()
    if opts.quick:
        opts.min_exec_num, opts.rounds, opts.number = 50, 2, 2
    print(_common.load_line())
    shape = (1, 3, opts.image, opts.image)
    mod, params = relay.testing.resnet.get_workload(num_layers=18, batch_size=1, image_shape=shape[1:])
    dp, measured, dp_solve = tune(DPTuner, mod, shape, opts, None)
    layout_records = list(dp.layout_transform_perf_records.values())
    pbqp, _, pbqp_solve = tune(PBQPTuner, mod, shape, opts, layout_records)
    graph = dp.conv_graph
    print(f"ResNet-18 {shape}: {len(graph.nodes)} convolutions, {len(graph.edges)} edges, "
          f"{sum(len(c) for c in dp.candidates)} candidates, {len(layout_records)} layout transforms "
          f"measured in {measured:.1f} s")
    kernel_only = dp.problem.total([0] * dp.problem.size)
    print(f"predicted cost: DP {predicted(dp) * 1e3:.3f} ms (solved in {dp_solve * 1e3:.1f} ms), PBQP "
          f"{predicted(pbqp) * 1e3:.3f} ms ({pbqp_solve * 1e3:.1f} ms), kernel-tuned only "
          f"{kernel_only * 1e3:.3f} ms; DP / kernel-only {predicted(dp) / kernel_only:.3f}")
    with tempfile.TemporaryDirectory() as tmp:
        graph_log = str(Path(tmp) / "graph_opt.log")
        dp.write_opt_sch2record_file(graph_log)
        end_to_end(mod, params, shape, opts, graph_log)
    print(_common.peak_memory_line())


if __name__ == "__main__":
    main()
