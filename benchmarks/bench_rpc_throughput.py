"""Throughput of measuring small kernels through the RPC stack vs. measuring them directly.

Measures ``--n`` vector-add kernels (compiled here with llvmlite) three ways and prints trials
per minute and the ratio to direct measurement:

* direct: one persistent measurement worker in this process (what a LocalRunner does);
* 1 server / 2 servers: an in-process tracker and device servers on 127.0.0.1, driven by
  :class:`tunecli.engine.rpc.rpc_runner.RPCRunner` (each server has its own worker process).

With ``--min-repeat-ms 0`` the kernels take microseconds, so the numbers show the per-trial
overhead of the protocol; with a few milliseconds per repeat they show how well a batch
spreads over devices (on a machine with at least two free cores).

Usage: ``python benchmarks/bench_rpc_throughput.py [--n 40] [--min-repeat-ms 5]``
"""

from __future__ import annotations

import argparse
import time

import llvmlite.binding as llvm

from tunecli.engine.measure.builder import BuildResult
from tunecli.engine.measure.result import MeasureInput
from tunecli.engine.measure.timing import MEASURE_FUNC, MeasureRequest, measure_in_worker
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.measure.worker import Worker
from tunecli.engine.rpc.rpc_runner import RPCRunner
from tunecli.engine.rpc.server import Server
from tunecli.engine.rpc.tracker import Tracker

N = 4096
IR = r"""
define void @vadd(ptr %a, ptr %b, ptr %c) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%n, %loop]
  %pa = getelementptr float, ptr %a, i64 %i
  %pb = getelementptr float, ptr %b, i64 %i
  %pc = getelementptr float, ptr %c, i64 %i
  %x = load float, ptr %pa
  %y = load float, ptr %pb
  %z = fadd float %x, %y
  store float %z, ptr %pc
  %n = add i64 %i, 1
  %d = icmp eq i64 %n, 4096
  br i1 %d, label %exit, label %loop
exit:
  ret void
}
"""
ARG_SPECS = (((N,), "float32"),) * 3


def compile_vadd() -> bytes:
    """Compile the vector add to a host object file."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    machine = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        cpu=llvm.get_host_cpu_name(), opt=2, reloc="pic")
    module = llvm.parse_assembly(IR)
    module.verify()
    return machine.emit_object(module)


def direct(obj: bytes, n: int, min_repeat_ms: float) -> float:
    """Seconds to measure ``n`` kernels one after another in one local worker."""
    worker = Worker(preload=(MEASURE_FUNC.partition(":")[0],))
    request = MeasureRequest(obj, "vadd", ARG_SPECS, TimingOptions(min_repeat_ms=min_repeat_ms, timeout=30.0))
    try:
        measure_in_worker(worker, request)  # start-up is not part of the rate
        start = time.perf_counter()
        for _ in range(n):
            reply = measure_in_worker(worker, request)
            assert reply.error_no == 0, reply
        return time.perf_counter() - start
    finally:
        worker.close()


def through_rpc(obj: bytes, n: int, min_repeat_ms: float, n_servers: int) -> float:
    """Seconds to measure ``n`` kernels with an RPCRunner over ``n_servers`` local servers."""
    tracker = Tracker("127.0.0.1", 0, 0, token="")
    servers = [Server("127.0.0.1", 0, 0, key="bench", tracker_addr=("127.0.0.1", tracker.port),
                      token="", ping_period=0.5).start() for _ in range(n_servers)]
    try:
        while tracker.summary()["queue_info"].get("bench", {}).get("free", 0) < n_servers:
            time.sleep(0.05)
        runner = RPCRunner("bench", "127.0.0.1", tracker.port, token="", min_repeat_ms=min_repeat_ms,
                           cooldown_interval=0)
        build = BuildResult(obj, "vadd", ARG_SPECS, 0.0, (2,))
        runner.run([MeasureInput("llvm", None, 0)] * n_servers, [build] * n_servers)  # warm workers
        start = time.perf_counter()
        results = runner.run([MeasureInput("llvm", None, i) for i in range(n)], [build] * n)
        elapsed = time.perf_counter() - start
        assert all(r.error_no == 0 for r in results), results
        return elapsed
    finally:
        for server in servers:
            server.stop()
        tracker.stop()


def main() -> None:
    """Run the three measurements and print trials per minute and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="kernels per measurement run")
    parser.add_argument("--min-repeat-ms", type=float, default=5.0, help="min_repeat_ms of each trial")
    args = parser.parse_args()
    obj = compile_vadd()
    base = direct(obj, args.n, args.min_repeat_ms)
    rows = [("direct (local worker)", base)]
    for count in (1, 2):
        rows.append((f"RPC, {count} server{'s' if count > 1 else ''}",
                     through_rpc(obj, args.n, args.min_repeat_ms, count)))
    print(f"{args.n} trials, min_repeat_ms={args.min_repeat_ms:g}")
    for name, seconds in rows:
        print(f"{name:<24} {60.0 * args.n / seconds:10.1f} trials/min   x{base / seconds:5.2f} vs direct")


if __name__ == "__main__":
    main()
