"""``relay.build`` time: a first build with an empty kernel cache (cold), then a second build of the
same network in a new process (the cache warm), and optionally a serial uncached baseline; each
with the building process's peak memory and that of its largest build child, the CPU seconds of
the build (its process and build processes: less sensitive to other load than the wall time) and
the load average when it started.

Each build runs in a fresh Python process (``--child``), so imports and the cache of the process
never count and the second build is what a user's next run sees; the time printed is the
``relay.build`` call alone (``PassContext(opt_level=3)``, target ``--target``, the pre-tuned
packages configuring it as they do for a user).  Each network gets a new temporary cache unless
``--cache-dir`` names one.  Networks (default: ``resnet-18 bert-base``): the built-in
``resnet-18``, ``mobilenet``, ``mobilenet_v2``, ``squeezenet`` (224x224, batch 1), ``bert-base``
(sequence 128, batch 1), or an ONNX file (``--onnx model.onnx --shape input_ids=1,128``).

Usage::

    .venv/bin/python benchmarks/bench_build_time.py                      # ResNet-18 and BERT-base
    .venv/bin/python benchmarks/bench_build_time.py --network bert-base
    .venv/bin/python benchmarks/bench_build_time.py --network mobilenet --baseline
    .venv/bin/python benchmarks/bench_build_time.py --onnx bert.onnx --shape input_ids=1,128 \\
        --dtype input_ids=int64
    TUNECLI_BUILD_JOBS=1 .venv/bin/python benchmarks/bench_build_time.py  # builds in one process
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

import _common

BUILT_IN = ("resnet-18", "bert-base", "mobilenet", "mobilenet_v2", "squeezenet")


def _load(args: argparse.Namespace) -> tuple[Any, dict]:
    if args.onnx:
        import onnx

        from tunecli.engine.graph.frontend.onnx import from_onnx

        shape = {k: [int(d) for d in v.split(",")] for k, v in (s.split("=", 1) for s in args.shape)}
        dtype = dict(d.split("=", 1) for d in args.dtype) if args.dtype else "float32"
        return from_onnx(onnx.load(args.onnx), shape, dtype)
    from tunecli.engine.graph.models import bert, mobilenet, mobilenet_v2, resnet, squeezenet

    loaders = {"resnet-18": lambda: resnet.get_workload(num_layers=18, batch_size=1),
               "bert-base": lambda: bert.get_workload(batch_size=1, seq_len=128),
               "mobilenet": lambda: mobilenet.get_workload(batch_size=1),
               "mobilenet_v2": lambda: mobilenet_v2.get_workload(batch_size=1),
               "squeezenet": lambda: squeezenet.get_workload(batch_size=1)}
    return loaders[args.network]()


def child(args: argparse.Namespace) -> None:
    """Build once in this process and print one JSON line: seconds, kernels, peak memory."""
    from tunecli.engine.graph.build_module import build
    from tunecli.engine.graph.passes import PassContext

    mod, params = _load(args)
    start, cpu = time.perf_counter(), _cpu_seconds()
    with PassContext(opt_level=3):
        lib = build(mod, args.target, params=params)
    seconds, cpu = time.perf_counter() - start, _cpu_seconds() - cpu
    own, children = _common.peak_memory_mib()
    print(json.dumps({"seconds": seconds, "cpu": cpu, "kernels": len(lib.kernels), "peak_mib": own,
                      "child_peak_mib": children}))


def _cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (the build processes)."""
    own, done = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + done.ru_utime + done.ru_stime


def run_child(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    load = os.getloadavg()[0]
    cmd = [sys.executable, __file__, "--child", "--network", args.network, "--target", args.target]
    if args.onnx:
        cmd += ["--onnx", args.onnx, "--shape", *args.shape]
        cmd += ["--dtype", *args.dtype] if args.dtype else []
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the build failed:\n{done.stderr}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "load": load}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", nargs="+", default=["resnet-18", "bert-base"], choices=BUILT_IN)
    parser.add_argument("--onnx", help="build this ONNX model instead of a built-in network")
    parser.add_argument("--shape", nargs="*", default=[], help="input shapes of --onnx: name=1,128")
    parser.add_argument("--dtype", nargs="*", default=[], help="input dtypes of --onnx: name=int64")
    parser.add_argument("--target", default="llvm")
    parser.add_argument("--cache-dir", help="the kernel cache to use (default: a new temporary one)")
    parser.add_argument("--baseline", action="store_true",
                        help="also build without the cache in one process "
                             "(TUNECLI_NO_CACHE=1, TUNECLI_BUILD_JOBS=1)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.network = args.network[0]
        child(args)
        return
    print(f"build processes: {os.environ.get('TUNECLI_BUILD_JOBS', 'the usable cores')}")
    for network in [None] if args.onnx else args.network:
        args.network = network
        bench(args)


def bench(args: argparse.Namespace) -> None:
    """The rows of one network."""
    name = args.onnx or args.network
    print(f"\nrelay.build of {name} for {args.target!r}; {_common.load_line()}")
    with tempfile.TemporaryDirectory(prefix="tunecli-build-cache-") as tmp:
        env = {**os.environ, "TUNECLI_CACHE_DIR": args.cache_dir or tmp}
        env.pop("TUNECLI_NO_CACHE", None)
        rows = []
        if args.baseline:
            rows.append(("uncached, one process", run_child(args, {**env, "TUNECLI_NO_CACHE": "1",
                                                                   "TUNECLI_BUILD_JOBS": "1"})))
        first = "cold: first build (cache empty)" if not args.cache_dir else "first build"
        rows.append((first, run_child(args, env)))
        rows.append(("warm: second build (new process)", run_child(args, env)))
    print(f"{'':34s} {'seconds':>8s} {'CPU s':>6s} {'kernels':>8s} {'peak MiB':>9s} {'child peak MiB':>15s} "
          f"{'load':>5s}")
    for label, r in rows:
        print(f"{label:34s} {r['seconds']:8.2f} {r['cpu']:6.2f} {r['kernels']:8d} {r['peak_mib']:9.0f} "
              f"{r['child_peak_mib']:15.0f} {r['load']:5.1f}")


if __name__ == "__main__":
    main()
