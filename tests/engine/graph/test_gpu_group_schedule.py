"""GPU schedules of the fused groups without a tunable anchor: each kind of group (elementwise and
broadcast chains, layout ops, pools, global pools, softmax, reductions, an operator without a GPU
template) built for ``cuda`` gives kernels of fused block/thread loops that fits the device, and
computes in the simulated grid what the interpreter computes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.lower.verify_gpu import GPULimits, verify_gpu_code
from tunecli.engine.target import Target

from .simulated_cuda_graph import cuda_program, simulate

X = (1, 6, 9, 9)
GROUPS: dict[str, tuple[list[tuple[int, ...]], Callable[..., relay.Expr]]] = {
    "elementwise": ([X, X], lambda a, b: relay.tanh(relay.clip(relay.multiply(relay.add(a, b), a),
                                                                -0.5, 0.7))),
    "broadcast": ([X, (6, 1, 1)], lambda a, b: relay.nn.relu(relay.add(a, b))),
    "transpose_reshape": ([X], lambda a: relay.reshape(relay.transpose(relay.sigmoid(a), (0, 2, 3, 1)),
                                                       (9, 54))),
    "concatenate": ([X, (1, 3, 9, 9)], lambda a, b: relay.concatenate([a, relay.exp(b)], axis=1)),
    "pad": ([X], lambda a: relay.nn.pad(a, ((0, 0), (0, 0), (1, 2), (2, 1)))),
    "max_pool": ([X], lambda a: relay.nn.max_pool2d(relay.nn.relu(a), pool_size=(3, 3), strides=(2, 2),
                                                     padding=(1, 1))),
    "avg_pool": ([X], lambda a: relay.nn.avg_pool2d(a, pool_size=(2, 2), strides=(2, 2), padding=(1, 1))),
    "global_avg_pool": ([X], lambda a: relay.nn.global_avg_pool2d(a)),
    "adaptive_avg_pool": ([X], lambda a: relay.nn.adaptive_avg_pool2d(a, output_size=(1, 1))),
    "softmax": ([(3, 37)], lambda a: relay.nn.softmax(a)),
    "sum_mean": ([X], lambda a: relay.add(relay.sum(a, axis=(2, 3)), relay.mean(a, axis=(2, 3)))),
    "batch_matmul": ([(2, 5, 7), (2, 3, 7)], lambda a, b: relay.nn.batch_matmul(a, b)),
}


@pytest.mark.parametrize("kind", list(GROUPS))
def test_each_kind_of_group_runs_in_the_simulated_grid_as_the_interpreter(kind: str) -> None:
    shapes, body = GROUPS[kind]
    args = [relay.var(f"x{i}", shape=s) for i, s in enumerate(shapes)]
    mod = g.IRModule.from_expr(relay.Function(args, body(*args)))
    program = cuda_program(mod, {})
    for lowered in program.lowered:
        assert verify_gpu_code(lowered.func, GPULimits.from_target(Target("cuda"))) == []
        assert lowered.kernel.object_format == "ptx" and lowered.kernel.launch.block[0] > 1
    rng = np.random.default_rng(len(kind))
    inputs = {a.name_hint: rng.uniform(-1, 1, s).astype("float32") for a, s in zip(args, shapes, strict=True)}
    want = g.evaluate(mod, list(inputs.values()))
    for reverse in (False, True):
        (got,) = simulate(program, inputs, reverse=reverse)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_an_injective_group_is_split_by_the_threads_of_a_block() -> None:
    """TVM's ``schedule_injective``: all axes fused, ``max_num_threads`` threads per block."""
    a = relay.var("a", shape=(4, 1000))
    for target, threads in (("cuda", 1024), ("cuda -max_num_threads=256", 256)):
        program = cuda_program(g.IRModule.from_expr(relay.Function([a], relay.nn.relu(a))), {}, target)
        (lowered,) = program.lowered
        assert lowered.kernel.launch.block == (threads, 1, 1)
        assert lowered.kernel.launch.grid == (-(-4000 // threads), 1, 1)
