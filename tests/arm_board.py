"""An emulated AArch64 board for the tests: ``scripts/arm64-device.sh`` under qemu-user.

:func:`arm_root` builds (or reuses) the arm64 root once per test session and skips the test,
with the reason, where qemu, apt-get or the package registries cannot be had.
:func:`start_arm_server` starts ``tunecli server`` on the emulated board, registered with a
tracker; the server is a real aarch64 Python process (emulated), its measurement worker too.
"""

from __future__ import annotations

import os
import platform
import re
import select
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import tunecli
from tunecli import relay
from tunecli.engine.rpc.tracker import Tracker

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "arm64-device.sh"
#: Seconds allowed for building the root (first run: about a minute with a fast network).
BUILD_TIMEOUT = 1200
#: Seconds allowed for an emulated server to start (imports run under emulation).
START_TIMEOUT = 180
#: The job target of the emulated board.
AARCH64_NEON = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon"
#: TVM's target of an ARM board (tune_relay_arm.py's), with the arm_cpu keys.
ARM_BOARD = "llvm -device=arm_cpu -mtriple=aarch64-linux-gnu -mattr=+neon"
_built: dict[str, str] = {}


def tiny_network(batch: int = 1) -> tuple[tunecli.IRModule, dict]:
    """A network of two tunable operators (a 3x3 convolution, a dense layer) with seeded weights:
    ``conv2d → bias_add → relu → global_avg_pool2d → batch_flatten → dense → bias_add → softmax``
    on a ``[batch, 3, 16, 16]`` input named ``data``."""
    data = relay.var("data", shape=(batch, 3, 16, 16), dtype="float32")
    conv_w, conv_b = relay.var("conv_weight", shape=(8, 3, 3, 3)), relay.var("conv_bias", shape=(8,))
    fc_w, fc_b = relay.var("fc_weight", shape=(10, 8)), relay.var("fc_bias", shape=(10,))
    y = relay.nn.conv2d(data, conv_w, padding=(1, 1), channels=8, kernel_size=(3, 3))
    y = relay.nn.batch_flatten(relay.nn.global_avg_pool2d(relay.nn.relu(relay.nn.bias_add(y, conv_b))))
    y = relay.nn.softmax(relay.nn.bias_add(relay.nn.dense(y, fc_w, units=10), fc_b))
    rng = np.random.default_rng(0)
    shapes = {"conv_weight": (8, 3, 3, 3), "conv_bias": (8,), "fc_weight": (10, 8), "fc_bias": (10,)}
    params = {name: tunecli.nd.array(rng.standard_normal(shape).astype("float32"))
              for name, shape in shapes.items()}
    return tunecli.IRModule.from_expr(relay.Function(relay.analysis.free_vars(y), y)), params


def arm_root() -> str:
    """Build the arm64 root once per session (cached across sessions); skip when impossible."""
    if "root" in _built:
        return _built["root"]
    if "skip" in _built:
        pytest.skip(_built["skip"])
    reason = _unavailable()
    if reason is None:
        try:
            proc = subprocess.run(["bash", str(SCRIPT), "build"], capture_output=True, text=True,
                                  timeout=BUILD_TIMEOUT, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            reason = f"building the arm64 root took more than {BUILD_TIMEOUT} s"
        else:
            if proc.returncode == 0:
                _built["root"] = proc.stdout.strip().splitlines()[-1]
                return _built["root"]
            tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
            reason = f"the arm64 root could not be built (no access to Debian's archive or PyPI?): {tail}"
    _built["skip"] = reason
    pytest.skip(reason)


def _unavailable() -> str | None:
    """Why an emulated board cannot run here (None when it can)."""
    if platform.system() != "Linux":
        return "the emulated board needs Linux"
    if platform.machine() == "aarch64":
        return "this machine is AArch64 itself: no emulation to test"
    if not (shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")):
        return "qemu-aarch64-static is not installed (Debian: apt-get install qemu-user-static)"
    for tool in ("apt-get", "dpkg"):
        if not shutil.which(tool):
            return f"{tool} is not available to fetch the arm64 packages"
    return None


class ArmServer:
    """``tunecli server`` running on the emulated board (in its own process group)."""

    def __init__(self, popen: subprocess.Popen, port: int, key: str, output: list[str]) -> None:
        self.popen = popen
        self.port = port
        self.key = key
        self.output = output  #: what it printed (logging included), read by a thread
        if popen.stdout is not None:
            threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.output.append(line)

    def kill(self) -> None:
        """SIGKILL the server process only (its worker is left to notice), like a board losing power."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(30)

    def stop(self) -> None:
        """Kill the server and its worker processes."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait(30)


def start_arm_server(tracker: Tracker, key: str) -> ArmServer:
    """Start ``tunecli server --tracker 127.0.0.1:PORT --key KEY`` on the emulated board.

    Returns once the tracker lists it as a free device of ``key``.
    """
    tracker_port = tracker.port
    arm_root()
    env = dict(os.environ)
    env.pop("TUNECLI_RPC_TOKEN", None)
    popen = subprocess.Popen(
        ["bash", str(SCRIPT), "server", "--tracker", f"127.0.0.1:{tracker_port}", "--key", key,
         "--port", "20000", "--port-end", "30000"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, env=env,
        start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT
    seen = []
    assert popen.stdout is not None
    while time.monotonic() < deadline and popen.poll() is None:
        if not select.select([popen.stdout], [], [], 1.0)[0]:
            continue
        line = popen.stdout.readline()
        seen.append(line)
        match = re.search(r"listening on [\d.]+:(\d+)", line)
        if match:
            server = ArmServer(popen, int(match.group(1)), key, seen)
            while time.monotonic() < deadline and popen.poll() is None:
                if tracker.summary()["queue_info"].get(key, {}).get("free", 0) >= 1:
                    return server
                time.sleep(0.1)
            break
    ArmServer(popen, 0, key, seen).stop()
    raise AssertionError(f"the emulated server did not start within {START_TIMEOUT} s: {''.join(seen)!r}")
