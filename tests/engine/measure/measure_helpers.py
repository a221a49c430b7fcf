"""Functions the worker tests run in child processes (importable by name there)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

_SPIN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass"


def square(x: float) -> float:
    """x * x."""
    return x * x


def pid(_: object) -> int:
    """Process id of the child."""
    return os.getpid()


def boom(message: str) -> None:
    """Raise ValueError(message)."""
    raise ValueError(message)


def segfault(_: object) -> None:
    """Die the way a crashing kernel does."""
    os.kill(os.getpid(), signal.SIGSEGV)


def nap(seconds: float) -> float:
    """Sleep, then return the seconds slept."""
    time.sleep(seconds)
    return seconds


def spin(seconds: float) -> float:
    """Keep a core busy for ``seconds`` (wall clock); return the CPU seconds this process spent."""
    start, end = time.process_time(), time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return time.process_time() - start


def spin_elsewhere(seconds: float, count: int) -> None:
    """Start ``count`` processes that keep a core busy for ``seconds`` and are not this process's
    descendants (their parent exits at once): another user's work, as far as this process can tell."""
    loops = " ".join(f"{sys.executable} -c '{_SPIN.format(s=seconds)}' &" for _ in range(count))
    subprocess.run(["sh", "-c", loops], check=True)


def spin_here(seconds: float) -> subprocess.Popen:
    """A child process that keeps a core busy for ``seconds``."""
    return subprocess.Popen([sys.executable, "-c", _SPIN.format(s=seconds)])


def unpicklable(_: object) -> object:
    """Return something that cannot be sent back."""
    return lambda: None


def rss_kib(_: object) -> int:
    """Resident memory of the child in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def _refuse() -> None:
    raise RuntimeError("refusing to be unpickled")


class Unloadable:
    """Pickles fine, but unpickling it raises."""

    def __reduce__(self):
        return (_refuse, ())


def unloadable(_: object) -> Unloadable:
    """Return something that is sent but cannot be received."""
    return Unloadable()
