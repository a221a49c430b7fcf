"""TVM's ``TVM_NUM_THREADS`` sets the thread count of parallel loops, as tunecli's own
``TUNECLI_NUM_THREADS`` does (which wins when both are set); a bad value is an ArgumentError
naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = ("from tunecli.engine.runtime import get_num_threads\n"
          "print(get_num_threads())\n")


def threads_with(env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("TVM_NUM_THREADS", "TUNECLI_NUM_THREADS")}
    return subprocess.run([sys.executable, "-c", SCRIPT], env={**base, **env}, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize(("env", "threads"), [
    ({"TVM_NUM_THREADS": "3"}, "3"),
    ({"TVM_NUM_THREADS": "3", "TUNECLI_NUM_THREADS": "2"}, "2"),
])
def test_the_thread_count_comes_from_the_environment(env: dict[str, str], threads: str) -> None:
    run = threads_with(env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == threads


def test_a_bad_tvm_num_threads_is_named() -> None:
    run = threads_with({"TVM_NUM_THREADS": "zero"})
    assert run.returncode != 0
    assert "TVM_NUM_THREADS='zero' must be a positive integer" in run.stderr
