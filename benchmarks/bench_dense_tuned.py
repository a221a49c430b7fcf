"""Tuned ``dense.x86`` 1024×1024×1024 fp32 vs numpy/OpenBLAS, and the tuning throughput.

1. Tunes ``dense.x86`` (M=N=K=1024, float32) with ``XGBTuner`` (``--trials``, ``--feature``,
   ``--seed``) through LocalBuilder + LocalRunner (correctness checked against numpy; timing
   ``--number`` calls × ``--repeat`` rounds), logging to ``--log`` (TVM format).  Prints the
   trials per minute: of measurement alone (builds + runs, what LocalBuilder/LocalRunner
   achieve) and of the whole loop (with the tuner's model fitting and search).
2. Builds the best config of the log through ``apply_history_best`` (the user-facing way),
   checks it against numpy, and times it against ``numpy.matmul(data, weight.T)`` on the same
   arrays at 1 and 2 threads (``runtime.set_num_threads`` for ours, ``threadpoolctl`` for
   numpy).  The kernel takes the weight packed into its config's panels ``[N/NR, K, NR]``,
   packed once before timing (what the tuner measures and a network runs: ``relay.build``
   packs a constant weight at build time); numpy takes the ``[N, K]`` weight.  Interleaved
   round by round with a ``--settle`` pause before each batch (``_common.interleaved_compare``:
   OpenBLAS's threads spin after a call and would take a core from our 2-thread kernel);
   medians and the ratio.  OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are
   unset before numpy loads; the OpenBLAS kernel in use is printed.

Usage::

    .venv/bin/python benchmarks/bench_dense_tuned.py --quick          # 100 trials, 3 rounds
    .venv/bin/python benchmarks/bench_dense_tuned.py --trials 200     # a few minutes on 2 free cores
    .venv/bin/python benchmarks/bench_dense_tuned.py --no-tune        # reuse --log, compare only
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import Any

import _common  # before numpy: unsets the OpenBLAS variables
import numpy as np

import tunecli.engine.ops.registry as registry
from tunecli.engine.build import build
from tunecli.engine.log import record
from tunecli.engine.log.history_best import apply_history_best
from tunecli.engine.measure import LocalBuilder, LocalRunner, create_measure_batch, measure_option
from tunecli.engine.ops.reference import pack_dense_weight
from tunecli.engine.runtime import set_num_threads
from tunecli.engine.task.task import create
from tunecli.engine.tuner import XGBTuner
from tunecli.engine.tuner.callback import log_to_file

SIZE = 1024
DEFAULT_LOG = Path(__file__).resolve().parent / "cache" / "dense1024_xgb.log"


def tune(task: Any, opts: argparse.Namespace) -> None:
    """Tune ``task`` into ``opts.log``; print the throughput and the best GFLOPS found."""
    builder = LocalBuilder()
    runner = LocalRunner(number=opts.number, repeat=opts.repeat, timeout=opts.timeout, check_correctness=True)
    real = create_measure_batch(task, measure_option(builder, runner))
    spent = {"measure": 0.0, "trials": 0, "errors": 0}

    def measure_batch(inputs: list) -> list:
        start = time.perf_counter()
        results = real(inputs)
        spent["measure"] += time.perf_counter() - start
        spent["trials"] += len(results)
        spent["errors"] += sum(1 for r in results if r.error_no)
        return results

    measure_batch.n_parallel = real.n_parallel  # type: ignore[attr-defined]
    opts.log.parent.mkdir(parents=True, exist_ok=True)
    opts.log.unlink(missing_ok=True)
    tuner = XGBTuner(task, feature_type=opts.feature, seed=opts.seed)
    start = time.perf_counter()
    try:
        tuner.tune(opts.trials, measure_batch, callbacks=[log_to_file(str(opts.log))])
    finally:
        builder.close()
        runner.close()
    wall = time.perf_counter() - start
    n = spent["trials"]
    print(f"tuning: {n} trials ({spent['errors']} errors) in {wall:.0f} s; throughput "
          f"{60 * n / spent['measure']:.0f} trials/min of measurement (build+run, {spent['measure']:.0f} s), "
          f"{60 * n / wall:.0f} trials/min overall (with the tuner's {wall - spent['measure']:.0f} s)")
    print(f"best found: {tuner.best_flops / 1e9:.1f} GFLOPS at trial {tuner.best_iter + 1}: "
          f"{tuner.best_config}")


def best_record_gflops(task: Any, log: Path) -> float:
    """Best GFLOPS of ``task`` in ``log`` as measured during tuning."""
    return max((res.gflops(task.flop) for inp, res in record.load_from_file(log)
                if inp.task.workload == task.workload), default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=None, help="XGB trials (default 200; --quick 100)")
    parser.add_argument("--feature", default="itervar", choices=("itervar", "knob", "curve"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--number", type=int, default=2, help="calls per timed round while tuning")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds per trial while tuning")
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 9; --quick 3)")
    parser.add_argument("--settle", type=float, default=0.5,
                        help="pause (s) before each timed batch: the other side's threads stop spinning")
    parser.add_argument("--log", type=Path, default=DEFAULT_LOG)
    parser.add_argument("--no-tune", action="store_true", help="use the existing --log")
    parser.add_argument("--quick", action="store_true", help="100 trials, 3 comparison rounds")
    opts = parser.parse_args()
    opts.trials = opts.trials or (100 if opts.quick else 200)
    rounds = opts.rounds or (3 if opts.quick else 9)
    logging.getLogger("autotvm").setLevel(logging.ERROR)
    print(f"bench_dense_tuned: dense.x86 {SIZE}^3 float32; {_common.load_line()}")
    print(_common.blas_description())
    task = create("dense.x86", (SIZE, SIZE, SIZE, "float32"), "llvm")
    print(f"space: {len(task.config_space)} configs")
    if not opts.no_tune:
        tune(task, opts)
    print(f"best in {opts.log.name}: {best_record_gflops(task, opts.log):.1f} GFLOPS "
          "(as measured while tuning)")

    with apply_history_best(str(opts.log)) as ctx, task.target:
        cfg = ctx.query(task.target, task.workload)
        print(f"apply_history_best picks: {cfg}")
        sch, args = registry.TEMPLATES["dense.x86"](SIZE, SIZE, SIZE, "float32")
    mod = build(sch, args, target=task.target, name="dense_tuned")
    rng = np.random.default_rng(0)
    data = rng.standard_normal((SIZE, SIZE)).astype("float32")
    weight = rng.standard_normal((SIZE, SIZE)).astype("float32")
    packed = pack_dense_weight(weight, args[1].shape[2])  # the kernel's weight argument: its panels
    out = np.zeros((SIZE, SIZE), "float32")
    mod(data, packed, out)
    np.testing.assert_allclose(out, data @ weight.T, rtol=1e-3, atol=1e-3)
    _common.interleaved_compare("tuned dense.x86 1024^3 fp32", 2.0 * SIZE ** 3,
                                lambda: mod(data, packed, out), lambda: np.matmul(data, weight.T),
                                set_num_threads, rounds, 5, opts.settle)
    print(_common.blas_description())
    print(f"{_common.peak_memory_line()}; {_common.load_line()}")


if __name__ == "__main__":
    main()
