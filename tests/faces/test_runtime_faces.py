"""The TVM runtime faces TVM scripts rely on: ``tunecli.nd``, ``cpu``/``device``, ``testing`` and
``Module.time_evaluator(func_name, dev, ...)`` (next to its older ``(number, repeat, ...)`` form)."""

from __future__ import annotations

import importlib
import time

import numpy as np
import pytest

import tunecli as tvm
from tunecli import te
from tunecli.errors import ArgumentError
from tunecli.runtime import BenchmarkResult, Module


@pytest.fixture(scope="module")
def vadd() -> Module:
    """``C = A + B`` on 64 floats, built for the host."""
    A = te.placeholder((64,), name="A")
    B = te.placeholder((64,), name="B")
    C = te.compute((64,), lambda i: A[i] + B[i], name="C")
    return tvm.build(te.create_schedule(C.op), [A, B, C], "llvm", name="vadd")


def test_lazy_faces_are_the_submodules() -> None:
    """``tvm.target``, ``tvm.nd``, ... resolve to the face modules; unknown names still fail."""
    for name in ("autotvm", "topi", "rpc", "target", "nd", "runtime", "testing"):
        assert getattr(tvm, name) is importlib.import_module(f"tunecli.{name}")
        assert name in dir(tvm)
    assert tvm.target.Target is tvm.Target
    with pytest.raises(AttributeError, match="no_such_face"):
        tvm.no_such_face  # noqa: B018


def test_devices() -> None:
    """Every CPU spelling gives the same device; others are refused with a clear error."""
    assert tvm.cpu() == tvm.cpu(0) == tvm.device("cpu") == tvm.device("llvm", 0) == tvm.device(1)
    assert tvm.device("llvm -mcpu=generic") == tvm.device(tvm.Target("llvm")) == tvm.cpu(0)
    assert tvm.device("cpu", 1) == tvm.cpu(1) != tvm.cpu(0)
    assert repr(tvm.cpu(0)) == "cpu(0)" and tvm.cpu().device_type == 1 and tvm.cpu().exist
    assert tvm.device("cuda") == tvm.cuda(0) == tvm.gpu(0) != tvm.cpu(0) and tvm.cuda().device_type == 2
    for bad in ("opencl", 4, ""):
        with pytest.raises(ArgumentError):
            tvm.device(bad)
    with pytest.raises(ArgumentError):
        tvm.cpu(-1)


def test_nd_array_copies_and_converts_back() -> None:
    """``nd.array`` copies its source, keeps dtype and shape; ``numpy()`` is a plain copy."""
    src = np.arange(12, dtype="int16").reshape(3, 4)
    a = tvm.nd.array(src, tvm.cpu(0))
    src[0, 0] = 99
    assert a.shape == (3, 4) and a.dtype == np.int16 and a[0, 0] == 0
    assert a.device == tvm.cpu(0) and a[1:].device == tvm.cpu(0)
    out = a.numpy()
    assert type(out) is np.ndarray and np.array_equal(out, np.arange(12).reshape(3, 4))
    out[0, 0] = 7
    assert a[0, 0] == 0 and np.array_equal(a.asnumpy(), a.numpy())
    fortran = np.asfortranarray(np.ones((3, 5), "float32"))
    assert tvm.nd.array(fortran).flags.c_contiguous
    assert tvm.nd.array(src, device=tvm.cpu(2)).device == tvm.cpu(2)
    with pytest.raises(ArgumentError):
        tvm.nd.array(src, device="opencl")
    with pytest.raises(ArgumentError):
        tvm.nd.array(src, mem_scope="shared")


def test_nd_empty_copyfrom_copyto() -> None:
    """``empty`` has the asked shape and dtype; ``copyfrom``/``copyto`` move data, checking shapes."""
    e = tvm.nd.empty((2, 3), "float64")
    assert e.shape == (2, 3) and e.dtype == np.float64 and isinstance(e, tvm.nd.NDArray)
    assert tvm.nd.empty(5).shape == (5,)
    e.copyfrom(np.arange(6).reshape(2, 3))
    assert np.array_equal(e.numpy(), np.arange(6).reshape(2, 3))
    with pytest.raises(ArgumentError, match="shape"):
        e.copyfrom(np.zeros((3, 2)))
    other = tvm.nd.empty((2, 3), "float64")
    e.copyto(other)
    assert np.array_equal(other.numpy(), e.numpy())
    fresh = e.copyto(tvm.cpu(0))
    assert fresh is not e and np.array_equal(fresh.numpy(), e.numpy())


def test_modules_take_ndarrays_and_write_in_place(vadd: Module) -> None:
    """A kernel called with NDArrays (mixed with numpy arrays) writes its output in place."""
    a = tvm.nd.array(np.arange(64, dtype="float32"))
    b = np.full(64, 2.0, dtype="float32")
    c = tvm.nd.empty((64,))
    vadd(a, b, c)
    np.testing.assert_array_equal(c.numpy(), np.arange(64) + 2.0)
    with pytest.raises(ArgumentError, match="dtype"):
        vadd(a, b, tvm.nd.empty((64,), "float64"))


def test_tvm_style_time_evaluator(vadd: Module) -> None:
    """``time_evaluator(entry_name, dev, number, repeat)`` gives TVM's result object."""
    a, b, c = (tvm.nd.array(np.ones(64, "float32")) for _ in range(3))
    evaluator = vadd.time_evaluator(vadd.entry_name, tvm.cpu(0), number=5, repeat=4)
    result = evaluator(a, b, c)
    assert isinstance(result, BenchmarkResult) and len(result.results) == 4
    assert result.mean == pytest.approx(np.mean(result.results))
    assert result.median == pytest.approx(np.median(result.results))
    assert result.std == pytest.approx(np.std(result.results))
    assert result.min == min(result.results) and result.max == max(result.results)
    assert 0 < result.min <= result.mean <= result.max < 0.1
    np.testing.assert_array_equal(c.numpy(), np.full(64, 2.0))
    by_keyword = vadd.time_evaluator(func_name="vadd", dev=tvm.cpu(), number=2)(a, b, c)
    assert len(by_keyword.results) == 1


def test_tvm_style_time_evaluator_waits_and_checks(vadd: Module) -> None:
    """``min_repeat_ms`` and ``cooldown_interval_ms`` take time; bad names and options are refused."""
    a, b, c = (np.ones(64, "float32") for _ in range(3))
    start = time.perf_counter()
    vadd.time_evaluator("vadd", tvm.cpu(), number=1, repeat=3, min_repeat_ms=10)(a, b, c)
    assert time.perf_counter() - start >= 0.030
    start = time.perf_counter()
    vadd.time_evaluator("vadd", tvm.cpu(), number=1, repeat=3, cooldown_interval_ms=25)(a, b, c)
    assert time.perf_counter() - start >= 0.050  # two pauses, between repeats 1-2 and 2-3
    with pytest.raises(ArgumentError, match="no function named 'main'"):
        vadd.time_evaluator("main", tvm.cpu())

    class Gpu:
        device_type = 2

    for dev in (Gpu(), "cuda"):
        with pytest.raises(ArgumentError, match="CPU"):
            vadd.time_evaluator("vadd", dev)
    assert len(vadd.time_evaluator("vadd", "llvm", number=1)(a, b, c).results) == 1
    with pytest.raises(ArgumentError, match="cache_flush_bytes"):
        vadd.time_evaluator("vadd", tvm.cpu(), cache_flush_bytes=1 << 20)


def test_list_time_evaluator_still_works(vadd: Module) -> None:
    """The older form returns one mean per repeat as a list, by keyword or by position."""
    a, b, c = (np.ones(64, "float32") for _ in range(3))
    costs = vadd.time_evaluator(number=3, repeat=2)(a, b, c)
    assert isinstance(costs, list) and len(costs) == 2 and all(t > 0 for t in costs)
    costs = vadd.time_evaluator(2, 3, 0)(a, b, c)
    assert isinstance(costs, list) and len(costs) == 3


def test_testing_assert_allclose() -> None:
    """TVM's ``assert_allclose`` compares shapes first (no broadcasting) and takes NDArrays."""
    tvm.testing.assert_allclose(tvm.nd.array(np.ones(3)), np.ones(3))
    with pytest.raises(AssertionError):
        tvm.testing.assert_allclose(np.ones((1, 3)), np.ones(3))
    with pytest.raises(AssertionError):
        tvm.testing.assert_allclose(np.ones(3), np.ones(3) + 1e-3, rtol=1e-5)


def test_runtime_convert_makes_constants_of_python_values() -> None:
    n = tvm.runtime.convert(1024)
    assert (n.dtype, int(n.value)) == ("int32", 1024)
    assert te.placeholder((n,), name="A").shape[0].value == 1024
    pair = tvm.runtime.convert([2, 0.5])
    assert [(c.dtype, c.value) for c in pair] == [("int32", 2), ("float32", 0.5)]
    assert tvm.runtime.convert("name") == "name" and tvm.runtime.convert(n) is n
