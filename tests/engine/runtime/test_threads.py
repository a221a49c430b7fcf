"""The thread count of parallel loops (set_num_threads, TUNECLI_NUM_THREADS) and where it takes effect."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tunecli.engine.runtime import get_num_threads, set_num_threads
from tunecli.errors import ArgumentError

THREADS_SCRIPT = r'''
import os
import numpy as np
from tunecli.engine.build import build
from tunecli.engine.runtime import get_num_threads, set_num_threads
from tunecli.engine.ir import Buffer, BufferLoad, BufferStore, For, PrimFunc, Var, const

assert get_num_threads() == 3, get_num_threads()  # from TUNECLI_NUM_THREADS
o = Buffer("o", (64,), "float32")
i = Var("i")
body = For(i, 0, 64, "parallel", BufferStore(o, BufferLoad(o, [i]) + const(1.0), [i]))
mod = build(PrimFunc("par", [o], body))
tasks = lambda: len(os.listdir("/proc/self/task"))
before = tasks()
r = np.zeros(64, "float32")
set_num_threads(1)
mod(r)
one = tasks()
set_num_threads(3)
mod(r)
three = tasks()
mod.time_evaluator(number=2, repeat=1)(r)
assert (r == 5).all()
from tunecli.engine.runtime.thread_pool import pool_threads
print(one - before, three - before, pool_threads())
'''


def test_thread_count_reaches_the_pool_and_env_sets_the_default():
    env = dict(os.environ, TUNECLI_NUM_THREADS="3")
    proc = subprocess.run([sys.executable, "-c", THREADS_SCRIPT], capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # 1 thread: the caller only; 3 threads: two pool threads beside it
    assert proc.stdout.split() == ["0", "2", "2"]


def test_bad_env_value_and_bad_counts_raise_argument_error():
    env = dict(os.environ, TUNECLI_NUM_THREADS="zero")
    code = "from tunecli.engine.runtime import get_num_threads; get_num_threads()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode != 0 and "TUNECLI_NUM_THREADS='zero' must be a positive integer" in proc.stderr
    before = get_num_threads()
    for bad in (0, -2, 1.5, True, "2"):
        with pytest.raises(ArgumentError):
            set_num_threads(bad)
    assert get_num_threads() == before
