"""The kernel half of TVM 0.6's tune_relay_x86, ported by changing imports: extracted tasks are
"converted" with ``autotvm.task.create('topi_x86_conv2d_NCHWc', args=tsk.args, target=...,
template_key='direct')`` (or the depthwise name) and given the extracted task's workload. Those old
names give the tunecli template extraction already chose (``conv2d_NCHWc.x86``,
``depthwise_conv2d_NCHWc.x86``), so the converted task is the extracted one, and its tuned log
applies when the network is built."""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli import autotvm, relay
from tunecli.contrib import graph_runtime
from tunecli.errors import TuneError

OLD_NAME = {"conv2d_NCHWc.x86": "topi_x86_conv2d_NCHWc",
            "depthwise_conv2d_NCHWc.x86": "topi_x86_depthwise_conv2d_NCHWc_from_nchw"}


def conv_then_depthwise():
    data = relay.var("data", shape=(1, 3, 8, 8))
    w1 = relay.var("w1", shape=(8, 3, 3, 3))
    w2 = relay.var("w2", shape=(8, 1, 3, 3))
    y = relay.nn.relu(relay.nn.conv2d(data, w1, padding=(1, 1), channels=8, kernel_size=(3, 3)))
    y = relay.nn.conv2d(y, w2, padding=(1, 1), channels=8, groups=8, kernel_size=(3, 3))
    rng = np.random.default_rng(0)
    params = {"w1": rng.standard_normal((8, 3, 3, 3)).astype("float32") * 0.1,
              "w2": rng.standard_normal((8, 1, 3, 3)).astype("float32") * 0.1}
    return tvm.IRModule.from_expr(relay.Function([data, w1, w2], y)), params


def test_converting_extracted_tasks_by_their_old_names_gives_the_same_tasks_and_the_log_applies(tmp_path):
    mod, params = conv_then_depthwise()
    tasks = autotvm.task.extract_from_program(mod["main"], target="llvm", params=params,
                                              ops=(relay.op.nn.conv2d,))
    assert sorted(t.name for t in tasks) == sorted(OLD_NAME)
    log = str(tmp_path / "x86.log")
    measure_option = autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                            runner=autotvm.LocalRunner(number=1, repeat=1, timeout=20))
    for tsk in tasks:
        task = autotvm.task.create(OLD_NAME[tsk.name], args=tsk.args, target="llvm", template_key="direct")
        task.workload = tsk.workload
        assert task.name == tsk.name and task.workload == tsk.workload
        assert len(task.config_space) == len(tsk.config_space)
        if tsk.name == "conv2d_NCHWc.x86":
            tuner = autotvm.tuner.RandomTuner(task)
            tuner.tune(n_trial=2, measure_option=measure_option,
                       callbacks=[autotvm.callback.log_to_file(log)])

    records = list(autotvm.record.load_from_file(log))
    assert len(records) == 2 and all(r[0].task.name == "conv2d_NCHWc.x86" for r in records)
    with autotvm.apply_history_best(log):
        with relay.build_config(opt_level=3):
            graph, lib, built_params = relay.build_module.build(mod, target="llvm", params=params)
    ctx = tvm.context("llvm", 0)
    module = graph_runtime.create(graph, lib, ctx)
    data = np.random.default_rng(1).uniform(size=(1, 3, 8, 8)).astype("float32")
    module.set_input("data", tvm.nd.array(data, ctx))
    module.set_input(**built_params)
    module.run()
    want = relay.create_executor("debug", mod=mod, target="llvm").evaluate()(data, params["w1"], params["w2"])
    np.testing.assert_allclose(module.get_output(0).asnumpy(), want.numpy(), rtol=1e-4, atol=1e-4)


def test_a_workload_other_than_the_tasks_own_cannot_be_set():
    mod, params = conv_then_depthwise()
    tsk = next(t for t in autotvm.task.extract_from_program(mod["main"], target="llvm", params=params,
                                                             ops=(relay.op.nn.conv2d,))
               if t.name == "conv2d_NCHWc.x86")
    with pytest.raises(TuneError, match="task conv2d_NCHWc.x86: its workload is its name and arguments"):
        tsk.workload = ("conv2d",) + tsk.args


def test_a_template_registered_under_an_old_name_is_the_one_created():
    def my_old_conv(n):
        a = tvm.te.placeholder((n,), name="a")
        b = tvm.te.compute((n,), lambda i: a[i] + 1.0, name="b")
        autotvm.get_config().define_knob("k", [1, 2, 3])
        return tvm.te.create_schedule(b.op), [a, b]

    autotvm.task.register("topi_x86_conv2d_NCHWc", my_old_conv)
    try:
        task = autotvm.task.create("topi_x86_conv2d_NCHWc", args=(4,), target="llvm")
        assert task.name == "topi_x86_conv2d_NCHWc" and len(task.config_space) == 3
    finally:
        dict.pop(autotvm.task.TASK_TABLE, "topi_x86_conv2d_NCHWc")
