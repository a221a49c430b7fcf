"""A model job's network untuned and under tuning logs, timed interleaved in one process.

``tunecli apply`` times a tuned build beside the untuned one in a few rounds; this times the untuned
build and one build per log (``apply_history_best``) round by round in this process, at 1 and 2
threads, each side warmed up and timed as the fastest of 3 batches of 5 runs per round, and prints
per build the fastest and the median round with untuned/build speed ratios (above 1: the build is
faster than the untuned one).  Used for issue 27 item 1 (a short tune never slower): a log holding
only the untuned records should time as the untuned build, within the machine's noise.

Two things tell a build's own difference from the timing's: each log's line says which tasks the
log configures otherwise than the untuned build (``job.network_revert.differing_tasks``) and
whether its graph and kernels are the untuned build's byte for byte; and ``untuned again``, a
second graph executor of the untuned build itself, is timed as one more contender (an A/A
control: its ratio is what identical code reads).  The contenders take turns in an order that
rotates each round, so none always runs first.

Usage: ``.venv/bin/python benchmarks/bench_tuned_vs_untuned.py JOB LOG [LOG ...] [--rounds 15]``
"""

from __future__ import annotations

import argparse
import os
import time

import _common
import numpy as np

from tunecli.engine.job.network import build_network, load_network
from tunecli.engine.job.network_revert import differing_tasks
from tunecli.engine.job.spec import load_job
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.runtime import set_num_threads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job")
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--rounds", type=int, default=15)
    opts = parser.parse_args()
    job = load_job(opts.job)
    network = load_network(job)
    untuned = build_network(network, job.target)
    builds = {"untuned": untuned, "untuned again": untuned}
    for log in opts.logs:
        history = ApplyHistoryBest(log)
        built = builds[os.path.basename(log)] = build_network(network, job.target, history)
        differing = differing_tasks(built, untuned, history, job.target)
        same = built.graph == untuned.graph and all(
            k.obj == getattr(untuned.kernels.get(n), "obj", None) for n, k in built.kernels.items())
        print(f"{os.path.basename(log)}: {len(differing)} task(s) configured otherwise than untuned "
              f"({', '.join(str(w[0]) for w in differing[:4])}{' ...' if len(differing) > 4 else ''}); "
              f"graph and kernels {'the untuned build' if same else 'differ'}")
    modules = {}
    for name, lib in builds.items():
        module = lib["default"](None)
        for key, (shape, dtype) in network.inputs.items():
            module.set_input(key, np.random.default_rng(0).uniform(-1, 1, shape).astype(dtype))
        modules[name] = module
        print(f"{name}: {len(lib.kernels)} kernels; {lib.summary.line()[:100]}")
    print(f"{network.label}, {opts.rounds} rounds; {_common.load_line()}")
    names = list(modules)
    for threads in (1, 2):
        set_num_threads(threads)
        times: dict[str, list[float]] = {name: [] for name in modules}
        for turn in range(opts.rounds):
            for name in names[turn % len(names):] + names[:turn % len(names)]:
                module = modules[name]
                time.sleep(0.1)
                _common.warm_up(module.run)
                times[name].append(min(_common.batch_seconds(module.run, 5)[0] for _ in range(3)))
        base = times["untuned"]
        for name, seen in times.items():
            print(f"  threads={threads} {name:<24} fastest {min(seen) * 1e3:7.3f} ms  median "
                  f"{_common.median(seen) * 1e3:7.3f} ms  untuned/this {min(base) / min(seen):5.3f} "
                  f"(fastest) {_common.median(base) / _common.median(seen):5.3f} (median)")
    print(_common.load_line())


if __name__ == "__main__":
    main()
