"""``tvm.lower`` gives a module of lowered functions, as TVM's: indexed by the function's name,
printed as its loop nest, and accepted by ``tvm.build``."""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli import te
from tunecli.errors import LoweringError, TuneError


def doubled() -> tuple:
    src = te.placeholder((12,), name="src")
    out = te.compute((12,), lambda i: src[i] * 2.0, name="out")
    s = te.create_schedule(out.op)
    s[out].split(out.op.axis[0], factor=4)
    return s, [src, out]


def test_the_module_holds_the_function_under_its_name() -> None:
    mod = tvm.lower(*doubled(), name="twice")
    assert list(mod) == ["twice"] and "twice" in mod and len(mod) == 1
    assert mod["twice"].name == "twice"
    assert str(mod) == str(mod["twice"])
    assert "i.inner" in str(mod)


def test_a_missing_function_is_named() -> None:
    mod = tvm.lower(*doubled())
    with pytest.raises(LoweringError, match="no function 'other'; it has \\['main'\\]") as err:
        mod["other"]
    assert isinstance(err.value, TuneError)


def test_build_compiles_a_lowered_module() -> None:
    func = tvm.build(tvm.lower(*doubled()), target="llvm")
    src = np.arange(12, dtype="float32")
    out = np.zeros(12, "float32")
    func(src, out)
    np.testing.assert_array_equal(out, src * 2)
