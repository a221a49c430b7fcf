"""TVM 0.6/0.7 scripts name the operators whose tasks they extract by their constructor functions,
``ops=(relay.op.nn.conv2d,)``, where later ones write ``relay.op.get("nn.conv2d")``: both pick the
same tasks; a function that builds no operator is one clear error.  TVM 0.6's argument order,
``(mod, params, ops, target[, target_host])``, is understood too."""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli import autotvm, relay, topi
from tunecli.errors import GraphError


def conv_then_dense():
    data = relay.var("data", shape=(1, 3, 8, 8), dtype="float32")
    weight = relay.var("weight", shape=(4, 3, 3, 3), dtype="float32")
    dense_weight = relay.var("dense_weight", shape=(10, 4 * 6 * 6), dtype="float32")
    conv = relay.nn.relu(relay.nn.conv2d(data, weight, kernel_size=(3, 3), channels=4))
    out = relay.nn.dense(relay.nn.batch_flatten(conv), dense_weight)
    mod = tvm.IRModule.from_expr(relay.Function([data, weight, dense_weight], out))
    rng = np.random.default_rng(0)
    params = {"weight": rng.standard_normal((4, 3, 3, 3)).astype("float32"),
              "dense_weight": rng.standard_normal((10, 144)).astype("float32")}
    return mod, params


def test_constructor_functions_pick_the_same_tasks_as_op_objects():
    mod, params = conv_then_dense()
    for constructor, name in ((relay.op.nn.dense, "nn.dense"), (relay.op.nn.conv2d, "nn.conv2d")):
        by_function = autotvm.task.extract_from_program(mod["main"], params, "llvm", ops=(constructor,))
        by_op = autotvm.task.extract_from_program(mod["main"], params, "llvm", ops=(relay.op.get(name),))
        assert by_function and [t.workload for t in by_function] == [t.workload for t in by_op]
    dense_tasks = autotvm.task.extract_from_program(mod["main"], params, "llvm", ops=(relay.op.nn.dense,))
    assert all("dense" in t.name for t in dense_tasks)
    both = autotvm.task.extract_from_program(mod["main"], params, "llvm",
                                             ops=(relay.op.nn.conv2d, relay.op.nn.dense))
    assert len(both) == len(dense_tasks) + len(
        autotvm.task.extract_from_program(mod["main"], params, "llvm", ops=(relay.op.nn.conv2d,)))


def test_a_function_that_builds_no_operator_is_refused():
    mod, params = conv_then_dense()
    with pytest.raises(GraphError, match="not an operator constructor"):
        autotvm.task.extract_from_program(mod["main"], params, "llvm", ops=(topi.nn.dense,))


def test_tvm_06_argument_order_ops_before_the_target():
    mod, params = conv_then_dense()
    now = autotvm.task.extract_from_program(mod["main"], params, "llvm", ops=(relay.op.nn.conv2d,))
    old = autotvm.task.extract_from_program(mod["main"], params, (relay.op.nn.conv2d,), "llvm")
    old_with_host = autotvm.task.extract_from_program(mod["main"], params, (relay.op.nn.conv2d,),
                                                      "llvm", "llvm")
    assert [t.workload for t in old] == [t.workload for t in old_with_host] == [t.workload for t in now]
    assert str(old_with_host[0].target_host) == "llvm"
    many = autotvm.task.extract_from_multiple_program([mod["main"]], [params], [relay.op.nn.dense], "llvm")
    assert all("dense" in t.name for t in many) and many
    with pytest.raises(GraphError, match="operators given twice"):
        autotvm.task.extract_from_program(mod["main"], params, (relay.op.nn.conv2d,), "llvm",
                                          ops=(relay.op.nn.dense,))
