"""Trials to the goal: XGB against random, and XGB with transfer from a network's other tasks.

Three families of tasks, each the target task and the *source* tasks of the same template from
the same network (``FAMILIES``):

* ``dense``      ``dense.x86``, the layers of a batch-1 MLP (1024→1000 the target);
* ``nchwc``      ``conv2d_NCHWc.x86``, MobileNet v1's 1×1 convolutions at 7×7 and 14×14 and its
  first 3×3 convolution (another knob structure: ``unroll_kw`` where 1×1 layers have ``tile_oh``);
* ``depthwise``  ``depthwise_conv2d_NCHWc.x86``, MobileNet v1's depthwise layers at 7×7 and 14×14.

Costs come from *tables*: every config of every task is measured for real once (LocalBuilder +
LocalRunner, outputs checked, ``repeat=3``, the minimum kept) and stored as a small JSON file in
``benchmarks/transfer_tables/`` (task, machine, load, seconds per config index, error numbers);
the tuners then run against the table, so all tuners and seeds see identical costs and a run
costs only the tuners' own CPU time.  ``--measure`` measures the missing tables, ``--remeasure``
all of them (minutes per task; do it on a quiet machine).

Per family and seed: ``random``, ``xgb-tvm`` (``XGBTuner`` with TVM's fit schedule: the first fit
after ``plan_size`` = 64 measurements), ``xgb`` (``XGBTuner``, knob features, its defaults: the
first fit after 8) and ``xgb+transfer`` (``xgb`` after ``load_history`` of the source tasks'
records: per source, the ``--source-trials`` configs an ``xgb`` run of it measured, as the log
of a network tuned layer by layer holds; ``--source-tuner random``: configs drawn at random).
The goal is the median over seeds of random's best after ``--trials`` trials (the lower median:
a best that a seed reached, not the mean of two); printed are the trials each tuner needs to
reach the goal's speed and 95 % / 90 % of it (median over seeds; runs stop at the goal),
``xgb / random@trials`` (the issue's goal: <= 0.33) and ``xgb / xgb+transfer`` at each level
(the issue's goal: >= 2).

Usage::

    .venv/bin/python benchmarks/bench_transfer.py --measure               # measure missing tables
    .venv/bin/python benchmarks/bench_transfer.py --quick                 # 8 seeds, one family
    .venv/bin/python benchmarks/bench_transfer.py                         # 40 seeds, every family
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _common
import numpy as np

import tunecli.engine.ops.registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.measure import LocalBuilder, LocalRunner, create_measure_batch, measure_option
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.task.scope import GLOBAL_SCOPE
from tunecli.engine.task.task import Task, create

TABLE_DIR = Path(__file__).resolve().parent / "transfer_tables"


def _nchwc(c_in: int, size: int, c_out: int, k: int = 1, stride: int = 1) -> tuple:
    pad = (k // 2,) * 4
    return (("TENSOR", (1, c_in, size, size), "float32"), ("TENSOR", (c_out, c_in, k, k), "float32"),
            (stride, stride), pad, (1, 1), "NCHW", "NCHW", "float32")


def _depthwise(c: int, size: int, stride: int) -> tuple:
    return (("TENSOR", (1, c, size, size), "float32"), ("TENSOR", (c, 1, 3, 3), "float32"),
            (stride, stride), (1, 1, 1, 1), (1, 1), "NCHW", "NCHW", "float32")


#: family -> (template, target args, [source args]): the target first, then its network's other layers.
FAMILIES: dict[str, tuple[str, tuple, list[tuple]]] = {
    "dense": ("dense.x86", (1, 1000, 1024, "float32"),
              [(1, 1024, 256, "float32"), (1, 512, 512, "float32"), (1, 256, 512, "float32")]),
    "nchwc": ("conv2d_NCHWc.x86", _nchwc(1024, 7, 1024),
              [_nchwc(512, 7, 1024), _nchwc(512, 14, 512), _nchwc(3, 224, 32, k=3, stride=2)]),
    "depthwise": ("depthwise_conv2d_NCHWc.x86", _depthwise(1024, 7, 1),
                  [_depthwise(512, 14, 2), _depthwise(512, 14, 1)]),
}


# ------------------------------------------------------------------------------------------ tables
def table_path(task: Task) -> Path:
    """The table file of ``task`` (template and a digest of its arguments)."""
    import hashlib

    digest = hashlib.sha1(repr((task.name, task.args, str(task.target))).encode()).hexdigest()[:12]
    return TABLE_DIR / f"{task.name}_{digest}.json"


def space_digest(task: Task) -> str:
    """A digest of ``task``'s config space: every knob's name and entities, in index order."""
    import hashlib

    knobs = [(name, [str(e) for e in knob.entities]) for name, knob in task.config_space.space_map.items()]
    return hashlib.sha1(repr(knobs).encode()).hexdigest()[:12]


class CostTable:
    """Every config of one task measured once: seconds per index (inf for an error)."""

    def __init__(self, task: Task, costs: dict[int, float], errors: dict[int, int]):
        self.task, self.costs, self.errors = task, costs, errors

    @classmethod
    def load(cls, task: Task) -> CostTable | None:
        """The stored table of ``task`` (None when it was not measured)."""
        path = table_path(task)
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        costs = {int(k): (float(v) if v is not None else float("inf")) for k, v in data["costs"].items()}
        space = task.config_space
        valid = {i for i in range(space.range_length) if space.is_index_valid(i)}
        stale = data.get("space", space_digest(task)) != space_digest(task) or set(costs) != valid
        if stale:  # the template's knobs changed since: its indices name other configs now
            raise SystemExit(f"bench_transfer: {path.name} was measured for another config space of "
                             f"{task.name} ({len(costs)} configs; {len(valid)} now): measure it again "
                             f"with --remeasure --families ... on a quiet machine")
        return cls(task, costs, {int(k): int(v) for k, v in data["errors"].items()})

    def result(self, index: int) -> MeasureResult:
        """The stored measurement of config ``index`` as a MeasureResult."""
        cost = self.costs[index]
        if cost == float("inf"):
            return MeasureResult((1e9,), MeasureErrorNo(self.errors.get(index, 4)), 0.0, 0.0)
        return MeasureResult((cost,), MeasureErrorNo.NO_ERROR, 0.0, 0.0)

    def gflops(self, index: int) -> float:
        """GFLOPS of config ``index`` (0 for an error)."""
        return self.result(index).gflops(self.task.flop)


class TableMeasure:
    """``measure_batch`` that looks every config up in a table (the replay-cache interface of
    ``bench_tuners.ReplayMeasure``, with nothing ever measured for real)."""

    def __init__(self, table: CostTable, batch: int = 2):
        self.table, self.n_parallel = table, batch
        self.hits = self.misses = 0
        self.real_seconds = 0.0

    def __call__(self, inputs: Sequence[MeasureInput]) -> list[MeasureResult]:
        self.hits += len(inputs)
        return [self.table.result(int(inp.config.index)) for inp in inputs]

    def close(self) -> None:
        """Nothing to stop."""


def measure_table(task: Task, batch: int) -> CostTable:
    """Measure every valid config of ``task`` for real and store the table."""
    builder, runner = LocalBuilder(), LocalRunner(check_correctness=True, repeat=3, min_repeat_ms=5)
    real = create_measure_batch(task, measure_option(builder, runner))
    indices = [i for i in range(task.config_space.range_length) if task.config_space.is_index_valid(i)]
    costs: dict[int, float] = {}
    errors: dict[int, int] = {}
    start, load_before = time.perf_counter(), os.getloadavg()
    old = GLOBAL_SCOPE.in_tuning
    GLOBAL_SCOPE.in_tuning = True
    try:
        for k in range(0, len(indices), batch):
            chunk = [MeasureInput(task.target, task, task.config_space.get(i)) for i in indices[k:k + batch]]
            for inp, res in zip(chunk, real(chunk), strict=True):
                index = int(inp.config.index)
                costs[index] = min(res.costs) if res.ok else float("inf")
                if not res.ok:
                    errors[index] = int(res.error_no)
    finally:
        GLOBAL_SCOPE.in_tuning = old
        builder.close()
        runner.close()
    seconds = time.perf_counter() - start
    TABLE_DIR.mkdir(exist_ok=True)
    table_path(task).write_text(json.dumps({
        "task": task.name, "args": repr(task.args), "target": str(task.target), "space": space_digest(task),
        "machine": f"{_cpu_model()}, {os.cpu_count()} cores",
        "load_before": list(load_before), "load_after": list(os.getloadavg()),
        "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "seconds": round(seconds, 1),
        "timing": "LocalRunner(repeat=3, min_repeat_ms=5, check_correctness=True), minimum of the repeats",
        "costs": {str(i): (c if c != float("inf") else None) for i, c in costs.items()},
        "errors": {str(i): e for i, e in errors.items()},
    }, indent=0))
    print(f"  {task.name}{_short(task)}: {len(indices)} configs in {seconds:.0f} s, "
          f"{len(errors)} errors", flush=True)
    return CostTable(task, costs, errors)


def _cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or platform.machine()
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")),
                platform.machine())


def _short(task: Task) -> str:
    shapes = [a[1] for a in task.args if isinstance(a, tuple) and a and a[0] == "TENSOR"]
    return str(shapes or task.args[:-1])


def family_tables(family: str, remeasure: bool, batch: int) -> tuple[CostTable, list[CostTable]]:
    """The target's and the sources' tables (measured when missing or asked to)."""
    name, target_args, source_args = FAMILIES[family]
    tables = []
    for args in [target_args, *source_args]:
        task = create(name, args, "llvm")
        table = None if remeasure else CostTable.load(task)
        tables.append(table or measure_table(task, batch))
    return tables[0], tables[1:]


# ------------------------------------------------------------------------------------------ runs
KINDS = ("random", "xgb-tvm", "xgb", "xgb+transfer")


def make_tuner(kind: str, table: CostTable, seed: int, options: dict) -> Any:
    """A fresh tuner of ``kind`` (one of ``KINDS``) for the table's task; ``xgb-tvm`` is ``xgb``
    with TVM's fit schedule (first fit after ``plan_size`` measurements)."""
    from tunecli.engine.tuner import RandomTuner, XGBTuner  # the tuner package once, when tuning

    if kind == "random":
        return RandomTuner(table.task, seed=seed)
    if kind == "xgb-tvm":
        options = {**options, "first_fit": options["plan_size"]}
    return XGBTuner(table.task, seed=seed, **options)


def run_to_goal(tuner: Any, table: CostTable, goal: float, n_trial: int, batch: int,
                records: list | None = None) -> list[float]:
    """Best-so-far GFLOPS after each trial, stopped once ``goal`` is reached (or ``n_trial``); the
    (input, result) pairs are appended to ``records`` when given."""
    curve: list[float] = []
    best = 0.0
    while len(curve) < n_trial and best < goal and tuner.has_next():
        configs = tuner.next_batch(min(batch, n_trial - len(curve)))
        if not configs:
            break
        inputs = [MeasureInput(table.task.target, table.task, c) for c in configs]
        results = [table.result(int(c.index)) for c in configs]
        if records is not None:
            records.extend(zip(inputs, results, strict=True))
        for res in results:
            best = max(best, res.gflops(table.task.flop))
            curve.append(best)
        tuner.update(inputs, results)
    return curve


def source_records(sources: Sequence[CostTable], per_source: int, seed: int, tuner: str,
                   options: dict) -> list[tuple]:
    """Records of the source tasks, ``per_source`` of each: the configs an ``xgb`` run of that task
    measured (as the log of a network tuned layer by layer holds), or configs drawn at random."""
    rng = np.random.default_rng(10_000 + seed)
    records = []
    for k, table in enumerate(sources):
        if tuner == "xgb":
            run = make_tuner("xgb", table, 3000 + 100 * k + seed, options)
            run_to_goal(run, table, float("inf"), per_source, 2, records)
            continue
        indices = sorted(table.costs)
        for i in rng.choice(indices, size=min(per_source, len(indices)), replace=False):
            config = table.task.config_space.get(int(i))
            records.append((MeasureInput(table.task.target, table.task, config), table.result(int(i))))
    return records


def reached(curve: Sequence[float], goal: float) -> float:
    """1-based trial at which ``curve`` reaches ``goal`` (inf when it does not)."""
    return next((i + 1 for i, v in enumerate(curve) if v >= goal), float("inf"))


def _fmt(x: float) -> str:
    return f"{x:.0f}" if x != float("inf") else "never"


LEVELS = (1.0, 0.95, 0.9)  # latency goals: random's median best, and 5 % / 10 % slower


def bench_family(family: str, target: CostTable, sources: list[CostTable], seeds: Sequence[int],
                 opts: argparse.Namespace, options: dict) -> dict[str, list[float]]:
    """Run every tuner kind on one family and print its lines; return the trials to the goal."""
    task = target.task
    best = max(target.gflops(i) for i in target.costs)
    n = opts.trials
    GLOBAL_SCOPE.in_tuning = True
    curves: dict[str, list[list[float]]] = {}
    own: dict[str, float] = {}
    try:
        random_best = [run_to_goal(make_tuner("random", target, 1000 + s, options), target, float("inf"), n,
                                   opts.batch)[-1] for s in seeds]
        goal = statistics.median_low(random_best)  # a best that the median seed reached
        for kind in KINDS:
            start = time.process_time()
            curves[kind] = []
            for s in seeds:
                tuner = make_tuner(kind, target, (1000 if kind == "random" else 2000) + s, options)
                if kind == "xgb+transfer":
                    history = source_records(sources, opts.source_trials, s, opts.source_tuner, options)
                    tuner.load_history(history, min_seed_records=opts.min_seed_records)
                cap = 10 * n if kind == "random" else opts.max_trials
                curves[kind].append(run_to_goal(tuner, target, goal, cap, opts.batch))
            own[kind] = (time.process_time() - start) / len(seeds)
    finally:
        GLOBAL_SCOPE.in_tuning = False
    med = {kind: [_common.median([reached(c, level * goal) for c in runs]) for level in LEVELS]
           for kind, runs in curves.items()}
    print(f"\n[{family}] {task.name}{_short(task)}: {len(target.costs)} configs, best {best:.1f} GFLOPS; "
          f"goal = random's median best after {n} trials: {goal:.1f} GFLOPS ({goal / best:.0%} of the best)")
    print("  sources: " + ", ".join(f"{_short(t.task)}" for t in sources)
          + f"; the records of {opts.source_trials} trials of {opts.source_tuner} each")
    head = "".join(f"{f'{level:.0%} of goal':>14}" for level in LEVELS)
    print(f"  median trials to {head}   reached/seeds  tuner CPU s/run")
    for kind in KINDS:
        reach = sum(reached(c, goal) != float("inf") for c in curves[kind])
        cells = "".join(f"{_fmt(v):>14}" for v in med[kind])
        print(f"  {kind:<16}{cells}{reach:>9}/{len(seeds):<6}{own[kind]:>12.2f}")
    g = med["xgb"][0]
    tvm = med["xgb-tvm"][0]
    print(f"  xgb / random@{n}: {g / n:.2f} (issue goal <= 0.33; TVM's fit schedule {tvm / n:.2f})")
    ratios = ", ".join(f"{_ratio(med['xgb'][k], med['xgb+transfer'][k])} at {level:.0%}"
                       for k, level in enumerate(LEVELS))
    print(f"  xgb / xgb+transfer: {ratios} of the goal's speed (issue goal >= 2)", flush=True)
    return {kind: [reached(c, goal) for c in runs] for kind, runs in curves.items()}


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b not in (0, float("inf")) and a != float("inf") else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--measure", action="store_true", help="measure the missing tables and stop")
    parser.add_argument("--remeasure", action="store_true", help="measure every table again and stop")
    parser.add_argument("--batch", type=int, default=2, help="configs per measure batch (n_parallel)")
    parser.add_argument("--seeds", type=int, default=None, help="seeds per tuner (default 40)")
    parser.add_argument("--trials", type=int, default=200, help="random's trials that set the goal")
    parser.add_argument("--max-trials", type=int, default=None, help="cap of an XGB run (default --trials)")
    parser.add_argument("--source-trials", type=int, default=200, help="records per source task")
    parser.add_argument("--source-tuner", choices=("xgb", "random"), default="xgb",
                        help="the tuner whose records of the source tasks are transferred")
    parser.add_argument("--min-seed-records", type=int, default=200, help="load_history's minimum")
    parser.add_argument("--plan-size", type=int, default=64, help="XGBTuner plan_size")
    parser.add_argument("--first-fit", type=int, default=None, help="XGBTuner first_fit (default: its own)")
    parser.add_argument("--quick", action="store_true", help="8 seeds, the depthwise family")
    opts = parser.parse_args()
    if opts.quick and opts.families == ",".join(FAMILIES):
        opts.families = "depthwise"
    seeds = range(opts.seeds or (8 if opts.quick else 40))
    opts.max_trials = opts.max_trials or opts.trials
    families = [f.strip() for f in opts.families.split(",")]
    logging.getLogger("autotvm").setLevel(logging.ERROR)
    if opts.measure or opts.remeasure:
        print(f"bench_transfer: measuring tables; {_common.load_line()}", flush=True)
        for family in families:
            family_tables(family, opts.remeasure, opts.batch)
        return
    options = {"plan_size": opts.plan_size, "feature_type": "knob", "num_threads": 1}
    if opts.first_fit is not None:
        options["first_fit"] = opts.first_fit
    print(f"bench_transfer: families {families}, {len(seeds)} seeds, XGBTuner options {options}, "
          f"batch {opts.batch}, min_seed_records {opts.min_seed_records}; {_common.load_line()}")
    for family in families:
        target, sources = family_tables(family, False, opts.batch)
        bench_family(family, target, sources, seeds, opts, options)
    print(f"\n{_common.peak_memory_line()}; {_common.load_line()}")


if __name__ == "__main__":
    main()
