"""The command line of ``scripts/gpu_check.py``: the stages in order, the table after each."""

from __future__ import annotations

import argparse
import os
import platform
import random
import time
from collections.abc import Callable
from pathlib import Path

from . import configs, faults, network, prereq, remote, tuning
from .context import Context
from .table import Table

#: name, function, seconds it takes on an H200 (a stage starts only if that much of the budget is left),
#: in the order of what matters most: the seed's conv2d against cuDNN right after the short checks.
STAGES: list[tuple[str, Callable[[Context], None], float]] = [
    ("prerequisites", prereq.run, 10),
    ("smoke", configs.run_smoke, 60),
    ("faults", faults.run, 30),
    ("tuning", tuning.run, 150),
    ("templates", configs.run_templates, 80),
    ("network", network.run, 80),
    ("rpc", remote.run, 40),
]


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gpu_check.py",
                                     description="GPU checks in stages, a table after each")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "gpu_check_out"),
                        help="where the table (gpu_check.md, gpu_check.json) and logs go (default $OUT)")
    parser.add_argument("--dry-run", action="store_true", help="no GPU: every stage up to the launch")
    parser.add_argument("--budget-s", type=float, default=450.0,
                        help="start no stage that would end after this many seconds")
    parser.add_argument("--stages", default=",".join(s[0] for s in STAGES),
                        help="comma-separated stages to run, in the fixed order")
    parser.add_argument("--trials", type=int, default=200, help="tuning trials of the seed's conv2d")
    parser.add_argument("--configs", type=int, default=8, help="random configs that build, per GPU template")
    parser.add_argument("--smoke-configs", type=int, default=5,
                        help="random seed-conv configs that build, in the smoke stage")
    parser.add_argument("--rpc-trials", type=int, default=8, help="configs measured through the RPC server")
    parser.add_argument("--seed", type=int, default=None, help="seed of the random configs (default: fresh)")
    parser.add_argument("--arch", default="sm_90",
                        help="SM architecture of a dry run (a GPU's own otherwise)")
    opts = parser.parse_args(argv)
    unknown = set(opts.stages.split(",")) - {s[0] for s in STAGES}
    if unknown:
        parser.error(f"unknown stages {sorted(unknown)}; the stages are {[s[0] for s in STAGES]}")
    return opts


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    table = Table(opts.out, {"mode": "dry run" if opts.dry_run else "GPU", "host": platform.node(),
                             "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())})
    ctx = Context(opts.out, opts.dry_run, opts.budget_s, table, opts, arch=opts.arch,
                  rng=random.Random(opts.seed))
    table.write()
    wanted = opts.stages.split(",")
    if "prerequisites" not in wanted:
        prereq.gpu(ctx)  # the GPU and its architecture, which every stage needs
    for name, stage, seconds in STAGES:
        if name not in wanted:
            continue
        if name != "prerequisites" and not ctx.dry_run and ctx.device is None:
            ctx.skip(name, "stage", "no usable GPU (see prerequisites)")
        elif ctx.left < seconds:
            ctx.skip(name, "stage",
                     f"{ctx.left:.0f} s of the budget left, the stage takes about {seconds:.0f} s")
        else:
            stage(ctx)
        table.meta["arch"] = ctx.arch
        table.meta["seconds"] = round(ctx.elapsed, 1)
        table.finish_stage(name)
    print("\n" + table.markdown(), flush=True)
    return 1 if table.failed else 0
