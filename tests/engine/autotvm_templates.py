"""Real templates used by the autotvm tests (registered on import)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engine.split_matmul import split_matmul
from tunecli.engine import te
from tunecli.engine.schedule import create_schedule
from tunecli.engine.task.task import get_config, template

TOPHUB = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "tophub"
SEED = Path(__file__).resolve().parents[2] / ".." / "shared" / "seed"


def tophub_dir() -> Path:
    """The folder of real TVM logs, or skip the test when shared/ is not beside the clone."""
    if not TOPHUB.is_dir():
        pytest.skip(f"real TVM logs not found at {TOPHUB}")
    return TOPHUB


@template("autotvm_test/matmul")
def matmul(n: int, l: int, m: int, dtype: str) -> tuple[Any, list]:
    """C = A @ B with two split knobs, exactly TVM's unit-test matmul template."""
    return split_matmul(n, l, m, dtype)


@template("autotvm_test/add_flop")
def declared_flop(n: int) -> tuple[Any, list]:
    """An elementwise op whose FLOPs are declared with ``add_flop`` (overrides counting)."""
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = create_schedule(B.op)
    cfg = get_config()
    cfg.define_knob("unroll", [0, 1])
    cfg.add_flop(12345)
    return s, [A, B]


@template("autotvm_test/tensor_args")
def tensor_args(A: Any, B: Any) -> tuple[Any, list]:
    """Adds two tensors given as arguments (serialised as ("TENSOR", shape, dtype))."""
    C = te.compute(A.shape, lambda i, j: A[i, j] + B[i, j], name="C")
    s = create_schedule(C.op)
    get_config().define_split("tile", s[C].op.axis[1], num_outputs=2)
    return s, [A, B, C]
