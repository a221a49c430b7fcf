"""Module names of TVM 0.6/0.7 that later releases renamed: ``tvm.contrib.util`` (now
``contrib.utils``: ``util.tempdir()`` of the old getting-started tutorial's export) and
``tvm.autotvm.util`` (now ``autotvm.utils``: ``get_const_tuple`` and friends); and AutoTVM names
imported by the module that defines them in TVM (``autotvm.task.dispatcher``,
``autotvm.task.topi_integration``, ``autotvm.measure.measure_methods``)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tunecli as tvm
from tunecli import autotvm
from tunecli.autotvm.util import EmptyContext, format_si_prefix, get_const_int, get_const_tuple
from tunecli.contrib import util
from tunecli.errors import ExprError


def test_a_kernel_exported_to_a_util_tempdir_loads_back_and_runs():
    A = tvm.placeholder((16,), name="A")
    B = tvm.compute(A.shape, lambda i: A[i] + 1.0, name="B")
    s = tvm.create_schedule(B.op)
    f = tvm.build(s, [A, B], "llvm", name="addone")
    temp = util.tempdir()
    path = temp.relpath("addone.so")
    f.export_library(path)
    assert os.path.exists(path)
    loaded = tvm.runtime.load_module(path)
    a = tvm.nd.array(np.arange(16, dtype="float32"))
    b = tvm.nd.empty((16,))
    loaded(a, b)
    np.testing.assert_allclose(b.numpy(), a.numpy() + 1.0)


def test_autotvm_util_reads_constant_shapes():
    n = tvm.var("n")
    A = tvm.placeholder((4, 8 * 2), name="A")
    assert get_const_tuple(A.shape) == (4, 16)
    assert autotvm.util.get_const_int(A.shape[1] + 1) == 17
    assert autotvm.utils.get_const_tuple is get_const_tuple
    with pytest.raises(ExprError, match="not a constant"):
        get_const_int(n * 2)


def test_autotvm_util_si_prefixes_and_empty_context():
    assert format_si_prefix(2.5e9, "G") == pytest.approx(2.5)
    with EmptyContext():
        pass


def test_autotvm_names_by_their_module_paths():
    from tunecli.autotvm.measure.measure_methods import LocalBuilder, LocalRunner, RPCRunner, request_remote
    from tunecli.autotvm.task.dispatcher import (
        ApplyConfig,
        ApplyGraphBest,
        ApplyHistoryBest,
        DispatchContext,
        FallbackContext,
        clear_fallback_cache,
    )
    from tunecli.autotvm.task.topi_integration import register_topi_compute, register_topi_schedule

    assert (LocalBuilder, LocalRunner, RPCRunner) == (autotvm.LocalBuilder, autotvm.LocalRunner,
                                                      autotvm.RPCRunner)
    assert request_remote is autotvm.measure.request_remote
    assert (ApplyConfig, DispatchContext, FallbackContext) == (
        autotvm.task.ApplyConfig, autotvm.task.DispatchContext, autotvm.task.FallbackContext)
    assert ApplyHistoryBest is autotvm.apply_history_best and ApplyGraphBest is autotvm.apply_graph_best
    assert clear_fallback_cache is autotvm.task.clear_fallback_cache
    assert register_topi_compute is autotvm.register_topi_compute
    assert register_topi_schedule is autotvm.register_topi_schedule
    assert autotvm.task.dispatcher.ApplyHistoryBest is ApplyHistoryBest
