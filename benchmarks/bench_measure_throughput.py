"""Measurement throughput: trials per minute of LocalBuilder + LocalRunner on a small dense task.

Measures random configs of ``dense.x86`` (M=N=K=64 by default) with the default runner
settings (number=4, repeat=3, min_repeat_ms=0, warmup_ms=50, cooldown_interval=0) in batches of
``builder.n_parallel``, for each scheduling mode:

* ``sequential``  LocalBuilder(n_parallel=cores), build the batch then measure (TVM's way);
* ``overlap-1``   LocalBuilder(n_parallel=1), measure each kernel as soon as it is built;
* ``overlap-all`` LocalBuilder(n_parallel=cores), overlapped (builds compete with timing).

Prints trials/minute (target: >= 60 on 2 cores), errors, the speed of the best config found,
the spread of a probe config measured every 20 trials (the timing noise of the mode), and
memory: the workers' total RSS every 100 trials (a bounded sawtooth when recycling works:
builders are replaced after 200 builds), the tuner's peak RSS and the largest peak RSS of
any worker process.

Usage: ``python benchmarks/bench_measure_throughput.py [--trials 120] [--modes sequential,overlap-1]``
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import time

import tunecli.engine.ops.registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.measure import LocalBuilder, LocalRunner, create_measure_batch, measure_option
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput
from tunecli.engine.task.task import create

#: A config measured every 20 trials: the spread of its costs shows how noisy timing is.
PROBE = 0
MODES = {
    "sequential": (None, False),
    "overlap-1": (1, True),
    "overlap-all": (None, True),
}


def _rss_kib(pid: int | None) -> int:
    """Current resident memory of ``pid`` in KiB (0 when it is gone)."""
    if pid is None:
        return 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _workers_rss(builder: LocalBuilder, runner: LocalRunner) -> int:
    pids = [w.pid for w in builder.pool.workers] + [runner.worker.pid]
    return sum(_rss_kib(p) for p in pids)


def run_mode(mode: str, shape: tuple[int, int, int], trials: int, seed: int) -> dict:
    """Measure ``trials`` random configs in ``mode``; return the numbers to print."""
    n_parallel, overlap = MODES[mode]
    task = create("dense.x86", shape + ("float32",), "llvm")
    builder = LocalBuilder(n_parallel=n_parallel)
    runner = LocalRunner()
    rng = random.Random(seed)
    indices = rng.sample(range(len(task.config_space)), min(trials, len(task.config_space)))
    errors: dict[str, int] = {}
    best = (float("inf"), -1)
    probe_costs: list[float] = []
    try:
        measure_batch = create_measure_batch(task, measure_option(builder, runner), overlap=overlap)
        warm = measure_batch([MeasureInput(task.target, task, task.config_space.get(0))])  # start-up
        assert warm[0].error_no == MeasureErrorNo.NO_ERROR, warm[0]
        rss = [_workers_rss(builder, runner)]
        start = time.perf_counter()
        step = measure_batch.n_parallel
        for i in range(0, len(indices), step):
            if i and i % 100 < step:
                rss.append(_workers_rss(builder, runner))
            chosen = indices[i:i + step]
            if i % 20 < step:  # the probe config rides along in place of one trial
                chosen = [PROBE] + chosen[1:]
            batch = [MeasureInput(task.target, task, task.config_space.get(j)) for j in chosen]
            for inp, res in zip(batch, measure_batch(batch), strict=True):
                if inp.config.index == PROBE and not res.error_no:
                    probe_costs.append(res.costs[0])
                if res.error_no:
                    name = MeasureErrorNo(res.error_no).name
                    errors[name] = errors.get(name, 0) + 1
                elif res.costs[0] < best[0]:
                    best = (res.costs[0], inp.config.index)
        elapsed = time.perf_counter() - start
        rss.append(_workers_rss(builder, runner))
    finally:
        builder.close()
        runner.close()
    return {"mode": mode, "trials": len(indices), "seconds": elapsed, "per_min": 60 * len(indices) / elapsed,
            "errors": errors, "best": best, "rss": rss, "probe": probe_costs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=120)
    parser.add_argument("--shape", type=int, nargs=3, default=(64, 64, 64), metavar=("M", "N", "K"))
    parser.add_argument("--modes", default="sequential,overlap-1")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"dense.x86 {tuple(args.shape)}, {args.trials} trials per mode, {os.cpu_count()} cores, "
          "LocalRunner defaults (number=4, repeat=3, warm-up 50 ms, no cooldown)")
    for mode in args.modes.split(","):
        r = run_mode(mode.strip(), tuple(args.shape), args.trials, args.seed)
        flops = 2 * args.shape[0] * args.shape[1] * args.shape[2]
        print(f"{r['mode']:>12}: {r['per_min']:7.1f} trials/min ({r['trials']} in {r['seconds']:.1f} s), "
              f"errors {r['errors'] or 'none'}, best config {r['best'][1]} "
              f"{flops / r['best'][0] / 1e9:.1f} GFLOP/s")
        probe = r["probe"]
        mean = sum(probe) / len(probe)
        spread = (sum((c - mean) ** 2 for c in probe) / len(probe)) ** 0.5 / mean
        print(f"{'':>14}probe config {PROBE} measured {len(probe)} times: mean {mean * 1e6:.2f} us, "
              f"min {min(probe) * 1e6:.2f} us, relative spread {100 * spread:.1f}%")
        print(f"{'':>14}workers' total RSS every 100 trials (MiB): "
              f"{' '.join(str(round(k / 1024)) for k in r['rss'])}")
    self_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak RSS: tuner {self_peak:.0f} MiB, largest worker {child_peak:.0f} MiB")


if __name__ == "__main__":
    main()
