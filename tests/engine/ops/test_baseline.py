"""The strategy rows' numpy baselines (what `apply` times beside a kernel) compute what the references
compute, in the kernel's dtype."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine.measure.arrays import normalize_arg_specs
from tunecli.engine.measure.baseline_timing import BaselineRequest, time_baseline
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.ops.registry import STRATEGIES, baseline_of
from tunecli.engine.runtime.blas import set_blas_threads
from tunecli.engine.task.task import create

CASES = [
    ("dense.x86", (8, 32, 16, "float32"), "a @ w.T"),
    ("tutorial/matmul", (8, 12, 16, "float32"), "a @ b"),
    ("batch_matmul.x86", (("TENSOR", (2, 8, 12), "float32"), ("TENSOR", (2, 16, 12), "float32")),
     "np.matmul(x, y^T)"),
    ("conv2d_nchw.x86", (1, 8, 9, 9, 4, 3, 3, 2, 1, 1, "float32"), "im2col + matmul"),
    ("depthwise_conv2d_nchw.x86", (1, 4, 9, 9, 2, 3, 3, 1, 1, 2, "float32"), "einsum over windows"),
]


@pytest.mark.parametrize(("name", "args", "text"), CASES, ids=[c[0] for c in CASES])
def test_baseline_agrees_with_the_reference_in_the_kernel_dtype(name: str, args: tuple, text: str) -> None:
    task = create(name, args, "llvm")
    baseline = baseline_of(task)
    assert baseline is not None and baseline.text == text
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(t.shape).astype(t.dtype) for t in _input_tensors(task)]
    got = np.asarray(baseline.func(*baseline.inputs(*inputs)))
    expected = np.asarray(task.reference(*inputs))
    assert got.dtype == np.float32  # not float64: the speed of what the kernel computes
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def _input_tensors(task) -> list:
    with task.target:
        sch, tensors = task.instantiate(task.config_space.get(0))
    outs = {id(op) for op in sch.outputs}
    return [t for t in tensors if id(t.op) not in outs]


def test_blas_threads_can_be_set_and_a_baseline_timed() -> None:
    assert set_blas_threads(1)
    task = create("tutorial/matmul", (16, 16, 16, "float32"), "llvm")
    specs = normalize_arg_specs([((16, 16), "float32")] * 3)
    baseline = baseline_of(task)
    assert baseline is not None
    reply = time_baseline(BaselineRequest(baseline, specs, (2,), 0, TimingOptions(number=2, repeat=2)))
    assert reply.error_no == 0 and len(reply.costs) == 2 and all(c > 0 for c in reply.costs)


def test_rows_without_a_baseline_and_user_templates_get_none() -> None:
    assert STRATEGIES.get("conv2d_NCHWc_winograd.x86").baseline is None
    task = create("tutorial/matmul", (16, 16, 16, "float32"), "llvm")
    task.reference = None  # a user's template: checked against its first config, no numpy time
    assert baseline_of(task) is None
