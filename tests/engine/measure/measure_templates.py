"""Tiny real templates for the measurement tests (registered on import, also in workers).

``measure_test/matmul`` is a small tiled matmul; ``measure_test/faulty`` has one knob ``mode``
whose values make the template or its kernel fail in each way a candidate can fail.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from tests.engine.split_matmul import split_matmul
from tunecli.engine import te
from tunecli.engine.schedule import create_schedule
from tunecli.engine.task.task import get_config, template

#: Values of the ``mode`` knob of ``measure_test/faulty``, in index order.
MODES = ["ok", "raise", "invalid", "wrong", "sleep", "die", "noarg", "exit"]


@template("measure_test/matmul")
def matmul(n: int, dtype: str = "float32") -> tuple[Any, list]:
    """C[i, j] = sum_k A[i, k] * B[k, j] with split knobs on i and j."""
    return split_matmul(n, n, n, dtype)


@template("measure_test/faulty")
def faulty(n: int) -> tuple[Any, list]:
    """C = A + B, unless the ``mode`` knob says to fail (see MODES)."""
    cfg = get_config()
    cfg.define_knob("mode", MODES)
    mode = cfg["mode"].val
    if mode == "raise":
        raise ValueError("measure_test/faulty: this config raises")
    if mode == "invalid":
        cfg.raise_error("measure_test/faulty: this config is invalid")
    if mode == "sleep":
        time.sleep(60)
    if mode == "die":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "exit":
        os._exit(3)
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    if mode == "wrong":
        C = te.compute((n,), lambda i: A[i] - B[i], name="C")
    else:
        C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    if mode == "noarg":  # B is read but not an argument: the compiler (lowering) rejects it
        return create_schedule(C.op), [A, C]
    return create_schedule(C.op), [A, B, C]
