"""A TVM user's tunable operator written the TOPI way: ``@autotvm.register_topi_compute`` of a
compute taking ``cfg`` first and ``@autotvm.register_topi_schedule`` of its schedule.  Called
without a config (the fallback's), inside ``apply_history_best`` (the log's best), and tuned as a
task created from tensor arguments; the kernels equal numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tunecli as tvm
from tunecli import autotvm, te
from tunecli.errors import TuneError

TASK = "tvm_ports/scaled_matmul.x86"


@autotvm.register_topi_compute(TASK)
def scaled_matmul(cfg, a, b, scale):
    k = te.reduce_axis((0, a.shape[1]), name="k")
    cfg.define_split("tile_j", b.shape[1], num_outputs=2)
    cfg.define_knob("unroll_inner", [0, 1])
    return te.compute((a.shape[0], b.shape[1]), lambda i, j: te.sum(a[i, k] * b[k, j] * scale, axis=k),
                      name="scaled_matmul")


@autotvm.register_topi_schedule(TASK)
def schedule_scaled_matmul(cfg, outs):
    out = outs[0]
    s = te.create_schedule(out.op)
    i, j = s[out].op.axis
    jo, ji = cfg["tile_j"].apply(s, out, j)
    s[out].reorder(i, jo, s[out].op.reduce_axis[0], ji)
    s[out].vectorize(ji)
    if cfg["unroll_inner"].val:
        s[out].unroll(s[out].op.reduce_axis[0])
    return s


def operands():
    return te.placeholder((8, 16), name="a"), te.placeholder((16, 32), name="b")


def run(s, a, b, out):
    f = tvm.build(s, [a, b, out], "llvm")
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((8, 16)).astype("float32"), rng.standard_normal((16, 32)).astype("float32")
    z = tvm.nd.empty((8, 32))
    f(tvm.nd.array(x), tvm.nd.array(y), z)
    np.testing.assert_allclose(z.numpy(), x @ y * 0.5, rtol=1e-4, atol=1e-5)


def test_called_like_a_topi_operator_under_the_fallback_config():
    a, b = operands()
    with tvm.target.Target("llvm"):
        out = scaled_matmul(a, b, 0.5)
        assert out.op.attrs["workload"][0] == TASK
        run(schedule_scaled_matmul([out]), a, b, out)


def test_tuned_as_a_task_then_applied_from_the_log(tmp_path: Path):
    args = (("TENSOR", (8, 16), "float32"), ("TENSOR", (16, 32), "float32"), 0.5)
    task = autotvm.task.create(TASK, args=args, target="llvm")
    assert len(task.config_space) == 6 * 2  # 32 splits six ways, two unroll choices
    log = tmp_path / "scaled.log"
    measure = autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                     runner=autotvm.LocalRunner(number=2, repeat=1, timeout=20))
    autotvm.tuner.GridSearchTuner(task).tune(n_trial=4, measure_option=measure,
                                             callbacks=[autotvm.callback.log_to_file(str(log))])
    records = list(autotvm.record.load_from_file(str(log)))
    assert len(records) == 4 and all(res.error_no == 0 for _, res in records)
    best_index = min(records, key=lambda r: np.mean(r[1].costs))[0].config.index
    a, b = operands()
    with autotvm.apply_history_best(str(log)), tvm.target.Target("llvm"):
        out = scaled_matmul(a, b, 0.5)
        cfg = autotvm.task.DispatchContext.current.query(tvm.target.Target("llvm"), out.op.attrs["workload"])
        assert cfg.index == best_index
        run(schedule_scaled_matmul([out]), a, b, out)


def test_a_schedule_of_outputs_the_compute_did_not_make_is_refused():
    a, b = operands()
    k = te.reduce_axis((0, 16), name="k")
    plain = te.compute((8, 32), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="plain")
    with tvm.target.Target("llvm"), pytest.raises(TuneError, match="no workload"):
        schedule_scaled_matmul([plain])
