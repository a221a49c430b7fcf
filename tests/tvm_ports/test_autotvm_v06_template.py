"""TVM 0.6's template form (its tune_simple_template tutorial): the bare decorator
``@autotvm.template`` makes the function itself the template, named after the function;
``autotvm.task.create(func, args=(...), target=...)`` takes the function in place of a name; the
tuned log applies when the function is called under ``apply_history_best``."""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli import autotvm
from tunecli.errors import TuneError


@autotvm.template
def matmul_v06(N, L, M, dtype):
    lhs = tvm.te.placeholder((N, L), name="lhs", dtype=dtype)
    rhs = tvm.te.placeholder((L, M), name="rhs", dtype=dtype)
    red = tvm.te.reduce_axis((0, L), name="red")
    out = tvm.te.compute((N, M), lambda r, c: tvm.te.sum(lhs[r, red] * rhs[red, c], axis=red), name="out")
    sch = tvm.te.create_schedule(out.op)
    rows, cols = sch[out].op.axis
    conf = autotvm.get_config()
    conf.define_split("rows", rows, num_outputs=2)
    conf.define_split("cols", cols, num_outputs=2)
    conf.define_knob("unroll_inner", [0, 1])
    row_outer, row_inner = conf["rows"].apply(sch, out, rows)
    col_outer, col_inner = conf["cols"].apply(sch, out, cols)
    sch[out].reorder(row_outer, col_outer, sch[out].op.reduce_axis[0], row_inner, col_inner)
    if conf["unroll_inner"].val:
        sch[out].unroll(row_inner)
    return sch, [lhs, rhs, out]


def scale_v06(n):
    """A plain function (no decorator): TVM 0.6's ``create`` registered it under its name."""
    a = tvm.te.placeholder((n,), name="a")
    b = tvm.te.compute((n,), lambda i: a[i] * 2.0, name="b")
    s = tvm.te.create_schedule(b.op)
    cfg = autotvm.get_config()
    cfg.define_knob("vec", [0, 1])
    if cfg["vec"].val:
        s[b].vectorize(b.op.axis[0])
    return s, [a, b]


def test_the_bare_decorator_names_the_task_after_the_function_and_tunes_and_applies(tmp_path):
    N = L = M = 16
    task = autotvm.task.create(matmul_v06, args=(N, L, M, "float32"), target="llvm")
    assert task.name == "matmul_v06" == matmul_v06.func_name
    assert task.workload == ("matmul_v06", N, L, M, "float32")
    assert len(task.config_space) == 5 * 5 * 2
    assert task.config_space.template_key == ""

    log = str(tmp_path / "matmul.log")
    measure_option = autotvm.measure_option(builder="local",
                                            runner=autotvm.LocalRunner(number=2, repeat=1, timeout=20))
    tuner = autotvm.tuner.RandomTuner(task)
    tuner.tune(n_trial=3, measure_option=measure_option, callbacks=[autotvm.callback.log_to_file(log)])

    best = max((r for r in autotvm.record.load_from_file(log) if r[1].error_no == 0),
               key=lambda r: -np.mean(r[1].costs))
    with autotvm.apply_history_best(log):
        with tvm.target.create("llvm"):
            s, arg_bufs = matmul_v06(N, L, M, "float32")
            func = tvm.build(s, arg_bufs)
    s_best, args_best = task.instantiate(best[0].config)
    assert str(tvm.lower(s, arg_bufs)) == str(tvm.lower(s_best, args_best))
    a = np.random.uniform(size=(N, L)).astype("float32")
    b = np.random.uniform(size=(L, M)).astype("float32")
    c = tvm.nd.empty((N, M))
    func(tvm.nd.array(a), tvm.nd.array(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)


def test_create_registers_a_plain_function_under_its_name():
    task = autotvm.task.create(scale_v06, args=(32,), target="llvm", template_key="direct")
    assert task.name == "scale_v06"
    assert len(task.config_space) == 2
    assert task.config_space.template_key == "direct"
    assert autotvm.task.create("scale_v06", args=(32,), target="llvm").workload == ("scale_v06", 32)


def test_a_template_variant_other_than_direct_is_refused():
    # TVM 0.6's tune_relay_cuda tries create(name, args, target, target_host, "winograd") in a try block
    with pytest.raises(TuneError, match="template_key 'winograd'"):
        autotvm.task.create("scale_v06", (32,), "llvm", None, "winograd")


def test_create_refuses_a_function_whose_name_another_template_holds():
    def matmul_v06(n):  # same name, another function
        raise AssertionError("never traced")

    with pytest.raises(TuneError, match="already registered"):
        autotvm.task.create(matmul_v06, args=(4,), target="llvm")
