"""Throughput of tuning on a Ray cluster vs the local builder and runner, and what limits it.

Measures the same random configs of ``conv2d_nchw.x86`` (N=1, 28x28, 32 -> 32 channels, 3x3 by
default) two ways, in batches of ``--workers`` as a tuner proposes them, in the order local, ray,
ray, local (after one untimed batch of each: worker start-up is not counted), so that a change in
the machine's load weighs on both:

* ``local``: ``LocalBuilder(n_parallel=W)`` + ``LocalRunner`` (W build processes, one timing process);
* ``ray``: a Ray cluster on 127.0.0.1 (``LocalRayCluster``: a head and ``--nodes - 1`` more nodes),
  ``RayBuilder`` + ``RayRunner`` with W builders per node: with one node, the same W build
  processes and one timing process, inside a Ray actor.

The local half runs in a process of its own session: Linux's autogroup scheduling gives each
session an equal share of a busy machine, and each Ray node is a session of its own.

Prints trials/minute of each, their ratio and the Ray path's per-trial overhead (its extra wall
time per trial; on a busy machine within the noise, so the round trip to a worker and the size of
a chunk of inputs are printed too), then the parts a projection to more nodes needs: the median
build time of one config (b), the median measurement (r: load, warm-up, timed rounds), the
driver's time per trial for the dispatch (the overhead above) and the XGBoost tuner's time per
trial to fit its model and propose the next batch (``--xgb``, on synthetic costs: only its own
time is of interest).
``benchmarks/README.md`` turns them into trials/minute for 8 and 64 nodes.

``--network``: a network job's tasks (``NETWORK``: two convolutions and a dense layer) tuned with one
budget by the task scheduler on ``--nodes`` (at least 2) nodes, in the order concurrent, one at a
time, one at a time, concurrent (after an untimed config of each task on each node):

* ``concurrent``: a round in flight per node, each a different task's (``tuner.concurrent_rounds``);
* ``one at a time``: the scheduler's rounds one after another, each spread over every node (the
  driver model before concurrent rounds).

Prints trials/minute of each and their ratio, and the per-trial overhead of each: the workers'
idle time per trial (wall time x workers - the time chunks were out, over the trials), what the
driver's waits (a round's slowest chunk, the tuner between rounds) cost the cluster, and the
driver's CPU time per trial (tuner, dispatch, log: what bounds the nodes one driver can feed).

Usage: ``python benchmarks/bench_ray_throughput.py [--trials 48] [--workers 2] [--nodes 1] [--xgb 256]``
or ``python benchmarks/bench_ray_throughput.py --network [--budget 36] [--nodes 2] [--workers 1]``
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time

import _common

import tunecli.engine.ops.registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.cluster import cluster_measure_option
from tunecli.engine.cluster.local_cluster import LocalRayCluster
from tunecli.engine.cluster.node_info import default_resource
from tunecli.engine.measure import LocalBuilder, LocalRunner, create_measure_batch, measure_option
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.target import Target
from tunecli.engine.task.task import create
from tunecli.engine.tuner.task_scheduler import TaskScheduler
from tunecli.engine.tuner.tuner_kinds import tuner_kind

WORKLOAD = (1, 28, 28, 32, 32, 3, 3, 1, 1, 1, "float32")
TIMING = TimingOptions()  # the job defaults: number=4, repeat=3, warmup_ms=50
#: The tasks of ``--network``: two convolutions and a dense layer.
NETWORK = (("conv2d_nchw.x86", WORKLOAD), ("conv2d_nchw.x86", (1, 14, 14, 64, 64, 3, 3, 1, 1, 1, "float32")),
           ("dense.x86", (1, 256, 512, "float32")))


def measure_all(option: dict, inputs: list[MeasureInput], batch: int) -> tuple[float, list[MeasureResult]]:
    """Wall seconds to measure ``inputs`` in batches of ``batch`` with ``option``, and the results."""
    start = time.perf_counter()
    results: list[MeasureResult] = []
    measure_batch = create_measure_batch(inputs[0].task, option)
    for i in range(0, len(inputs), batch):
        results.extend(measure_batch(inputs[i:i + batch]))
    return time.perf_counter() - start, results


def parts(task, inputs: list[MeasureInput]) -> tuple[float, float]:
    """Median build seconds of one config (alone) and median wall seconds of one measurement."""
    builder, runner = LocalBuilder(n_parallel=1), LocalRunner(timing=TIMING)
    try:
        builder.set_task(task)
        runner.set_task(task)
        built = builder.build(inputs)
        builds = [b.time_cost for b in built if not isinstance(b, MeasureResult)]
        runs = []
        for inp, b in zip(inputs, built, strict=True):
            if isinstance(b, MeasureResult):
                continue
            start = time.perf_counter()
            runner.run_one(inp, b)
            runs.append(time.perf_counter() - start)
    finally:
        builder.close()
        runner.close()
    return statistics.median(builds), statistics.median(runs)


def dispatch_cost(runner, chunk: list[MeasureInput]) -> tuple[float, int]:
    """Median seconds of a round trip to a measuring worker (20 calls), and the pickled size of a
    chunk of inputs (what the driver sends per chunk)."""
    import ray
    from ray import cloudpickle

    actor = runner.cluster.slots[0].actor
    trips = []
    for _ in range(20):
        start = time.perf_counter()
        ray.get(actor.ready.remote())
        trips.append(time.perf_counter() - start)
    return statistics.median(trips), len(cloudpickle.dumps(chunk))


def xgb_seconds_per_trial(task, trials: int) -> float:
    """Seconds per trial the XGBoost tuner spends proposing configs and fitting its model."""
    tuner = tuner_kind("xgb").make(task, seed=0)
    rng = random.Random(0)
    start = time.perf_counter()
    done = 0
    while done < trials:
        configs = tuner.next_batch(min(tuner.plan_size, trials - done))
        inputs = [MeasureInput(task.target, task, c) for c in configs]
        results = [MeasureResult((rng.uniform(1e-4, 1e-3),), MeasureErrorNo.NO_ERROR, 0.0, 0.0)
                   for _ in configs]
        tuner.update(inputs, results)
        done += len(configs)
    return (time.perf_counter() - start) / trials


def schedule(option: dict, tasks: list, budget: int, round_trials: int, concurrent: bool,
             tuner: str) -> tuple[float, int, int, float, float]:
    """Tune ``tasks`` with one budget; return wall seconds, trials, errors, the seconds the workers
    had a chunk out and the driver's CPU seconds (all its threads, Ray's included)."""
    runner = option["runner"]
    kind = tuner_kind(tuner)
    scheduler = TaskScheduler(tasks, lambda task: kind.make(task, seed=0), budget, round_trials=round_trials)
    errors: list[bool] = []
    callbacks = [lambda _tuner, _inputs, results: errors.extend(not r.ok for r in results)]
    before = len(runner.chunks)
    start, cpu = time.perf_counter(), time.process_time()
    if concurrent:
        scheduler.tune(option, callbacks=callbacks)
    else:  # the rounds one after another, each on the runner as a whole
        while (index := scheduler.next_task()) is not None:
            scheduler.tune_round(index, option, callbacks)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    busy = sum(c.back - c.sent for c in runner.chunks[before:])
    return wall, scheduler.spent, sum(errors), busy, cpu


def network_main(args: argparse.Namespace) -> None:
    """``--network``: concurrent rounds vs one round at a time (see the module doc)."""
    target = Target("llvm")
    tasks = [create(name, workload, target) for name, workload in NETWORK]
    nodes = max(args.nodes, 2)
    round_trials = max(1, args.budget // (2 * len(tasks)))
    print(f"network of {len(tasks)} tasks ({', '.join(t.name for t in tasks)}), budget {args.budget}, "
          f"rounds of {round_trials}, {args.tuner} tuner, {nodes} nodes x {args.workers} builders")
    print(_common.load_line())
    with LocalRayCluster({default_resource(target): 1}).start(workers=nodes - 1) as cluster:
        option = cluster_measure_option(cluster.address, builders=args.workers, timing=TIMING)
        runner = option["runner"]
        try:
            for lane in runner.concurrent_lanes(tasks[0]):  # each task once on each node, untimed
                lane_option = runner.lane_option(lane)
                for task in tasks:
                    first = MeasureInput(target, task, task.config_space.get(0))
                    create_measure_batch(task, lane_option)([first])
            workers = len(runner.cluster.live_slots())
            runs = {True: [0.0, 0, 0, 0.0, 0.0], False: [0.0, 0, 0, 0.0, 0.0]}
            for concurrent in (True, False, False, True):
                got = schedule(option, tasks, args.budget, round_trials, concurrent, args.tuner)
                runs[concurrent] = [a + b for a, b in zip(runs[concurrent], got, strict=True)]
        finally:
            runner.close()
    rates = {}
    for concurrent, name in ((True, "concurrent"), (False, "one at a time")):
        wall, trials, errors, busy, cpu = runs[concurrent]
        rates[concurrent] = 60 * trials / wall
        idle = (wall * workers - busy) / trials
        print(f"{name:14s} {wall:7.1f} s  {rates[concurrent]:7.1f} trials/min  {errors} errors  workers "
              f"busy {100 * busy / (wall * workers):3.0f} %; per trial: idle worker time "
              f"{1e3 * idle:4.0f} ms, driver CPU {1e3 * cpu / trials:4.1f} ms")
    print(f"concurrent / one at a time throughput {rates[True] / rates[False]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=48)
    parser.add_argument("--workers", type=int, default=2, help="build processes (per node on Ray)")
    parser.add_argument("--nodes", type=int, default=1, help="Ray nodes (the head included)")
    parser.add_argument("--xgb", type=int, default=256, help="trials timing the XGBoost tuner (0: skip)")
    parser.add_argument("--network", action="store_true", help="concurrent rounds vs one at a time")
    parser.add_argument("--budget", type=int, default=36, help="--network: trials per run")
    parser.add_argument("--tuner", default="random", help="--network: the tuner kind")
    parser.add_argument("--local-half", type=int, choices=(0, 1), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.network:
        network_main(args)
        return

    target = Target("llvm")
    task = create("conv2d_nchw.x86", WORKLOAD, target)
    rng = random.Random(0)
    indices = rng.sample(range(len(task.config_space)), args.trials)
    inputs = [MeasureInput(target, task, task.config_space.get(i)) for i in indices]
    print(f"conv2d_nchw.x86{WORKLOAD}: {len(task.config_space)} configs, {args.trials} random ones, "
          f"batches of {args.workers * args.nodes}")

    batch = args.workers * args.nodes
    warm = [MeasureInput(target, task, task.config_space.get(i)) for i in range(batch)]
    halves = (inputs[: len(inputs) // 2], inputs[len(inputs) // 2:])
    if args.local_half is not None:  # the local half, in a session of its own
        local = measure_option(LocalBuilder(n_parallel=args.workers), LocalRunner(timing=TIMING))
        try:
            measure_all(local, warm, batch)
            took, got = measure_all(local, halves[args.local_half], batch)
        finally:
            local["builder"].close()
            local["runner"].close()
        print(json.dumps({"seconds": took, "errors": sum(not r.ok for r in got), "n": len(got)}))
        return

    def local_half(half: int) -> tuple[float, list[bool]]:
        out = subprocess.run([sys.executable, __file__, *sys.argv[1:], "--local-half", str(half)],
                             capture_output=True, text=True, check=True, start_new_session=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        return row["seconds"], [True] * (row["n"] - row["errors"]) + [False] * row["errors"]

    start = time.perf_counter()
    with LocalRayCluster({default_resource(target): 1}).start(workers=args.nodes - 1) as cluster:
        started = time.perf_counter() - start
        ray = cluster_measure_option(cluster.address, builders=args.workers, timing=TIMING)
        try:
            join = time.perf_counter()
            ray["runner"].set_task(task)  # join the cluster, start the workers (once per tune)
            joined = time.perf_counter() - join
            rtt, chunk_bytes = dispatch_cost(ray["runner"], inputs[:args.workers])
            measure_all(ray, warm, batch)
            local_s, local_ok = local_half(0)
            ray_s, ray_res = measure_all(ray, halves[0], batch)
            took, got = measure_all(ray, halves[1], batch)
            ray_s, ray_res = ray_s + took, ray_res + got
            took, ok = local_half(1)
            local_s, local_ok = local_s + took, local_ok + ok
        finally:
            ray["runner"].close()

    def line(name: str, seconds: float, ok: list[bool]) -> str:
        rate = 60 * len(ok) / seconds
        return f"{name:6s} {seconds:7.1f} s  {rate:7.1f} trials/min  {ok.count(False)} errors"

    print(line("local", local_s, local_ok))
    print(line("ray", ray_s, [r.ok for r in ray_res]))
    print(f"ray/local throughput {local_s / ray_s:.2f}; per-trial overhead of the Ray path "
          f"{1e3 * (ray_s - local_s) / args.trials:+.1f} ms; cluster start {started:.1f} s, joining it and "
          f"starting {args.nodes} worker(s) {joined:.1f} s (once per tune)")
    print(f"dispatch: a round trip to a worker {1e3 * rtt:.1f} ms (median of 20), a chunk of "
          f"{args.workers} inputs pickled {chunk_bytes / 1024:.0f} KiB")
    b, r = parts(task, inputs[:min(12, len(inputs))])
    print(f"one config: build {1e3 * b:.0f} ms, measurement {1e3 * r:.0f} ms (median of "
          f"{min(12, len(inputs))})")
    if args.xgb:
        print(f"XGBoost tuner: {1e3 * xgb_seconds_per_trial(task, args.xgb):.1f} ms per trial (fit + "
              f"propose, {args.xgb} trials)")


if __name__ == "__main__":
    main()
