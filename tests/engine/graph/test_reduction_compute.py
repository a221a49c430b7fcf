"""Every compiled pooling, softmax and reduction operator equals its numpy reference (built at
opt_level 0 and 3, run by the graph executor, compared with the interpreter)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tunecli import relay
from tunecli.engine import graph as g

from .test_op_compute import M, X, assert_compiled_equals_interpreter

nn = relay.nn

CASES: dict[str, Callable[[], g.Expr]] = {
    "max_pool2d": lambda: nn.max_pool2d(X, (3, 3), (2, 2), padding=(1, 1)),
    "avg_pool2d": lambda: nn.avg_pool2d(X, (2, 2), (2, 2), padding=(1, 1), count_include_pad=True),
    "global_avg_pool2d": lambda: nn.global_avg_pool2d(X),
    "global_max_pool2d": lambda: nn.global_max_pool2d(X),
    "adaptive_avg_pool2d": lambda: nn.adaptive_avg_pool2d(X, (1, 1)),
    "softmax": lambda: nn.softmax(M, axis=1),
    "log_softmax": lambda: nn.log_softmax(relay.reshape(M, (4, 4, 8)), axis=1),
    "sum/mean": lambda: relay.add(relay.sum(X, axis=(2, 3)), relay.mean(X, axis=(2, 3))),
    "max/min keepdims": lambda: relay.subtract(
        relay.max(X, axis=(1,), keepdims=True), relay.min(X, axis=(1,), keepdims=True)
    ),
}


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("case", CASES)
def test_compiled_operator_equals_reference(case: str, opt_level: int) -> None:
    assert_compiled_equals_interpreter(CASES[case](), opt_level)
