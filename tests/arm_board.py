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

import pytest

from tunecli.engine.rpc.tracker import Tracker

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "arm64-device.sh"
#: Seconds allowed for building the root (first run: about a minute with a fast network).
BUILD_TIMEOUT = 1200
#: Seconds allowed for an emulated server to start (imports run under emulation).
START_TIMEOUT = 180
#: The job target of the emulated board.
AARCH64_NEON = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon"
_built: dict[str, str] = {}


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
