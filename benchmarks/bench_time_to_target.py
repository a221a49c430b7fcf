"""Trials and minutes to a target: a network tuned from nothing until it runs at ``--target`` times
onnxruntime's time (issue 30: ResNet-18 to 0.9x end to end).

The pre-tuned packages are off (``TUNECLI_TOPHUB=NONE``), so the network starts from fallback
configs, as one tunecli has never seen would.  The job of ``--network`` (its convolutions, Winograd
forms and dense layers, XGB, the gradient task scheduler) is tuned by ``tunecli tune`` in steps of
growing budget (``--steps``; each step resumes the log of the one before), and after each step the
network is built under ``apply_history_best`` of the log and timed against onnxruntime at 1 and 2
threads, interleaved (``bench_network.bench``, medians).  A step's line gives the trials in the log,
the minutes spent tuning so far, and ours/onnxruntime; the run stops at the first step where every
thread count is at or below the target.  Step 0 is the untuned build.

Usage::

    .venv/bin/python benchmarks/bench_time_to_target.py                 # ResNet-18, 0.9x
    .venv/bin/python benchmarks/bench_time_to_target.py --steps 36 --quick --image 64
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import _common  # before numpy: unsets the OpenBLAS variables
import bench_network
import yaml

from tunecli.engine.log import tophub
from tunecli.engine.log.record import load_from_file

ROOT = Path(__file__).resolve().parents[1]


def write_job(directory: Path, network: str, budget: int, image: int) -> Path:
    """A job file tuning ``network``'s convolutions and dense layers with ``budget`` trials."""
    job = {
        "name": f"{network}-to-target",
        "target": "llvm",
        "model": {"name": network, "batch_size": 1, "image_shape": [3, image, image]},
        "ops": ["conv2d", "contrib_conv2d_NCHWc_winograd", "dense"],
        "tuner": {"kind": "xgb", "budget": budget, "seed": 0},
        "measure": {"builder": {"timeout": 30},
                    "runner": {"number": 10, "repeat": 3, "min_repeat_ms": 50, "timeout": 10}},
    }
    path = directory / f"budget{budget}.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def tune(job: Path, log: Path) -> float:
    """``tunecli tune job --log log`` with the packages off; seconds it took."""
    env = dict(os.environ, **{tophub.ENV_VAR: tophub.DISABLED})
    start = time.perf_counter()
    command = [str(Path(sys.executable).with_name("tunecli")), "tune", str(job), "--log", str(log), "--quiet"]
    subprocess.run(command, check=True, env=env, cwd=ROOT)
    return time.perf_counter() - start


def trials_in(log: Path) -> int:
    """The records in ``log`` (0 when it does not exist)."""
    return sum(1 for _ in load_from_file(str(log))) if log.exists() else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default="resnet-18", choices=sorted(bench_network.MODELS))
    parser.add_argument("--target", type=float, default=0.9, help="ours/onnxruntime to reach")
    parser.add_argument("--steps", default="120,240,480,960",
                        help="total trial budgets, comma-separated, tuned in turn")
    parser.add_argument("--image", type=int, default=224, help="image height and width")
    parser.add_argument("--quick", action="store_true", help="3 rounds of 2 runs per timing")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--number", type=int, default=5)
    parser.add_argument("--settle", type=float, default=0.5)
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.number, args.settle = 3, 2, 0.2
    args.graph_log, args.profile = None, False
    model = bench_network.MODELS[args.network]
    if args.image != model.image_shape[1]:  # bench_network builds the registry's shape: this run's one
        bench_network.MODELS[args.network] = replace(model, image_shape=(model.image_shape[0], args.image,
                                                                         args.image))
    print(_common.load_line())
    rows = []
    tuned_s = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "tune.log"
        for budget in [0, *(int(b) for b in args.steps.split(","))]:
            if budget:
                tuned_s += tune(write_job(Path(tmp), args.network, budget, args.image), log)
            args.log = str(log) if log.exists() else None
            ratios = bench_network.bench(args.network, False, args)
            rows.append((budget, trials_in(log), tuned_s, ratios))
            print(f"step budget {budget}: {rows[-1][1]} trials, {tuned_s / 60:.1f} min tuning, "
                  f"ours/onnxruntime {ratios[1]:.2f}x (1 thread) {ratios[2]:.2f}x (2 threads)", flush=True)
            if ratios[1] <= args.target and ratios[2] <= args.target:
                break
    print(f"{'budget':>7} {'trials':>7} {'minutes':>8} {'1 thread':>9} {'2 threads':>10}  "
          f"({args.network}, no package, target {args.target}x onnxruntime)")
    for budget, trials, seconds, ratios in rows:
        print(f"{budget:>7} {trials:>7} {seconds / 60:>8.1f} {ratios[1]:>8.2f}x {ratios[2]:>9.2f}x")
    reached = [row for row in rows if row[3][1] <= args.target and row[3][2] <= args.target]
    print(f"target reached after {reached[0][1]} trials, {reached[0][2] / 60:.1f} min of tuning" if reached
          else "target not reached within the steps run")
    print(_common.peak_memory_line())


if __name__ == "__main__":
    main()
