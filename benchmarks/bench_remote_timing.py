"""Can remote timings be trusted: a network served by a device server on 127.0.0.1 and timed with
the remote ``time_evaluator`` against the same library run and timed in this process.

A built-in network (ResNet-18 by default, 224×224, batch 1, fp32, fallback or pre-tuned configs)
is built for this machine and exported as a ``.tar``; a tracker and a ``tunecli server`` (its own
process, its network in its worker process) serve it.  Rounds alternate: the in-process library
timed with ``module.module.time_evaluator("run", cpu, number, repeat=1)``, then the remote one
with the same settings on the server's CPU, a pause (``--settle``) before each.  Printed: each
side's median of ``--rounds`` rounds and the remote/local ratio (the issue's target: within 5%).

Usage::

    .venv/bin/python benchmarks/bench_remote_timing.py --quick     # 5 rounds
    .venv/bin/python benchmarks/bench_remote_timing.py --network mobilenet_v2 --rounds 21
    TUNECLI_NUM_THREADS=1 .venv/bin/python benchmarks/bench_remote_timing.py   # both sides on 1 thread

The server and its worker inherit the thread count (``TUNECLI_NUM_THREADS``) of this process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import _common  # before numpy: unsets the OpenBLAS variables
import numpy as np

import tunecli
from tunecli.contrib import graph_executor
from tunecli.engine.graph.build_module import build
from tunecli.engine.job.network_models import MODELS
from tunecli.engine.rpc.device_session import request_remote
from tunecli.engine.rpc.tracker import Tracker
from tunecli.engine.runtime.threads import get_num_threads

SERVER = """
import sys
from tunecli.engine.rpc.server import run_server
run_server(("127.0.0.1", int(sys.argv[1])), "bench", host="127.0.0.1", port=0, port_end=0, token="",
           on_ready=lambda host, port: print(port, flush=True))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--network", default="resnet-18")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=10)
    parser.add_argument("--settle", type=float, default=0.5, help="seconds of pause before each timing")
    parser.add_argument("--quick", action="store_true", help="5 rounds")
    args = parser.parse_args()
    rounds = 5 if args.quick else args.rounds

    model = MODELS[args.network]
    mod, params = model.load(1, model.image_shape, "float32")
    shape = (1, *model.image_shape)
    with tunecli.transform.PassContext(opt_level=3):
        lib = build(mod, target="llvm", params=params)
    x = np.random.default_rng(0).uniform(size=shape).astype("float32")
    tmp = tempfile.mkdtemp(prefix="bench_remote_")
    path = os.path.join(tmp, "net.tar")
    lib.export_library(path)

    local = graph_executor.GraphModule(tunecli.runtime.load_module(path)["default"](tunecli.cpu(0)))
    local.set_input(model.input_name, x)
    tracker = Tracker("127.0.0.1", 0, 0, token="")
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(tracker.port)], stdout=subprocess.PIPE,
                              text=True, stdin=subprocess.DEVNULL)
    try:
        server.stdout.readline()
        deadline = time.monotonic() + 60
        while tracker.summary()["queue_info"].get("bench", {}).get("free", 0) < 1:
            if time.monotonic() > deadline:
                raise SystemExit("the server did not register with the tracker")
            time.sleep(0.1)
        remote = request_remote("bench", "127.0.0.1", tracker.port, timeout=0)
        remote.upload(path)
        dev = remote.cpu(0)
        module = graph_executor.GraphModule(remote.load_module("net.tar")["default"](dev))
        module.set_input(model.input_name, x)
        np.testing.assert_allclose(_output(module), _output(local), rtol=1e-5, atol=1e-6)
        local_timer = local.module.time_evaluator("run", tunecli.cpu(0), number=args.number, repeat=1)
        remote_timer = module.module.time_evaluator("run", dev, number=args.number, repeat=1)
        local_times, remote_times = [], []
        for _ in range(rounds):
            time.sleep(args.settle)
            local_times.append(local_timer().mean)
            time.sleep(args.settle)
            remote_times.append(remote_timer().mean)
        remote.close()
    finally:
        server.kill()
        server.wait(10)
        tracker.stop()
    lo, re = _common.median(local_times), _common.median(remote_times)
    print(f"{args.network}, {get_num_threads()} threads: in-process {lo * 1e3:.3f} ms, "
          f"remote {re * 1e3:.3f} ms, remote/local {re / lo:.3f} "
          f"(medians of {rounds} rounds of {args.number} runs)")


def _output(module: graph_executor.GraphModule) -> np.ndarray:
    module.run()
    return module.get_output(0).numpy()


if __name__ == "__main__":
    main()
