"""Task scheduler: weighted end-to-end latency after gradient vs round-robin at one trial budget.

Tasks (``--tasks``: comma list of ``name:weight``, the weight being how often the task occurs
in the network): by default three ResNet-18-like layers, ``conv56:4`` (the four 56×56 64→64
3×3 convolutions), ``conv28:3`` and ``dense512:1`` (``bench_tuners``'s tasks and replay caches).
Every task is tuned by its own ``XGBTuner`` (TVM's defaults, knob features; seed ``1000*task +
repeat``, the same for both strategies), inside one ``TaskScheduler`` per (strategy, repeat)
with the total ``--budget``.

Measurements are *replayed* as in ``bench_tuners.py``: a config is measured for real once
(LocalBuilder + LocalRunner, outputs checked) and stored in ``benchmarks/cache/`` (one file per
task and target, shared with ``bench_tuners``); every later visit replays it, so both strategies
are compared on identical costs.  All runs advance in lock step, one round each per step, so
that a busy spell of a shared machine while the cache fills hits every run alike.

With ``--tables``, the tasks are instead MobileNet v1's layers of ``bench_transfer``'s ``nchwc``
and ``depthwise`` families, weighted by how often each occurs in the network (``TABLE_TASKS``),
and every cost comes from ``bench_transfer``'s tables of real measurements (every config
measured once): no measurement at all, so many repeats are cheap.

Printed: the weighted latency ``sum(weight * best latency)`` after a quarter, half and all of
the budget (median over repeats, with min–max), the trials each strategy gave each task, and
the ratio gradient / round-robin of the final latencies (per repeat, and of the medians; below
1 means the gradient scheduler found the faster network).

Usage::

    .venv/bin/python benchmarks/bench_task_scheduler.py --quick          # two small dense tasks
    .venv/bin/python benchmarks/bench_task_scheduler.py                  # default tasks, 960 trials, 10 seeds
    .venv/bin/python benchmarks/bench_task_scheduler.py --tasks conv56:4,conv28:3 --budget 400 --round 16
    .venv/bin/python benchmarks/bench_task_scheduler.py --tables --budget 700 --repeats 10
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from collections.abc import Sequence

import _common
from bench_tuners import CACHE_DIR, TASKS, ReplayMeasure, cache_path

from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.task.scope import GLOBAL_SCOPE
from tunecli.engine.task.task import create
from tunecli.engine.tuner import SCHEDULER_POLICIES, TaskScheduler, XGBTuner

#: Small tasks of the quick run, besides ``bench_tuners.TASKS``.
SMALL_TASKS: dict[str, tuple[str, tuple]] = {
    "dense64": ("dense.x86", (64, 64, 64, "float32")),
    "dense128": ("dense.x86", (128, 128, 128, "float32")),
}
ALL_TASKS = {**TASKS, **SMALL_TASKS}
DEFAULT_TASKS = "conv56:4,conv28:3,dense512:1"
QUICK_TASKS = "dense64:3,dense128:1"
#: ``--tables``: (family, position: 0 the target, k the k-th source) -> occurrences in MobileNet v1.
TABLE_TASKS: dict[tuple[str, int], float] = {
    ("nchwc", 0): 1, ("nchwc", 1): 1, ("nchwc", 2): 5, ("nchwc", 3): 1,
    ("depthwise", 0): 1, ("depthwise", 1): 1, ("depthwise", 2): 5,
}


def table_tasks(batch: int) -> tuple[list[str], list[float], list, dict]:
    """Keys, weights, tasks and table measures of ``TABLE_TASKS``."""
    from bench_transfer import TableMeasure, family_tables

    keys, weights, tasks, measures = [], [], [], {}
    for (family, position), weight in TABLE_TASKS.items():
        target, sources = family_tables(family, False, batch)
        table = [target, *sources][position]
        keys.append(f"{family}{position}")
        weights.append(weight)
        tasks.append(table.task)
        measures[table.task.workload] = TableMeasure(table, batch)
    return keys, weights, tasks, measures


class ReplayAll:
    """``measure_batch`` for many tasks: each input goes to the replay cache of its task."""

    def __init__(self, measures: dict[tuple, ReplayMeasure], batch: int):
        self.measures = measures
        self.n_parallel = batch

    def __call__(self, inputs: Sequence[MeasureInput]) -> list[MeasureResult]:
        results: list[MeasureResult | None] = [None] * len(inputs)
        by_task: dict[tuple, list[int]] = {}
        for i, inp in enumerate(inputs):
            by_task.setdefault(inp.task.workload, []).append(i)
        for workload, positions in by_task.items():
            measured = self.measures[workload]([inputs[i] for i in positions])
            for i, res in zip(positions, measured, strict=True):
                results[i] = res
        return [res for res in results if res is not None]

    @property
    def real_seconds(self) -> float:
        """Seconds spent measuring for real (cache misses)."""
        return sum(m.real_seconds for m in self.measures.values())


class Run:
    """One scheduler (a strategy and a repeat), driven round by round, with its latency curve."""

    def __init__(self, strategy: str, repeat: int, tasks: list, weights: list[float], budget: int,
                 round_trials: int | None):
        self.strategy, self.repeat = strategy, repeat
        seeds = {id(task): 1000 * i + repeat for i, task in enumerate(tasks)}
        self.scheduler = TaskScheduler(tasks, lambda task: XGBTuner(task, seed=seeds[id(task)]), budget,
                                       weights, policy=strategy, round_trials=round_trials, seed=repeat)
        self.curve: list[tuple[int, float]] = []  # (trials spent, weighted latency) after each round
        self.own = 0.0

    def step(self, measure: ReplayAll) -> bool:
        """Measure one round; False when the run is over."""
        index = self.scheduler.next_task()
        if index is None:
            return False
        start, real = time.perf_counter(), measure.real_seconds
        self.scheduler.tune_round(index, measure)
        self.own += time.perf_counter() - start - (measure.real_seconds - real)
        self.curve.append((self.scheduler.spent, self.scheduler.objective))
        return True

    def latency_at(self, trials: int) -> float:
        """The weighted latency once ``trials`` trials were spent (inf before every task had a config)."""
        best = math.inf
        for spent, objective in self.curve:
            if spent > trials:
                break
            best = objective
        return best


def parse_tasks(text: str) -> list[tuple[str, float]]:
    out = []
    for item in text.split(","):
        name, _, weight = item.strip().partition(":")
        if name not in ALL_TASKS:
            raise SystemExit(f"unknown task {name!r}; known: {', '.join(ALL_TASKS)}")
        out.append((name, float(weight or 1)))
    return out


def report(runs: list[Run], keys: list[str], checkpoints: Sequence[int]) -> None:
    print("\nweighted latency sum(weight * best) in ms after k trials, median over repeats [min-max]")
    print(f"  {'strategy':<12}" + "".join(f"{'@' + str(c):>26}" for c in checkpoints) + f"{'own s/run':>11}")
    for strategy in SCHEDULER_POLICIES:
        mine = [r for r in runs if r.strategy == strategy]
        cells = ""
        for c in checkpoints:
            values = [1e3 * r.latency_at(c) for r in mine]
            if all(math.isfinite(v) for v in values):
                cells += f"{_common.median(values):11.4f} [{min(values):.4f}-{max(values):.4f}]"
            else:
                cells += f"{'- (a task without a config)':>26}"
        print(f"  {strategy:<12}{cells}{_common.median([r.own for r in mine]):11.1f}")
    print("\ntrials per task (median over repeats):")
    for strategy in SCHEDULER_POLICIES:
        mine = [r for r in runs if r.strategy == strategy]
        shares = [_common.median([r.scheduler.tasks[i].trials for r in mine]) for i in range(len(keys))]
        print(f"  {strategy:<12}" + "  ".join(f"{k} {s:.0f}" for k, s in zip(keys, shares, strict=True)))
    final = checkpoints[-1]
    ratios = []
    for g in (r for r in runs if r.strategy == "gradient"):
        rr = next(r for r in runs if r.strategy == "round-robin" and r.repeat == g.repeat)
        ratios.append(g.latency_at(final) / rr.latency_at(final))
    grad = _common.median([r.latency_at(final) for r in runs if r.strategy == "gradient"])
    robin = _common.median([r.latency_at(final) for r in runs if r.strategy == "round-robin"])
    print(f"\ngradient / round-robin weighted latency at {final} trials: per repeat "
          f"{' '.join(f'{x:.3f}' for x in ratios)}; median of ratios {_common.median(ratios):.3f}; "
          f"ratio of medians {grad / robin:.3f} (below 1: gradient better)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=None, help=f"comma list of name:weight (default {DEFAULT_TASKS}; "
                        f"names: {', '.join(ALL_TASKS)})")
    parser.add_argument("--budget", type=int, default=None, help="trials for all tasks (default 960)")
    parser.add_argument("--repeats", type=int, default=None, help="seeds per strategy (default 10)")
    parser.add_argument("--round", type=int, default=None,
                        help="most trials per round (default 32)")
    parser.add_argument("--batch", type=int, default=2, help="configs per measure batch")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_TASKS}, budget 64, rounds of 8, 2 repeats (about two minutes on a "
                        "cold cache)")
    parser.add_argument("--tables", action="store_true",
                        help="MobileNet v1's layers, costs from bench_transfer's tables (see the module doc)")
    parser.add_argument("--verbose", action="store_true", help="show autotvm's log messages")
    opts = parser.parse_args()
    spec = parse_tasks(opts.tasks or (QUICK_TASKS if opts.quick else DEFAULT_TASKS))
    budget = opts.budget or (64 if opts.quick else 960)
    round_trials = opts.round or (8 if opts.quick else 32)
    repeats = opts.repeats or (2 if opts.quick else 10)
    logging.getLogger("autotvm").setLevel(logging.DEBUG if opts.verbose else logging.ERROR)
    CACHE_DIR.mkdir(exist_ok=True)
    if opts.tables:
        keys, weights, tasks, measures = table_tasks(opts.batch)
    else:
        keys = [name for name, _ in spec]
        weights = [weight for _, weight in spec]
        tasks = [create(*ALL_TASKS[name], "llvm") for name in keys]
        measures = {task.workload: ReplayMeasure(task, cache_path(task), opts.batch, {}) for task in tasks}
    listed = ', '.join(f'{k}x{w:g}' for k, w in zip(keys, weights, strict=True))
    print(f"bench_task_scheduler: tasks {listed}, budget {budget}, rounds of {round_trials or 'plan_size'} "
          f"trials, repeats {repeats}, XGBTuner (seed 1000*task+repeat), batch {opts.batch}; "
          f"{_common.load_line()}")
    for key, task in zip(keys, tasks, strict=True):
        m = measures[task.workload]
        source = (f"cache {m.path.name}: {m.loaded} configs already measured" if hasattr(m, "path")
                  else "costs from its table")
        print(f"  {key}: {task.name}{task.args}, {len(task.config_space)} configs, {source}")
    measure = ReplayAll(measures, opts.batch)
    runs = [Run(strategy, repeat, tasks, weights, budget, round_trials)
            for repeat in range(repeats) for strategy in SCHEDULER_POLICIES]
    start = time.perf_counter()
    GLOBAL_SCOPE.in_tuning = True
    try:
        steps = 0
        while [run.step(measure) for run in runs].count(True):
            steps += 1
            if steps % 5 == 0:
                real = sum(m.misses for m in measures.values())
                spent = min(r.scheduler.spent for r in runs)
                print(f"    step {steps}: {spent} trials per run; {real} configs measured for real",
                      flush=True)
    finally:
        GLOBAL_SCOPE.in_tuning = False
        for m in measures.values():
            m.close()
    checkpoints = sorted({max(1, budget // 4), max(1, budget // 2), budget})
    report(runs, keys, checkpoints)
    real = sum(m.misses for m in measures.values())
    seconds = sum(m.real_seconds for m in measures.values())
    print(f"\ncache: {real} configs measured for real ({seconds:.0f} s), "
          f"{sum(m.hits for m in measures.values())} replayed; wall {time.perf_counter() - start:.0f} s")
    print(f"{_common.peak_memory_line()}; {_common.load_line()}")


if __name__ == "__main__":
    main()
