"""Constant and Select constructors also accept TVM's argument forms (``tvm.tir`` user code)."""

import pytest

from tunecli.engine.ir import expr as E
from tunecli.errors import ExprError


def test_imm_constructors_take_either_argument_order():
    assert (E.IntImm(5).value, E.IntImm(5).dtype) == (5, "int32")
    assert (E.IntImm(5, "int64").value, E.IntImm("int64", 5).dtype) == (5, "int64")
    assert (E.FloatImm("float16", 0.5).value, E.FloatImm("float16", 0.5).dtype) == (0.5, "float16")


def test_select_converts_numbers_to_the_other_branch_dtype():
    x = E.Var("x")
    s = E.Select(x > 0, 1, E.IntImm(2, "int8"))
    assert s.true_value.dtype == "int8" and s.dtype == "int8"
    assert E.Select(x > 0, E.FloatImm(1.0, "float16"), 0.0).dtype == "float16"
    assert E.Select(True, 1, 2).condition.dtype == "bool"


@pytest.mark.parametrize("t, f", [(E.IntImm(1), E.FloatImm(1.0)), (1.5, E.IntImm(1))])
def test_select_branches_must_share_a_dtype(t, f):
    with pytest.raises(ExprError):
        E.Select(E.Var("x") > 0, t, f)
