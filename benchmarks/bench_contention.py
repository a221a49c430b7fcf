"""Whole networks on a machine shared with a busy process: how much slower ours and onnxruntime get.

MobileNet v2 and ResNet-18 (built-in models of ``tunecli tune``'s ``model:`` registry; 224×224,
batch 1, fp32, pre-tuned or fallback configs) are run by our graph executor and by onnxruntime's
CPU provider on the same ONNX export of the same parameters (outputs compared first).  Each round
times, on a quiet machine and then with ``--busy`` spinning processes beside it (single-threaded
Python loops over small numpy arrays, pinned to no core, started before and killed after that
half of the round), ours and onnxruntime's alternately, each ``--number`` runs after a
``--settle`` pause and 50 ms of untimed runs.  Medians of ``--rounds`` rounds.

Printed for 2 threads (and for 1, the baseline a contended 2-thread run can be read against):
each side's quiet and busy median, its degradation (busy / quiet), the ratio of the two
degradations (ours / onnxruntime's: ≤ 1 means ours degrades no more) and ours / onnxruntime on a
quiet machine; and the other users' work beside each condition (``measure.time_stats.LoadWindow``:
CPU time of the cores less this process tree's, in cores; the spinning processes are this
benchmark's own), which says whether "quiet" was quiet; then the load average and the peak memory.

Usage::

    .venv/bin/python benchmarks/bench_contention.py --quick       # MobileNet v2, 3 rounds
    .venv/bin/python benchmarks/bench_contention.py               # both networks, 9 rounds
    .venv/bin/python benchmarks/bench_contention.py --busy 2      # two busy processes
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import _common  # before numpy: unsets the OpenBLAS variables
import numpy as np

from tunecli.engine.graph.build_module import build
from tunecli.engine.graph.frontend.onnx_export import to_onnx
from tunecli.engine.graph.passes import PassContext
from tunecli.engine.job.network_models import MODELS
from tunecli.engine.measure.time_stats import LoadWindow
from tunecli.engine.runtime import set_num_threads

DEFAULT_NETWORKS = ("mobilenet_v2", "resnet-18")
#: A process that keeps one core busy: a Python loop over small numpy arrays.
BUSY_CODE = "import numpy as np\na = np.ones(256)\nwhile True:\n    a = a * 1.0000001 + 1e-9\n"
CONDITIONS = ("quiet", "busy")
SIDES = ("ours", "onnxruntime")


def start_busy(count: int) -> list[subprocess.Popen]:
    """``count`` spinning processes (one thread each); give them 0.3 s to get going."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, "-c", BUSY_CODE], env=env) for _ in range(count)]
    time.sleep(0.3)
    return procs


def stop_busy(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def runners(name: str, threads: int, cache: dict[str, Any]) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """Our graph module's ``run`` and an onnxruntime session's, on ``threads`` threads, same input."""
    import onnxruntime as ort

    model = MODELS[name]
    if "module" not in cache:
        mod, params = model.load(1, model.image_shape, "float32")
        start = time.perf_counter()
        with PassContext(opt_level=3):
            lib = build(mod, "llvm", params=params)
        print(f"{name}: built in {time.perf_counter() - start:.1f} s, {len(lib.kernels)} kernels")
        cache["module"] = m = lib["default"](None)
        data = np.random.default_rng(0).uniform(-1, 1, (1, *model.image_shape)).astype("float32")
        cache["data"] = data
        m.set_input(model.input_name, data)
        cache["onnx"] = to_onnx(mod, {k: np.asarray(v) for k, v in params.items()})
    m = cache["module"]
    set_num_threads(threads)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(cache["onnx"], opts, providers=["CPUExecutionProvider"])
    feed = {model.input_name: cache["data"]}
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), sess.run(None, feed)[0], rtol=1e-3, atol=1e-5)
    return m.run, lambda: sess.run(None, feed)


def bench(name: str, threads: int, args: argparse.Namespace, cache: dict[str, Any]) -> None:
    ours, theirs = runners(name, threads, cache)
    times: dict[tuple[str, str], list[float]] = {(c, s): [] for c in CONDITIONS for s in SIDES}
    others = {c: [0.0, 0.0] for c in CONDITIONS}  # other users' CPU seconds, wall seconds
    for _ in range(args.rounds):
        for condition in CONDITIONS:
            procs = start_busy(args.busy) if condition == "busy" else []
            window = LoadWindow()
            try:
                for side, fn in zip(SIDES, (ours, theirs), strict=True):
                    time.sleep(args.settle)
                    _common.warm_up(fn)
                    times[condition, side].append(_common.batch_seconds(fn, args.number)[0])
            finally:
                load = window.finish()
                stop_busy(procs)
            if load.measured is not None:
                others[condition][0] += load.measured * load.seconds
                others[condition][1] += load.seconds
    med = {k: _common.median(v) for k, v in times.items()}
    degrade = {s: med["busy", s] / med["quiet", s] for s in SIDES}
    ms = {k: v * 1e3 for k, v in med.items()}
    print(f"  threads={threads} ({args.busy} busy; medians of {args.rounds} rounds x {args.number} runs)")
    for side in SIDES:
        print(f"    {side:<12} quiet {ms['quiet', side]:7.2f} ms  busy {ms['busy', side]:7.2f} ms  "
              f"busy/quiet {degrade[side]:5.2f}x")
    quiet = ms["quiet", "ours"] / ms["quiet", "onnxruntime"]
    print(f"    degradation ours/onnxruntime {degrade['ours'] / degrade['onnxruntime']:5.2f} (<= 1: ours "
          f"degrades no more); quiet ours/onnxruntime {quiet:5.2f}x")
    if all(wall for _, wall in others.values()):
        print("    other users' work beside it: " + ", ".join(
            f"{c} {cpu / wall:.1f} cores" for c, (cpu, wall) in others.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="MobileNet v2 only, 3 rounds of 5 runs")
    parser.add_argument("--network", choices=sorted(MODELS), action="append",
                        help=f"a built-in model (repeatable; default: {', '.join(DEFAULT_NETWORKS)})")
    parser.add_argument("--busy", type=int, default=1, help="busy processes beside the timed one")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--number", type=int, default=10)
    parser.add_argument("--settle", type=float, default=0.3)
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.number = 3, 5
    print(_common.load_line())
    for name in args.network or (["mobilenet_v2"] if args.quick else list(DEFAULT_NETWORKS)):
        cache: dict[str, Any] = {}
        for threads in (2, 1):
            bench(name, threads, args, cache)
    print(_common.load_line())
    print(_common.peak_memory_line())


if __name__ == "__main__":
    main()
