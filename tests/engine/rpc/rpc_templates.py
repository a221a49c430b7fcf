"""A template without a numpy reference for the RPC correctness tests (registered on import, also
in the build workers): ``rpc_test/add_or_sub`` computes ``A + B`` or, with ``mode="wrong"``,
``A - B``."""

from __future__ import annotations

from typing import Any

from tunecli.engine import te
from tunecli.engine.schedule import create_schedule
from tunecli.engine.task.task import get_config, template


@template("rpc_test/add_or_sub")
def add_or_sub(n: int) -> tuple[Any, list]:
    """C = A + B (config 0, the reference) or A - B (config 1)."""
    cfg = get_config()
    cfg.define_knob("mode", ["ok", "wrong"])
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    if cfg["mode"].val == "wrong":
        C = te.compute((n,), lambda i: A[i] - B[i], name="C")
    else:
        C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return create_schedule(C.op), [A, B, C]
