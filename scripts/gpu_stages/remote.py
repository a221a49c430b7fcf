"""Stage ``rpc``: ``tunecli server --key h200`` on this machine measures for ``RPCRunner``.

A tracker in this process, the server as its own process (the command line a user runs),
registered on 127.0.0.1; it must say it serves the GPU, and ``RPCRunner`` measures
``--rpc-trials`` random configs of ``conv2d_nchw.cuda`` there with ``check_correctness``.  In a
dry run the server says it has no GPU and the tuner is refused with one error naming that.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any

from tunecli import autotvm
from tunecli.engine.rpc.tracker import Tracker
from tunecli.engine.task.task import create

from .configs import TEMPLATES
from .context import CheckFailed, Context
from .kernels import ROOT

STAGE = "rpc"
KEY = "h200"
TEMPLATE = "conv2d_nchw.cuda"
LAUNCH = "import sys; from tunecli.commands import main; sys.argv[0] = 'tunecli'; main()"


def start_server(tracker_port: int) -> tuple[subprocess.Popen, list[str]]:
    """``tunecli server --key h200``; its first two lines (listening, serving) within 60 s."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-c", LAUNCH, "server", "--key", KEY, "--tracker",
                             f"127.0.0.1:{tracker_port}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=ROOT, env=env)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x.strip()) for x in proc.stdout], daemon=True).start()
    said: list[str] = []
    deadline = time.monotonic() + 60
    while len(said) < 2 and time.monotonic() < deadline and proc.poll() is None:
        try:
            said.append(lines.get(timeout=1))
        except queue.Empty:
            pass
    return proc, said


def run(ctx: Context) -> None:
    tracker = Tracker("127.0.0.1", 0, 0, token="")
    server = None
    try:
        with ctx.check(STAGE, f"tunecli server --key {KEY}") as r:
            server, said = start_server(tracker.port)
            r.numbers = "; ".join(said) or f"no output (exit status {server.poll()})"
            serving = next((x for x in said if x.startswith("serving")), "")
            if not serving or (ctx.device is not None and "GPU" not in serving):
                raise CheckFailed(f"the server said {r.numbers!r}")
            if not registered(tracker, 30.0):
                raise CheckFailed(f"the server is not in the tracker's queue after 30 s: {tracker.summary()}")
        with ctx.check(STAGE, "RPCRunner on 127.0.0.1") as r:
            r.numbers = measure(ctx, tracker.port)
    finally:
        if server is not None:
            server.terminate()
            server.wait(10)
        tracker.stop()


def registered(tracker: Tracker, seconds: float) -> bool:
    """Whether a server of the key is in the tracker's queue within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if KEY in str(tracker.summary().get("queue_info", {})):
            return True
        time.sleep(0.2)
    return False


def measure(ctx: Context, port: int) -> str:
    task = create(TEMPLATE, args=TEMPLATES[TEMPLATE][0], target=ctx.target)
    option = autotvm.measure_option(
        builder=autotvm.LocalBuilder(timeout=20),
        runner=autotvm.RPCRunner(KEY, "127.0.0.1", port, number=20, repeat=3, timeout=20,
                                 check_correctness=True))
    results: list[Any] = []
    try:
        autotvm.tuner.RandomTuner(task).tune(n_trial=ctx.options.rpc_trials, measure_option=option,
                                             callbacks=[lambda _t, _i, res: results.extend(res)])
    except Exception as err:  # noqa: BLE001 - without a GPU the refusal is the expected answer
        if ctx.device is None and "GPU" in str(err):
            return f"refused without a GPU: {type(err).__name__}: {str(err)[:200]}"
        raise
    good = [x for x in results if int(x.error_no) == 0]
    kinds = sorted({autotvm.MeasureErrorNo(int(x.error_no)).name for x in results})
    text = f"{len(good)} of {len(results)} configs measured on the server ({kinds})"
    if ctx.device is None:
        if good:
            raise CheckFailed(f"a server without a GPU measured: {text}")
        return text
    if not good or "WRONG_ANSWER" in kinds:
        raise CheckFailed(text)
    best = min(min(x.costs) for x in good)
    return f"{text}; best {best * 1e6:.1f} us"
