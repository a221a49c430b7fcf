"""Search efficiency of the tuners: best GFLOPS after 50/100/200 trials, medians over seeds.

Tasks (``--tasks``, comma separated):

* ``dense512``  ``dense.x86`` 512×512×512 float32;
* ``conv56``    ``conv2d_nchw.x86`` ResNet-18 layer 56×56, 64→64, 3×3, stride 1, pad 1;
* ``conv28``    ``conv2d_nchw.x86`` ResNet-18 layer 28×28, 128→128, 3×3, stride 1, pad 1.

Tuners (``--tuners``): ``random``, ``gridsearch`` (deterministic: run once), ``ga``, ``xgb-knob``
and ``xgb-itervar`` (``XGBTuner`` with that ``feature_type``, other options at their defaults);
repeat r of the tuner with position t in that list gets ``seed=1000*t + r`` (distinct seeds, so
tuners do not share random draws).

Measurements are *replayed*: every config of a task is measured for real once (LocalBuilder +
LocalRunner with the correctness check) and stored as a TVM-format log under
``benchmarks/cache/`` (one file per task and target); a later visit of the same config by any
tuner, seed or run replays the stored result.  So all tuners are compared on identical costs,
and the real measurement time is bounded by the number of *distinct* configs visited (a run
on a warm cache costs only the tuners' own CPU time).  All runs (tuner × seed) advance in lock
step, one batch each per round, and a round's cache misses are measured together: a config's
cost is fixed when it is first visited, so running the tuners one after another would let a
busy spell on a shared machine penalise whichever tuner ran during it.  Delete the cache files
to measure afresh.

Printed per task: tuner × checkpoint best GFLOPS (median over seeds, with min–max), the
tuner's own time (wall seconds outside real measurements), and the number of trials each XGB
tuner needs to reach the random tuner's best at the last checkpoint (median over seeds;
AutoTVM's paper: about half or fewer).

Usage::

    .venv/bin/python benchmarks/bench_tuners.py --quick            # conv28, 100 trials, 2 repeats
    .venv/bin/python benchmarks/bench_tuners.py --repeats 3        # all tasks, 200 trials (~25 min cold)
    .venv/bin/python benchmarks/bench_tuners.py --tasks conv28 --trials 100 --repeats 5
"""

from __future__ import annotations

import argparse
import logging
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _common

import tunecli.engine.ops.registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.log import record
from tunecli.engine.measure import LocalBuilder, LocalRunner, create_measure_batch, measure_option
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.task.scope import GLOBAL_SCOPE
from tunecli.engine.task.task import create
from tunecli.engine.tuner import GATuner, GridSearchTuner, RandomTuner, XGBTuner

TASKS: dict[str, tuple[str, tuple]] = {
    "dense512": ("dense.x86", (512, 512, 512, "float32")),
    "conv56": ("conv2d_nchw.x86", (1, 56, 56, 64, 64, 3, 3, 1, 1, 1, "float32")),
    "conv28": ("conv2d_nchw.x86", (1, 28, 28, 128, 128, 3, 3, 1, 1, 1, "float32")),
}
TUNERS = ("random", "gridsearch", "ga", "xgb-knob", "xgb-itervar")
CACHE_DIR = Path(__file__).resolve().parent / "cache"


def tuner_seed(kind: str, seed: int) -> int:
    """The seed given to tuner ``kind`` in repeat ``seed``: distinct per tuner, so that two tuners
    never start from the same random configs (random, GA and XGB's first plan all draw random
    indices; with equal seeds XGB would "reach" random's best by replaying its draws)."""
    return 1000 * TUNERS.index(kind) + seed


def make_tuner(kind: str, task: Any, seed: int) -> Any:
    """A fresh tuner of ``kind`` for ``task`` seeded with ``seed``."""
    if kind == "random":
        return RandomTuner(task, seed=seed)
    if kind == "gridsearch":
        return GridSearchTuner(task, seed=seed)
    if kind == "ga":
        return GATuner(task, seed=seed)
    if kind.startswith("xgb-"):
        return XGBTuner(task, feature_type=kind[4:], seed=seed)
    raise SystemExit(f"unknown tuner {kind!r}; known: {', '.join(TUNERS)}")


class ReplayMeasure:
    """``measure_batch`` that measures a config for real once and replays it afterwards.

    Results are keyed by config index and appended to ``path`` (TVM log format) as soon as they
    are measured, so an interrupted run keeps what it measured.  The real builder/runner are
    started on the first cache miss only.
    """

    def __init__(self, task: Any, path: Path, batch: int, runner_kwargs: dict):
        self.task = task
        self.path = path
        self.n_parallel = batch
        self.runner_kwargs = runner_kwargs
        self.cache: dict[int, MeasureResult] = {}
        if path.exists():
            for inp, res in record.load_from_file(path):
                if inp.task.workload == task.workload and str(inp.target) == str(task.target):
                    self.cache[int(inp.config.index)] = MeasureResult(
                        tuple(res.costs), MeasureErrorNo(res.error_no), res.all_cost, res.timestamp)
        self.loaded = len(self.cache)
        self.hits = self.misses = 0
        self.real_seconds = 0.0
        self._real: Any = None
        self._workers: tuple = ()

    def _real_batch(self) -> Any:
        if self._real is None:
            builder, runner = LocalBuilder(), LocalRunner(check_correctness=True, **self.runner_kwargs)
            self._workers = (builder, runner)
            self._real = create_measure_batch(self.task, measure_option(builder, runner))
        return self._real

    def __call__(self, inputs: Sequence[MeasureInput]) -> list[MeasureResult]:
        missing = list({int(inp.config.index): inp for inp in inputs
                        if int(inp.config.index) not in self.cache}.values())
        self.hits += len(inputs) - len(missing)
        if missing:
            real = self._real_batch()
            start = time.perf_counter()
            with self.path.open("a", encoding="utf-8") as log:
                for i in range(0, len(missing), real.n_parallel):
                    chunk = missing[i:i + real.n_parallel]
                    for inp, res in zip(chunk, real(chunk), strict=True):
                        self.cache[int(inp.config.index)] = res
                        log.write(record.encode(inp, res) + "\n")
                    log.flush()
            self.real_seconds += time.perf_counter() - start
            self.misses += len(missing)
        return [self.cache[int(inp.config.index)] for inp in inputs]

    def gflops(self, index: int) -> float:
        """GFLOPS of a cached config (0 for an error)."""
        res = self.cache[index]
        return res.gflops(self.task.flop)

    def close(self) -> None:
        """Stop the real builder/runner workers, if started."""
        for part in self._workers:
            part.close()


def cache_path(task: Any) -> Path:
    """The cache file of ``task`` (its name, arguments and target, made filename-safe)."""
    raw = f"{task.name}_{'_'.join(map(str, task.args))}_{task.target}"
    return CACHE_DIR / (re.sub(r"[^A-Za-z0-9.+=-]+", "_", raw)[:180] + ".log")


class Run:
    """One tuner run driven batch by batch (the loop of ``Tuner.tune``: ``has_next``,
    ``next_batch``, measure, ``update``), recording the best-so-far GFLOPS after each trial."""

    def __init__(self, kind: str, seed: int, task: Any, n_trial: int, batch: int):
        self.kind, self.seed, self.task, self.n_trial, self.batch = kind, seed, task, n_trial, batch
        self.tuner = make_tuner(kind, task, tuner_seed(kind, seed))
        self.curve: list[float] = []
        self.best = 0.0
        self.own = 0.0  # seconds spent in the tuner (proposing, fitting, searching)
        self.done = False

    def propose(self) -> list[MeasureInput]:
        """The next batch to measure (empty, and ``done`` set, when the run is over)."""
        start = time.perf_counter()
        configs = []
        if len(self.curve) < self.n_trial and self.tuner.has_next():
            configs = self.tuner.next_batch(min(self.batch, self.n_trial - len(self.curve)))
        self.own += time.perf_counter() - start
        if not configs:
            self.done = True
            self.curve += [self.best] * (self.n_trial - len(self.curve))  # out of configs: keeps its best
        return [MeasureInput(self.task.target, self.task, c) for c in configs]

    def feed(self, inputs: list[MeasureInput], results: list[MeasureResult]) -> None:
        """Give the tuner the results of its batch."""
        for res in results:
            self.best = max(self.best, res.gflops(self.task.flop))
            self.curve.append(self.best)
        start = time.perf_counter()
        self.tuner.update(inputs, results)
        self.own += time.perf_counter() - start


def run_lockstep(runs: list[Run], measure: ReplayMeasure, progress_every: int = 25) -> None:
    """Advance all runs together, one batch each per round, their cache misses measured in one
    go: measurement conditions that drift over time (a shared machine's load) then affect
    every tuner alike instead of whichever happened to run during a busy spell."""
    GLOBAL_SCOPE.in_tuning = True
    try:
        rounds = 0
        while True:
            batches = [(run, run.propose()) for run in runs if not run.done]
            batches = [(run, inputs) for run, inputs in batches if inputs]
            if not batches:
                break
            results = measure([inp for _, inputs in batches for inp in inputs])
            k = 0
            for run, inputs in batches:
                run.feed(inputs, results[k:k + len(inputs)])
                k += len(inputs)
            rounds += 1
            if rounds % progress_every == 0:
                done = min(len(run.curve) for run in runs)
                print(f"    {done} trials per run; {measure.misses} configs measured for real "
                      f"({measure.real_seconds:.0f} s)", flush=True)
    finally:
        GLOBAL_SCOPE.in_tuning = False


def trials_to_reach(curve: Sequence[float], target: float) -> int | None:
    """1-based trial after which ``curve`` first reaches ``target`` (None if it never does)."""
    for i, value in enumerate(curve):
        if value >= target:
            return i + 1
    return None


def report(key: str, task: Any, curves: dict[str, list[list[float]]], own: dict[str, list[float]],
           checkpoints: Sequence[int]) -> None:
    """Print the table of one task."""
    n = checkpoints[-1]
    print(f"\n{key}: {task.name}{task.args}, {len(task.config_space)} configs; best GFLOPS after k trials, "
          "median over seeds [min-max]")
    head = "".join(f"{'@' + str(c):>22}" for c in checkpoints)
    print(f"  {'tuner':<12}{head}{'tuner s/run':>13}")
    for kind, runs in curves.items():
        cells = ""
        for c in checkpoints:
            vals = [run[c - 1] for run in runs]
            cells += f"{_common.median(vals):9.1f} [{min(vals):5.1f}-{max(vals):5.1f}]"
        print(f"  {kind:<12}{cells}{_common.median(own[kind]):13.1f}")
    if "random" not in curves:
        return
    target = _common.median([run[n - 1] for run in curves["random"]])
    for kind in (k for k in curves if k.startswith("xgb")):
        reached = [trials_to_reach(run, target) for run in curves[kind]]
        finite = [r if r is not None else float("inf") for r in reached]
        med = _common.median(finite)
        shown = " ".join(str(r) if r is not None else f">{n}" for r in reached)
        ratio = f"{med / n:.2f}" if med != float("inf") else f">{1:.2f}"
        print(f"  {kind}: trials to reach random's {n}-trial best ({target:.1f} GFLOPS): median "
              f"{med if med != float('inf') else '>' + str(n)} (seeds: {shown}) -> {ratio} of random's {n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=None, help=f"comma list of {', '.join(TASKS)} (default: all)")
    parser.add_argument("--tuners", default=",".join(TUNERS))
    parser.add_argument("--trials", type=int, default=None, help="trials per run (default 200)")
    parser.add_argument("--repeats", type=int, default=None, help="seeds per tuner (default 3)")
    parser.add_argument("--first-repeat", type=int, default=0,
                        help="number of the first repeat (another seed set: e.g. 100)")
    parser.add_argument("--batch", type=int, default=2, help="configs per measure batch (tuner's n_parallel)")
    parser.add_argument("--quick", action="store_true",
                        help="conv28 only, 100 trials, 2 repeats (about 5 minutes on a cold cache)")
    parser.add_argument("--verbose", action="store_true", help="show autotvm's log messages")
    opts = parser.parse_args()
    tasks = [t.strip() for t in (opts.tasks or ("conv28" if opts.quick else ",".join(TASKS))).split(",")]
    trials = opts.trials or (100 if opts.quick else 200)
    repeats = opts.repeats or (2 if opts.quick else 3)
    tuners = [t.strip() for t in opts.tuners.split(",")]
    unknown = [t for t in tuners if t not in TUNERS] + [t for t in tasks if t not in TASKS]
    if unknown:
        parser.error(f"unknown tuner/task {unknown}; tuners {TUNERS}, tasks {tuple(TASKS)}")
    checkpoints = sorted({max(1, trials // 4), max(1, trials // 2), trials})
    logging.getLogger("autotvm").setLevel(logging.DEBUG if opts.verbose else logging.ERROR)
    CACHE_DIR.mkdir(exist_ok=True)
    print(f"bench_tuners: tasks {tasks}, tuners {tuners}, {trials} trials, "
          f"repeats {opts.first_repeat}..{opts.first_repeat + repeats - 1} "
          f"(tuner seed 1000*tuner+repeat), "
          f"batch {opts.batch}; {_common.load_line()}")
    for key in tasks:
        name, args = TASKS[key]
        task = create(name, args, "llvm")
        measure = ReplayMeasure(task, cache_path(task), opts.batch, {})
        print(f"\n[{key}] cache {measure.path.name}: {measure.loaded} configs already measured")
        seeds = range(opts.first_repeat, opts.first_repeat + repeats)
        runs = [Run(kind, seed, task, trials, opts.batch) for seed in seeds for kind in tuners
                if not (kind == "gridsearch" and seed > seeds[0])]  # grid search is deterministic
        start = time.perf_counter()
        try:
            run_lockstep(runs, measure, max(1, 50 // opts.batch))
        finally:
            measure.close()
        curves = {k: [r.curve for r in runs if r.kind == k] for k in tuners}
        own = {k: [r.own for r in runs if r.kind == k] for k in tuners}
        wall = time.perf_counter() - start
        report(key, task, curves, own, checkpoints)
        rate = 60 * measure.misses / measure.real_seconds if measure.real_seconds else float("nan")
        best_index = max(measure.cache, key=measure.gflops)
        print(f"  cache: {measure.misses} configs measured for real ({rate:.0f} trials/min), "
              f"{measure.hits} replayed; {len(measure.cache)} of {len(task.config_space)} known, best "
              f"{measure.gflops(best_index):.1f} GFLOPS (config {best_index}); task wall {wall:.0f} s")
    print(f"\n{_common.peak_memory_line()}; {_common.load_line()}")


if __name__ == "__main__":
    main()
