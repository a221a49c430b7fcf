"""AutoTVM habits of TVM scripts: a template that refuses some configs by raising
``autotvm.task.space.InstantiationError`` (measured as that error, tuning goes on), records
written to an open file object and decoded back into ``ApplyHistoryBest``, and a dispatch context
of the user's own (``_query_inside``) choosing the config a template builds with."""

from __future__ import annotations

import io

import numpy as np

import tunecli as tvm
from tunecli import autotvm, te

NAME = "tvm_ports/picky_scale"


@autotvm.template(NAME)
def picky_scale(n):
    a = te.placeholder((n,), name="a")
    b = te.compute((n,), lambda i: a[i] * 3.0, name="b")
    s = te.create_schedule(b.op)
    cfg = autotvm.get_config()
    cfg.define_split("tile", b.op.axis[0], num_outputs=2)
    if isinstance(cfg, autotvm.task.space.ConfigEntity) and cfg["tile"].size[-1] == 1:  # not while collecting
        raise autotvm.task.space.InstantiationError("an inner loop of one element is not worth measuring")
    outer, inner = cfg["tile"].apply(s, b, b.op.axis[0])
    s[b].vectorize(inner)
    return s, [a, b]


def measure():
    return autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                  runner=autotvm.LocalRunner(number=2, repeat=1, timeout=20))


def test_refused_configs_are_instantiation_errors_and_records_go_to_a_file_object():
    task = autotvm.task.create(NAME, args=(64,), target="llvm")
    records = io.StringIO()
    autotvm.tuner.GridSearchTuner(task).tune(n_trial=3, measure_option=measure(),
                                             callbacks=[autotvm.callback.log_to_file(records)])
    decoded = [autotvm.record.decode(line) for line in records.getvalue().splitlines()]
    assert len(decoded) == 3
    by_index = {inp.config.index: res.error_no for inp, res in decoded}
    assert by_index[0] == autotvm.MeasureErrorNo.INSTANTIATION_ERROR  # tile [-1, 1]
    assert by_index[1] == by_index[2] == autotvm.MeasureErrorNo.NO_ERROR
    with autotvm.ApplyHistoryBest(decoded), tvm.target.Target("llvm"):
        s, args = picky_scale(64)
    f = tvm.build(s, args, "llvm")
    x = np.arange(64, dtype="float32")
    out = tvm.nd.empty((64,))
    f(tvm.nd.array(x), out)
    np.testing.assert_allclose(out.numpy(), x * 3.0)


def test_a_dispatch_context_of_the_users_own():
    task = autotvm.task.create(NAME, args=(64,), target="llvm")
    wanted = task.config_space.get(4)

    class Always(autotvm.task.DispatchContext):
        def _query_inside(self, target, workload):
            return wanted

    with Always(), tvm.target.Target("llvm"):
        s, args = picky_scale(64)
    inner = wanted["tile"].size[-1]
    assert f"vectorized for (i.inner, 0, {inner})" in str(tvm.lower(s, args))
