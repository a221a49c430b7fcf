"""Port of TVM's tutorial ``gallery/tutorial/autotvm_matmul_x86.py`` (and its predecessor
``tutorials/autotvm/tune_simple_template.py``) with ``import tvm`` changed to ``import tunecli``.

The templates below are the tutorial's text.  Edits other than imports are marked ``# EDIT:``:

* template names get a ``tvm_port/`` prefix instead of ``tutorial/`` — tunecli's own job engine
  registers ``tutorial/matmul`` (``tunecli.engine.ops.tutorial``) and other tests import it into
  the same pytest process; TVM, like tunecli, refuses a second template under one name;
* the sizes are 32 (the tutorial uses 512) and tuning makes few trials, to keep tests quick;
* the tutorial's ``print`` calls become assertions on what it prints.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import pytest

import tunecli as tvm
import tunecli.testing  # noqa: F401  (the tutorial's ``import tvm.testing``)
from tunecli import autotvm, te

# The tutorial's first template: a fixed split factor of 8, no autotvm.


def matmul_basic(N: int, L: int, M: int, dtype: str) -> tuple:
    """The tutorial's ``matmul_basic``."""
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)

    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)

    # schedule
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]

    yo, yi = s[C].split(y, 8)
    xo, xi = s[C].split(x, 8)

    s[C].reorder(yo, xo, k, yi, xi)

    return s, [A, B, C]


# Matmul V1: List candidate values
@autotvm.template("tvm_port/matmul_v1")  # 1. use a decorator  # EDIT: template name
def matmul_v1(N: int, L: int, M: int, dtype: str) -> tuple:
    """The tutorial's ``matmul_v1``: two ``define_knob`` tile sizes."""
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)

    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)

    # schedule
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]

    # 2. get the config object
    cfg = autotvm.get_config()

    # 3. define search space
    cfg.define_knob("tile_y", [1, 2, 4, 8, 16])
    cfg.define_knob("tile_x", [1, 2, 4, 8, 16])

    # 4. schedule according to config
    yo, yi = s[C].split(y, cfg["tile_y"].val)
    xo, xi = s[C].split(x, cfg["tile_x"].val)

    s[C].reorder(yo, xo, k, yi, xi)

    return s, [A, B, C]


@autotvm.template("tvm_port/matmul")  # EDIT: template name
def matmul(N: int, L: int, M: int, dtype: str) -> tuple:
    """The tutorial's ``matmul``: ``define_split`` knobs applied with ``cfg[...].apply``."""
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)

    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)

    # schedule
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]

    ##### define space begin #####
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    ##### define space end #####

    # schedule according to config
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)

    s[C].reorder(yo, xo, k, yi, xi)

    return s, [A, B, C]


# EDIT: not in the tutorial — its ``matmul`` with ``policy="candidate"`` splits (the
# ``define_split`` policy the tutorial's API reference describes), to port that form too.
@autotvm.template("tvm_port/matmul_candidate")
def matmul_candidate(N: int, L: int, M: int, dtype: str) -> tuple:
    """``matmul`` whose splits are chosen from explicit candidate lists."""
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)

    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)

    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]

    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2, policy="candidate", candidate=[[N // 8, 8], [N // 4, 4]])
    cfg.define_split("tile_x", x, num_outputs=2, policy="candidate",
                     candidate=[[M // 16, 16], [M // 8, 8], [1, M]])

    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)

    s[C].reorder(yo, xo, k, yi, xi)

    return s, [A, B, C]


N, L, M = 32, 32, 32  # EDIT: the tutorial's 512 x 512 x 512 made small


def _inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random ``A``, ``B`` and numpy's ``A @ B``."""
    rng = np.random.default_rng(seed)
    a_np = rng.uniform(size=(N, L)).astype(np.float32)
    b_np = rng.uniform(size=(L, M)).astype(np.float32)
    return a_np, b_np, a_np.dot(b_np)


def test_matmul_basic_builds_and_matches_numpy() -> None:
    """The fixed-split ``matmul_basic`` lowers with 8-wide tiles and computes ``A @ B``."""
    s, arg_bufs = matmul_basic(N, L, M, "float32")
    text = str(tvm.lower(s, arg_bufs, simple_mode=True))
    # the split factor 8 of the tutorial shows as inner loops of extent 8 under outer loops of 32 / 8
    assert "for (i.outer, 0, 4)" in text and "for (j.inner, 0, 8)" in text
    func = tvm.build(s, arg_bufs)
    a_np, b_np, c_np = _inputs()
    c_tvm = tvm.nd.empty(c_np.shape)
    func(tvm.nd.array(a_np), tvm.nd.array(b_np), c_tvm)
    tvm.testing.assert_allclose(c_np, c_tvm.numpy(), rtol=1e-4)


def test_matmul_v1_space_is_five_by_five() -> None:
    """``matmul_v1``'s two knobs span 5 x 5 configs, indexed with the first knob fastest."""
    task = autotvm.task.create("tvm_port/matmul_v1", args=(N, L, M, "float32"), target="llvm")
    assert str(task.config_space) == (
        "ConfigSpace (len=25, space_map=\n"
        "   0 tile_y: OtherOption([1, 2, 4, 8, 16]) len=5\n"
        "   1 tile_x: OtherOption([1, 2, 4, 8, 16]) len=5\n"
        ")")
    config = task.config_space.get(7)  # the first knob varies fastest: tile_y[7 % 5], tile_x[7 // 5]
    assert (config["tile_y"].val, config["tile_x"].val) == (4, 2)


def test_matmul_space_prints_like_tvm() -> None:
    """``print(task.config_space)`` of ``matmul`` reads as TVM's, with the tutorial's sizes."""
    # "for a 512x512 square matrix multiplication, the space size is 10x10=100"
    task = autotvm.task.create("tvm_port/matmul", args=(512, 512, 512, "float32"), target="llvm")
    assert len(task.config_space) == 100
    task = autotvm.task.create("tvm_port/matmul", args=(N, L, M, "float32"), target="llvm")
    # for a length-32 axis the six 2-way splits the tutorial lists: (32, 1), (16, 2), ... (1, 32)
    assert str(task.config_space) == (
        "ConfigSpace (len=36, space_map=\n"
        "   0 tile_y: Split(policy=factors, product=32, num_outputs=2) len=6\n"
        "   1 tile_x: Split(policy=factors, product=32, num_outputs=2) len=6\n"
        ")")
    sizes = sorted(tuple(task.config_space.get(i)["tile_y"].size) for i in range(6))
    assert sizes == [(-1, 1), (-1, 2), (-1, 4), (-1, 8), (-1, 16), (-1, 32)]


def test_candidate_policy_space_and_every_config_builds() -> None:
    """``policy=\"candidate\"`` splits enumerate exactly the candidates; each config is correct."""
    task = autotvm.task.create("tvm_port/matmul_candidate", args=(N, L, M, "float32"), target="llvm")
    assert str(task.config_space) == (
        "ConfigSpace (len=6, space_map=\n"
        "   0 tile_y: Split(policy=candidate, product=32, num_outputs=2) len=2\n"
        "   1 tile_x: Split(policy=candidate, product=32, num_outputs=2) len=3\n"
        ")")
    a_np, b_np, c_np = _inputs(1)
    seen = set()
    for index in range(len(task.config_space)):
        config = task.config_space.get(index)
        seen.add((tuple(config["tile_y"].size), tuple(config["tile_x"].size)))
        with tvm.target.Target("llvm"):
            with autotvm.ApplyConfig(config):
                s, arg_bufs = matmul_candidate(N, L, M, "float32")
            func = tvm.build(s, arg_bufs)
        inner_x = config["tile_x"].size[-1]
        assert f"for (j.inner, 0, {inner_x})" in str(tvm.lower(s, arg_bufs, simple_mode=True))
        c_tvm = tvm.nd.empty(c_np.shape)
        func(tvm.nd.array(a_np), tvm.nd.array(b_np), c_tvm)
        tvm.testing.assert_allclose(c_np, c_tvm.numpy(), rtol=1e-4)
    assert seen == {(y, x) for y in [(4, 8), (8, 4)] for x in [(2, 16), (4, 8), (1, 32)]}


def _best_in_log(path: str) -> tuple[int, float]:
    """Index and mean cost of the fastest error-free record (read here, not through autotvm)."""
    best = None
    for inp, res in autotvm.record.load_from_file(path):
        if res.error_no == 0:
            cost = float(np.mean(res.costs))
            if best is None or cost < best[1]:
                best = (inp.config.index, cost)
    assert best is not None, f"{path}: no successful measurement"
    return best


@pytest.mark.parametrize("tuner_name", ["RandomTuner", "XGBTuner"])
def test_tune_then_apply_history_best(tuner_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      caplog: pytest.LogCaptureFixture) -> None:
    """The tutorial's tuning run, then ``apply_history_best`` builds the fastest logged config."""
    monkeypatch.chdir(tmp_path)  # EDIT: the tutorial writes matmul.log into the working directory
    task = autotvm.task.create("tvm_port/matmul", args=(N, L, M, "float32"), target="llvm")
    print(task.config_space)

    # EDIT: added — caplog records the messages and restores the logger's level afterwards
    caplog.set_level(logging.DEBUG, logger="autotvm")
    # logging config (for printing tuning log to the screen)
    logging.getLogger("autotvm").setLevel(logging.DEBUG)
    handler = logging.StreamHandler(sys.stdout)
    logging.getLogger("autotvm").addHandler(handler)

    measure_option = autotvm.measure_option(builder="local", runner=autotvm.LocalRunner(number=5))

    # Begin tuning with RandomTuner, log records to file `matmul.log`
    # You can use alternatives like XGBTuner.
    tuner = getattr(autotvm.tuner, tuner_name)(task)
    try:
        tuner.tune(
            n_trial=6,  # EDIT: 10 in the tutorial
            measure_option=measure_option,
            callbacks=[autotvm.callback.log_to_file("matmul.log")],
        )
    finally:
        logging.getLogger("autotvm").removeHandler(handler)  # EDIT: keep other tests' logging clean

    records = list(autotvm.record.load_from_file("matmul.log"))
    assert len(records) == 6
    assert len({inp.config.index for inp, _ in records}) == 6  # no config measured twice
    assert sum("GFLOPS" in r.getMessage() for r in caplog.records) == 6
    best_index, _ = _best_in_log("matmul.log")

    # apply history best from log file
    with autotvm.apply_history_best("matmul.log"):
        with tvm.target.Target("llvm"):
            s, arg_bufs = matmul(N, L, M, "float32")
            func = tvm.build(s, arg_bufs)
        # EDIT: added — the config the template ran with is the fastest one in the log
        assert autotvm.DispatchContext.current.query(tvm.target.Target("llvm"), task.workload).index \
            == best_index

    # check correctness
    a_np = np.random.uniform(size=(N, L)).astype(np.float32)
    b_np = np.random.uniform(size=(L, M)).astype(np.float32)
    c_np = a_np.dot(b_np)

    c_tvm = tvm.nd.empty(c_np.shape)
    func(tvm.nd.array(a_np), tvm.nd.array(b_np), c_tvm)

    tvm.testing.assert_allclose(c_np, c_tvm.numpy(), rtol=1e-4)
