"""A TVM user's template script, written against ``import tunecli as tvm``: a kernel whose schedule
reads its knobs from ``autotvm.get_config()`` (explicit lists of values, factor splits, candidate
splits), the space it defines and prints, every config run under ``autotvm.ApplyConfig``, a short
tuning run logged with ``log_to_file``, then the fastest logged config built under
``apply_history_best``.  Each built kernel must equal numpy."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

import tunecli as tvm
from tunecli import autotvm, te

ROWS, DEPTH, COLS = 24, 40, 48


def _product(rows: int, depth: int, cols: int, dtype: str) -> tuple:
    lhs = te.placeholder((rows, depth), name="lhs", dtype=dtype)
    rhs = te.placeholder((depth, cols), name="rhs", dtype=dtype)
    red = te.reduce_axis((0, depth), name="red")
    out = te.compute((rows, cols), lambda r, c: te.sum(lhs[r, red] * rhs[red, c], axis=red), name="out")
    return lhs, rhs, out, te.create_schedule(out.op)


@autotvm.template("faces/blocked_product")
def blocked_product(rows: int, depth: int, cols: int, dtype: str) -> tuple:
    """Rows and columns split in two by factor knobs; the inner column loop vectorized by a knob."""
    lhs, rhs, out, s = _product(rows, depth, cols, dtype)
    r, c = s[out].op.axis
    (red,) = s[out].op.reduce_axis
    cfg = autotvm.get_config()
    cfg.define_split("rows", r, num_outputs=2)
    cfg.define_split("cols", c, num_outputs=2)
    cfg.define_knob("vectorize", [0, 1])
    ro, ri = cfg["rows"].apply(s, out, r)
    co, ci = cfg["cols"].apply(s, out, c)
    s[out].reorder(ro, co, red, ri, ci)
    if cfg["vectorize"].val:
        s[out].vectorize(ci)
    return s, [lhs, rhs, out]


@autotvm.template("faces/listed_tiles")
def listed_tiles(rows: int, depth: int, cols: int, dtype: str) -> tuple:
    """Tile sizes taken from explicit lists (``define_knob``) and applied with ``split``."""
    lhs, rhs, out, s = _product(rows, depth, cols, dtype)
    r, c = s[out].op.axis
    cfg = autotvm.get_config()
    cfg.define_knob("row_tile", [1, 3, 6])
    cfg.define_knob("col_tile", [4, 8, 16, 48])
    ro, ri = s[out].split(r, cfg["row_tile"].val)
    co, ci = s[out].split(c, cfg["col_tile"].val)
    s[out].reorder(ro, co, ri, ci)
    return s, [lhs, rhs, out]


@autotvm.template("faces/candidate_tiles")
def candidate_tiles(rows: int, depth: int, cols: int, dtype: str) -> tuple:
    """Splits restricted to hand-picked candidates (``policy="candidate"``)."""
    lhs, rhs, out, s = _product(rows, depth, cols, dtype)
    r, c = s[out].op.axis
    cfg = autotvm.get_config()
    cfg.define_split("rows", r, num_outputs=2, policy="candidate", candidate=[[4, 6], [2, 12]])
    cfg.define_split("cols", c, num_outputs=2, policy="candidate", candidate=[[6, 8], [3, 16]])
    ro, ri = cfg["rows"].apply(s, out, r)
    co, ci = cfg["cols"].apply(s, out, c)
    s[out].reorder(ro, co, ri, ci)
    return s, [lhs, rhs, out]


def check(func: tvm.runtime.Module, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    lhs = rng.uniform(size=(ROWS, DEPTH)).astype("float32")
    rhs = rng.uniform(size=(DEPTH, COLS)).astype("float32")
    out = tvm.nd.empty((ROWS, COLS))
    func(tvm.nd.array(lhs), tvm.nd.array(rhs), out)
    tvm.testing.assert_allclose(out.numpy(), lhs @ rhs, rtol=1e-4)


def build_with(template: object, config: object) -> tuple:
    with tvm.target.Target("llvm"):
        with autotvm.ApplyConfig(config):
            s, args = template(ROWS, DEPTH, COLS, "float32")
        return tvm.build(s, args), str(tvm.lower(s, args, simple_mode=True))


def task_of(name: str) -> autotvm.task.Task:
    return autotvm.task.create(name, args=(ROWS, DEPTH, COLS, "float32"), target="llvm")


def test_the_spaces_print_their_knobs_as_tvm_does() -> None:
    assert str(task_of("faces/listed_tiles").config_space) == (
        "ConfigSpace (len=12, space_map=\n"
        "   0 row_tile: OtherOption([1, 3, 6]) len=3\n"
        "   1 col_tile: OtherOption([4, 8, 16, 48]) len=4\n"
        ")")
    space = task_of("faces/blocked_product").config_space
    # 24 has 8 divisors, 48 has 10: one two-way split per divisor
    assert len(space) == 8 * 10 * 2
    assert str(space).splitlines()[1] == "   0 rows: Split(policy=factors, product=24, num_outputs=2) len=8"
    assert str(space).splitlines()[3] == "   2 vectorize: OtherOption([0, 1]) len=2"


def test_the_first_knob_varies_fastest() -> None:
    space = task_of("faces/listed_tiles").config_space
    config = space.get(7)  # row_tile[7 % 3], col_tile[7 // 3]
    assert (config["row_tile"].val, config["col_tile"].val) == (3, 16)


def test_every_candidate_config_builds_the_tiles_it_names() -> None:
    space = task_of("faces/candidate_tiles").config_space
    assert len(space) == 4
    seen = set()
    for index in range(len(space)):
        config = space.get(index)
        seen.add((tuple(config["rows"].size), tuple(config["cols"].size)))
        func, text = build_with(candidate_tiles, config)
        assert f"for (c.inner, 0, {config['cols'].size[-1]})" in text
        check(func, index)
    assert seen == {(r, c) for r in [(4, 6), (2, 12)] for c in [(6, 8), (3, 16)]}


def test_sampled_configs_of_the_factor_space_equal_numpy() -> None:
    space = task_of("faces/blocked_product").config_space
    for index in (0, 17, 93, len(space) - 1):
        check(build_with(blocked_product, space.get(index))[0], index)


@pytest.mark.parametrize("tuner_class", ["GridSearchTuner", "RandomTuner", "GATuner", "XGBTuner"])
def test_tune_then_build_the_best_logged_config(tuner_class: str, tmp_path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    task = task_of("faces/blocked_product")
    log = str(tmp_path / "product.log")
    caplog.set_level(logging.DEBUG, logger="autotvm")
    option = autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=1),
                                    runner=autotvm.LocalRunner(number=3, repeat=1))
    tuner = getattr(autotvm.tuner, tuner_class)(task)
    tuner.tune(n_trial=5, measure_option=option, callbacks=[autotvm.callback.log_to_file(log)])

    records = list(autotvm.record.load_from_file(log))
    assert len(records) == 5 and len({inp.config.index for inp, _ in records}) == 5
    assert all(res.error_no == 0 for _, res in records)
    assert sum("GFLOPS" in r.getMessage() for r in caplog.records) >= 5
    fastest = min(records, key=lambda rec: np.mean(rec[1].costs))[0].config.index

    with autotvm.apply_history_best(log):
        with tvm.target.Target("llvm"):
            chosen = autotvm.DispatchContext.current.query(tvm.target.Target.current(), task.workload)
            s, args = blocked_product(ROWS, DEPTH, COLS, "float32")
            func = tvm.build(s, args)
    assert chosen.index == fastest
    check(func, 5)
