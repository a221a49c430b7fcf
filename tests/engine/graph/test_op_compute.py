"""Every compiled graph operator equals its numpy reference: each network below is built with
``relay.build`` (at opt_level 0 each call is its own kernel, at 3 they fuse) and run by the graph
executor, and compared with the interpreter (pooling and reductions: test_reduction_compute)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import build
from tunecli.engine.graph.op_compute import compute_of
from tunecli.engine.graph.passes import PassContext
from tunecli.errors import GraphError

X = relay.var("x", shape=(2, 16, 6, 6), dtype="float32")
V = relay.var("v", shape=(16, 1, 1), dtype="float32")
M = relay.var("m", shape=(4, 32), dtype="float32")
nn = relay.nn

CASES: dict[str, Callable[[], g.Expr]] = {
    "relu": lambda: nn.relu(X),
    "leaky_relu": lambda: nn.leaky_relu(X, 0.2),
    "clip": lambda: relay.clip(X, -0.2, 0.3),
    "sigmoid": lambda: relay.sigmoid(X),
    "tanh": lambda: relay.tanh(X),
    "exp": lambda: relay.exp(X),
    "sqrt": lambda: relay.sqrt(relay.exp(X)),
    "negative": lambda: relay.negative(X),
    "cast": lambda: relay.cast(X, "int32"),
    "add/subtract broadcast": lambda: relay.subtract(relay.add(X, V), V),
    "multiply/divide broadcast": lambda: relay.divide(relay.multiply(X, V), relay.exp(V)),
    "maximum/minimum": lambda: relay.minimum(relay.maximum(X, V), relay.const(0.5)),
    "bias_add": lambda: nn.bias_add(X, relay.const(np.arange(16, dtype="float32"))),
    "reshape": lambda: relay.reshape(X, (2, -1, 12)),
    "batch_flatten": lambda: nn.batch_flatten(X),
    "squeeze/expand_dims": lambda: relay.squeeze(relay.expand_dims(X, 1, 2), axis=(1, 2)),
    "transpose": lambda: relay.transpose(X, (0, 2, 3, 1)),
    "concatenate": lambda: relay.concatenate([X, relay.exp(X)], axis=1),
    "pad": lambda: nn.pad(X, ((0, 0), (0, 0), (1, 2), (2, 1)), 0.5),
    "layout_transform": lambda: relay.layout_transform(
        relay.layout_transform(X, "NCHW", "NCHW8c"), "NCHW8c", "NCHW"
    ),
    "dense": lambda: nn.dense(M, relay.var("w", shape=(48, 32))),
    "batch_matmul": lambda: nn.batch_matmul(relay.reshape(M, (2, 2, 32)), relay.var("y", shape=(2, 16, 32))),
    "batch_matmul transposes": lambda: nn.batch_matmul(
        relay.var("a", shape=(2, 8, 5)), relay.var("b", shape=(1, 8, 3)), transpose_a=True, transpose_b=False
    ),
    "conv2d": lambda: nn.conv2d(X, relay.var("w", shape=(32, 16, 3, 3)), padding=(1, 1), strides=(2, 2)),
    "depthwise conv2d": lambda: nn.conv2d(X, relay.var("w", shape=(16, 1, 3, 3)), padding=(1, 1), groups=16),
    "grouped conv2d": lambda: nn.conv2d(X, relay.var("w", shape=(8, 4, 3, 3)), groups=4),
}


def _inputs(fn: g.Function, rng: np.random.Generator) -> dict[str, np.ndarray]:
    g.infer_types(fn)
    return {
        p.name_hint: rng.uniform(-1, 1, p.checked_type.shape).astype(p.checked_type.dtype) for p in fn.params
    }


def assert_compiled_equals_interpreter(expr: g.Expr, opt_level: int) -> None:
    """Build ``expr`` at ``opt_level``, run it on random inputs and compare with the interpreter."""
    fn = g.Function(g.free_vars(expr), expr)
    values = _inputs(fn, np.random.default_rng(1))
    expected = g.evaluate(fn, inputs=values)
    with PassContext(opt_level=opt_level):
        lib = build(g.IRModule.from_expr(fn), "llvm")
    m = lib["default"](None)
    m.set_input(**values)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("case", CASES)
def test_compiled_operator_equals_reference(case: str, opt_level: int) -> None:
    assert_compiled_equals_interpreter(CASES[case](), opt_level)


def test_an_operator_without_a_compute_is_named() -> None:
    with pytest.raises(
        GraphError, match="nn.batch_norm: no compiled implementation; the compiler supports .*nn.conv2d"
    ):
        compute_of("nn.batch_norm")


def test_every_definition_module_is_loaded_by_the_first_lookup() -> None:
    """In a fresh process, ``compute_of`` answers for operators defined in other modules
    (pooling, transformer ops) without anything importing them first."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from tunecli.engine.graph.op_compute import DEFINITION_MODULES, compute_of\n"
        "assert 'tunecli.engine.graph.reduction_compute' not in sys.modules\n"
        "for name in ('nn.max_pool2d', 'nn.softmax', 'where', 'nn.relu'):\n"
        "    assert callable(compute_of(name)), name\n"
        "assert all(f'tunecli.engine.graph.{m}' in sys.modules for m in DEFINITION_MODULES)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
