"""Timing stability of parallel kernels: TVM's runner settings against ours.

The measured kernels are eight configs of ``conv2d_nchw.x86`` (ResNet-18 28×28, 128→128, 3×3)
that use both cores (``parallel=1``, 16×14 register block, padding inlined, KW unrolled) and
differ only in ``tile_ic``; they run at nearly the same speed when timed back to back in one
process. They are measured through ``LocalBuilder`` + ``LocalRunner`` in batches of 2 (the
builder's default on 2 cores: build both, then time both), under two settings, alternating
round by round so that both see the same machine:

* ``tvm``:  ``warmup_ms=0, cooldown_interval=0.1`` (TVM's LocalRunner: one warm-up call, a
  0.1 s pause after each measurement);
* ``ours``: ``warmup_ms=50, cooldown_interval=0`` (the defaults).

Printed per setting: median GFLOPS, the share of measurements below 60 % of the fastest
measurement of the same config (the "slow start" outliers), the same share for the first and
the second kernel of a batch, and wall seconds per measured trial; then how much two timings of
one config differ (every pair of a config's measurements under a setting: the median, 90th and
95th percentiles and the largest of ``|t1 / t2 - 1|``, the faster as ``t2``), the noise that
``log.layout_choice.MARGIN`` must exceed for a record to win over the untuned config. Then peak
memory.

With ``--contention`` it measures instead why one record of a config says little against
one record of another on a busy machine: two configs of ResNet-18's Winograd layer at 64x64
(``conv2d_NCHWc_winograd.x86``, 512 -> 512 channels on 2x2 pixels; #6 and #174, the pair a
3-trial tune of ``jobs/resnet18.yaml`` at 64x64 got wrong) measured alternately through
``LocalRunner`` with that job's settings, ``--rounds`` times each, first on the machine as it is,
then with one spinning process beside them, then with the kernels on one thread.  Printed per
condition and config: the fastest and the median measurement and how many measurements were
within 1.5x of the fastest of all conditions (the kernel's speed with both cores to itself).

Usage: ``.venv/bin/python benchmarks/bench_measure_stability.py [--rounds 6] [--contention]``
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from collections import defaultdict

import _common

import tunecli.engine.ops.registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.measure import LocalBuilder, LocalRunner, create_measure_batch, measure_option
from tunecli.engine.measure.result import MeasureInput
from tunecli.engine.measure.time_stats import LoadWindow
from tunecli.engine.task.scope import GLOBAL_SCOPE
from tunecli.engine.task.task import create

SETTINGS = {"tvm": {"warmup_ms": 0.0, "cooldown_interval": 0.1},
            "ours": {"warmup_ms": 50.0, "cooldown_interval": 0.0}}
ARGS = (1, 28, 28, 128, 128, 3, 3, 1, 1, 1, "float32")
FIXED = {"tile_oc": 16, "tile_ow": 14, "parallel": 1, "compute_pad": "inline", "unroll_kw": 1}
SLOW = 0.6


def _value(entity: object) -> object:
    size = getattr(entity, "size", None)
    return size[-1] if size is not None else entity.val


def chosen_configs(task: object) -> list:
    """The configs of ``task`` matching :data:`FIXED` (one per ``tile_ic``)."""
    space = task.config_space
    out = []
    for index in range(len(space)):
        config = space.get(index)
        if all(_value(config[name]) == value for name, value in FIXED.items()):
            out.append(config)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6, help="rounds per setting")
    parser.add_argument("--also-warmup-ms", type=float, default=None,
                        help="add a third setting: ours with this warm-up")
    parser.add_argument("--contention", action="store_true",
                        help="a parallel kernel's measurements beside a busy process (see the module doc)")
    opts = parser.parse_args()
    if opts.contention:
        contention(opts.rounds)
        return
    if opts.also_warmup_ms is not None:
        extra = {"warmup_ms": opts.also_warmup_ms, "cooldown_interval": 0.0}
        SETTINGS[f"ours-{opts.also_warmup_ms:g}"] = extra
    logging.getLogger("autotvm").setLevel(logging.ERROR)
    task = create("conv2d_nchw.x86", ARGS, "llvm")
    configs = chosen_configs(task)
    print(f"bench_measure_stability: {len(configs)} parallel conv2d configs, batches of 2, "
          f"{opts.rounds} rounds per setting; {_common.load_line()}")
    batches = {}
    for name, kwargs in SETTINGS.items():
        builder = LocalBuilder(n_parallel=2)
        runner = LocalRunner(check_correctness=True, **kwargs)
        batches[name] = (builder, runner, create_measure_batch(task, measure_option(builder, runner)))
    gflops: dict[str, dict[int, list[tuple[int, float]]]] = {name: defaultdict(list) for name in SETTINGS}
    wall = dict.fromkeys(SETTINGS, 0.0)
    GLOBAL_SCOPE.in_tuning = True
    window = LoadWindow()  # the other users' work beside the measurements (this benchmark's are its own)
    try:
        for rnd in range(opts.rounds):
            order = configs[rnd % 2:] + configs[:rnd % 2]  # every config is first and second in a batch
            for name in SETTINGS:
                measure = batches[name][2]
                start = time.perf_counter()
                for k in range(0, len(order), 2):
                    chunk = order[k:k + 2]
                    results = measure([MeasureInput(task.target, task, c) for c in chunk])
                    for position, (config, res) in enumerate(zip(chunk, results, strict=True)):
                        gflops[name][config.index].append((position, res.gflops(task.flop)))
                wall[name] += time.perf_counter() - start
    finally:
        GLOBAL_SCOPE.in_tuning = False
        for builder, runner, _ in batches.values():
            builder.close()
            runner.close()
    best = {c.index: max(v for name in SETTINGS for _, v in gflops[name][c.index]) for c in configs}
    print(f"  {'setting':<8}{'median GFLOPS':>15}{'slow (<60% of best)':>22}{'as 1st':>9}{'as 2nd':>9}"
          f"{'s/trial':>9}")
    for name, kwargs in SETTINGS.items():
        rows = [(i, p, v) for i, seen in gflops[name].items() for p, v in seen]
        slow = [(p, v < SLOW * best[i]) for i, p, v in rows]

        def share(pos: int | None, slow: list = slow) -> str:
            picked = [s for p, s in slow if pos is None or p == pos]
            return f"{sum(picked)}/{len(picked)}"
        print(f"  {name:<8}{_common.median([v for _, _, v in rows]):15.1f}{share(None):>22}{share(0):>9}"
              f"{share(1):>9}{wall[name] / len(rows):9.3f}   {kwargs}")
    print("\n  two timings of one config differ by (|t1/t2 - 1|, every pair of a config's measurements):")
    for name in SETTINGS:
        gaps = sorted(_pair_gaps([[v for _, v in seen] for seen in gflops[name].values()]))
        if not gaps:  # one round: no config measured twice
            print(f"  {name:<8} no pairs (--rounds 2 or more)")
            continue
        print(f"  {name:<8} median {_quantile(gaps, 0.5):.1%}, 90% {_quantile(gaps, 0.9):.1%}, "
              f"95% {_quantile(gaps, 0.95):.1%}, max {gaps[-1]:.1%} ({len(gaps)} pairs)")
    load = window.finish()
    others = f"; other users' work beside it {load.measured:.1f} cores" if load.measured is not None else ""
    print(f"\n{_common.peak_memory_line()}; {_common.load_line()}{others}")


WINOGRAD_ARGS = (("TENSOR", (1, 512, 2, 2), "float32"), ("TENSOR", (512, 512, 3, 3), "float32"), (1, 1),
                 (1, 1, 1, 1), (1, 1), "NCHW", "NCHW", "float32")
WINOGRAD_CONFIGS = (6, 174)
#: ``measure.runner`` of ``jobs/resnet18.yaml``.
JOB_RUNNER = {"number": 10, "repeat": 3, "min_repeat_ms": 50, "timeout": 10}


def contention(rounds: int) -> None:
    """The ``--contention`` measurements (see the module doc)."""
    from bench_contention import start_busy, stop_busy  # noqa: PLC0415 - only this mode needs them

    from tunecli.engine.runtime import set_num_threads

    logging.getLogger("autotvm").setLevel(logging.ERROR)
    task = create("conv2d_NCHWc_winograd.x86", WINOGRAD_ARGS, "llvm")
    inputs = [MeasureInput(task.target, task, task.config_space.get(i)) for i in WINOGRAD_CONFIGS]
    print(f"bench_measure_stability --contention: configs {WINOGRAD_CONFIGS} of {task.name} "
          f"{WINOGRAD_ARGS[:2]}, {rounds} measurements each per condition; {_common.load_line()}")
    costs: dict[str, dict[int, list[float]]] = {}
    for condition in ("as is", "1 busy process", "1 thread"):
        busy = start_busy(1) if condition == "1 busy process" else []
        if condition == "1 thread":
            os.environ["TUNECLI_NUM_THREADS"] = "1"  # read by the runner's fresh worker
            set_num_threads(1)
        builder, runner = LocalBuilder(n_parallel=2, timeout=30), LocalRunner(**JOB_RUNNER)
        try:
            create_measure_batch(task, measure_option(builder, runner))
            built = builder.build(inputs)
            seen = costs[condition] = {i: [] for i in WINOGRAD_CONFIGS}
            for rnd in range(rounds):
                for k in (0, 1) if rnd % 2 == 0 else (1, 0):
                    seen[WINOGRAD_CONFIGS[k]].append(runner.run_one(inputs[k], built[k]).mean_cost)
        finally:
            builder.close()
            runner.close()
            stop_busy(busy)
    fastest = min(c for seen in costs.values() for values in seen.values() for c in values)
    near_title = f"within 1.5x of {fastest * 1e3:.3f}"
    print(f"  {'condition':<16}{'config':>7}{'fastest ms':>12}{'median ms':>11}{near_title:>24}")
    for condition, seen in costs.items():
        for index, values in seen.items():
            near = sum(c <= 1.5 * fastest for c in values)
            print(f"  {condition:<16}{'#' + str(index):>7}{min(values) * 1e3:12.3f}"
                  f"{_common.median(values) * 1e3:11.3f}{f'{near}/{len(values)}':>24}")
    print(f"\n{_common.load_line()}")


def _pair_gaps(per_config: list[list[float]]) -> list[float]:
    """``|t1 / t2 - 1|`` of every pair of measurements of one config (GFLOPS: t1 / t2 = g2 / g1)."""
    return [max(a, b) / min(a, b) - 1 for values in per_config
            for i, a in enumerate(values) for b in values[i + 1:] if min(a, b) > 0]


def _quantile(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]


if __name__ == "__main__":
    main()
