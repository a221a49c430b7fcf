"""Built-in autotvm templates: spaces, and configs that build and match the numpy reference."""

from __future__ import annotations

import pickle
import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.engine.template_cases import SEED_SPACE, SMALL_CASES
from tunecli.engine.build import build, lower
from tunecli.engine.ops import registry
from tunecli.engine.ops.tolerance import scaled_tolerance
from tunecli.engine.task import task as autotvm_task
from tunecli.errors import InstantiationError

INT8_CASES = {
    "dense.x86": (3, 16, 40, "int8"),
    "conv2d_nchw.x86": (1, 5, 5, 8, 16, 3, 3, 2, (1, 0), 1, "int8"),
    "depthwise_conv2d_nchw.x86": (1, 5, 5, 2, 1, 3, 3, 1, 1, 2, "int8"),
    "batch_matmul.x86": (("TENSOR", (1, 2, 32), "int8"), ("TENSOR", (1, 16, 32), "int8"), None, "int32"),
    "conv2d_NCHWc.x86": (("TENSOR", (1, 8, 5, 5), "int8"), ("TENSOR", (16, 8, 3, 3), "int8"), (2, 2),
                         (1, 0, 1, 0), (1, 1), "NCHW", "NCHW", "int32"),
    "dense_pack.x86": (("TENSOR", (3, 40), "int8"), ("TENSOR", (16, 40), "int8"), None, "int32"),
    "dense_nopack.x86": (("TENSOR", (3, 40), "int8"), ("TENSOR", (16, 40), "int8"), None, "int32"),
    "depthwise_conv2d_NCHWc.x86": (("TENSOR", (1, 8, 5, 5), "int8"), ("TENSOR", (8, 1, 3, 3), "int8"), (1, 1),
                                   (1, 1, 1, 1), (1, 1), "NCHW", "NCHW", "int32"),
}


def random_array(t, rng):
    if np.dtype(t.dtype).kind == "i":
        return rng.integers(-128, 128, size=t.shape).astype(t.dtype)
    return rng.standard_normal(t.shape).astype(t.dtype)


def check_config(task, index, rng):
    sch, bufs = task.instantiate(task.config_space.get(index))
    mod = build(sch, bufs, target="llvm")
    n_out = len(registry.get_strategy(task.name).outputs)
    inputs = [random_array(t, rng) for t in bufs[:-n_out]]
    outputs = [np.zeros(t.shape, dtype=t.dtype) for t in bufs[-n_out:]]
    mod(*inputs, *outputs)
    (want,) = outputs
    expected = task.reference(*inputs)
    rtol, atol = scaled_tolerance(expected, want.dtype)
    np.testing.assert_allclose(want, expected, rtol=rtol, atol=atol,
                               err_msg=f"{task.name} config {index}: {task.config_space.get(index)}")


def test_seed_tutorial_space_prints_exactly():
    task = autotvm_task.create("tutorial/conv2d_no_batching", args=(1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1)),
                               target="llvm")
    assert str(task.config_space) == SEED_SPACE
    assert len(task.config_space) == 10454400
    assert task.flop == 2 * 512 * 49 * 512 * 9


@pytest.mark.parametrize("name", registry.builtin_names())
def test_configs_build_and_match_reference(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    task = autotvm_task.create(name, SMALL_CASES[name], target="llvm")
    n = len(task.config_space)
    assert n > 1
    assert task.template_module == registry.__name__  # what a worker imports to find the template
    indices = {0, n - 1} | {int(i) for i in rng.integers(0, n, size=2)}  # test_epilogue builds 2 more
    for index in sorted(indices):
        check_config(task, index, rng)


@pytest.mark.parametrize("name", sorted(INT8_CASES))
def test_int8_templates_accumulate_in_int32(name):
    rng = np.random.default_rng(11)
    task = autotvm_task.create(name, INT8_CASES[name], target="llvm")
    _, bufs = task.instantiate(task.config_space.get(0))
    assert bufs[-1].dtype == "int32"
    for index in (0, int(rng.integers(len(task.config_space)))):
        check_config(task, index, rng)


def test_registry_names_and_flops():
    assert set(registry.builtin_names()) == set(SMALL_CASES)
    task = autotvm_task.create("dense.x86", (6, 32, 12, "float32"), "llvm")
    assert task.flop == 2 * 6 * 32 * 12
    task = autotvm_task.create("conv2d_nchw.x86", (1, 6, 5, 3, 32, 3, 3, 2, 1, 1, "float32"), "llvm")
    assert task.flop == 2 * 32 * 3 * 3 * 3 * 3 * 3  # OH=3, OW=3 with stride 2, pad 1


def test_space_sizes_are_sensible():
    sizes = {
        "dense.x86": (512, 512, 512, "float32"),
        "batch_matmul.x86": (("TENSOR", (8, 128, 64), "float32"), ("TENSOR", (8, 128, 64), "float32"), None,
                             "float32"),
        "conv2d_nchw.x86": (1, 56, 56, 64, 64, 3, 3, 1, 1, 1, "float32"),
        "depthwise_conv2d_nchw.x86": (1, 112, 112, 32, 1, 3, 3, 1, 1, 1, "float32"),
    }
    for name, args in sizes.items():
        n = len(autotvm_task.create(name, args, "llvm").config_space)
        assert 100 <= n <= 100_000, (name, n)


def test_dense_space_contains_the_register_tiled_kernel():
    task = autotvm_task.create("dense.x86", (64, 64, 64, "float32"), "llvm")
    space = task.config_space
    panels = {e.size[-1] for e in space.space_map["tile_x"].entities}
    assert panels == {16, 32, 64}
    knobs = [space.space_map["tile_y"].entities.index(next(e for e in space.space_map["tile_y"].entities
                                                          if e.size == [-1, 2, 4])),
             [e.size for e in space.space_map["tile_x"].entities].index([-1, 1, 32]),
             [e.size for e in space.space_map["tile_k"].entities].index([-1, 4]),
             [e.val for e in space.space_map["parallel"].entities].index(1), 1]
    cfg = space.get(space.knob2point(knobs))
    sch, bufs = task.instantiate(cfg)
    text = str(lower(sch, bufs))
    assert "packed_weight" in text and "parallel for" in text
    assert "T_dense_pack.local[float32 * 128]" in text  # MR x NR = 4 x 32 accumulators
    assert "vectorized for (x.c, 0, 32)" in text
    check_config(task, cfg.index, np.random.default_rng(0))


def test_task_pickles_and_finds_its_template_again():
    task = autotvm_task.create("depthwise_conv2d_nchw.x86", SMALL_CASES["depthwise_conv2d_nchw.x86"], "llvm")
    clone = pickle.loads(pickle.dumps(task))
    assert clone.name == task.name and clone.args == task.args
    sch, bufs = clone.instantiate(task.config_space.get(1))
    assert len(bufs) == 3


def test_make_args_by_name_position_and_defaults():
    assert registry.make_args("dense.x86", [4, 8, 16]) == (4, 8, 16, "float32")
    assert registry.make_args("conv2d_nchw.x86", {"N": 1, "H": 8, "W": 8, "CI": 3, "CO": 16, "KH": 3, "KW": 3,
                                                  "stride": [1, 1], "padding": 1}) == \
        (1, 8, 8, 3, 16, 3, 3, (1, 1), 1, 1, "float32")
    with pytest.raises(InstantiationError, match="missing arguments"):
        registry.make_args("dense.x86", {"M": 4})
    with pytest.raises(InstantiationError, match="unknown arguments"):
        registry.make_args("dense.x86", {"M": 4, "N": 4, "K": 4, "Q": 1})
    with pytest.raises(InstantiationError, match="no built-in template"):
        registry.get_strategy("nope.x86")


def test_tutorial_conv2d_rejects_batches():
    with pytest.raises(InstantiationError, match="batch size 1"):
        autotvm_task.create("tutorial/conv2d_no_batching", (2, 7, 7, 8, 8, 3, 3, (1, 1), (1, 1)), "llvm")


def test_builtin_tasks_carry_their_reference_which_survives_pickling():
    task = autotvm_task.create("dense.x86", (2, 16, 3), "llvm")
    clone = pickle.loads(pickle.dumps(task))
    rng = np.random.default_rng(5)
    a, w = rng.standard_normal((2, 3)).astype("float32"), rng.standard_normal((16, 3)).astype("float32")
    np.testing.assert_allclose(clone.reference(a, w), a @ w.T, rtol=1e-6)
    assert autotvm_task.Task("not.builtin", ()).reference is None


def test_readme_lists_the_builtin_templates():
    readme = Path(__file__).resolve().parents[3] / "README.md"
    assert registry.template_table() in readme.read_text()


def test_padding_knob_only_when_there_is_padding():
    def conv(padding):
        return "conv2d_nchw.x86", (1, 6, 6, 4, 16, 3, 3, 1, padding, 1, "float32")

    def depthwise(padding):
        return "depthwise_conv2d_nchw.x86", (1, 6, 6, 4, 1, 3, 3, 1, padding, 1, "float32")

    for make in (conv, depthwise):
        assert "compute_pad" not in autotvm_task.create(*make(0), "llvm").config_space.space_map
        assert "compute_pad" in autotvm_task.create(*make(1), "llvm").config_space.space_map


def test_tutorial_unroll_knobs_map_to_explicit_unrolling():
    task = autotvm_task.create("tutorial/conv2d_no_batching", (1, 4, 4, 8, 2, 3, 3, (1, 1), (1, 1)), "llvm")
    space = task.config_space
    dims = [len(s) for s in space.space_map.values()]
    base = [0] * len(dims)
    base[0] = dims[0] - 1  # tile_f = [-1, 1, 1, 8]: an 8-channel register tile
    texts = {}
    for step, explicit in [(0, 0), (1, 0), (2, 1)]:
        knobs = base[:6] + [step, explicit]
        sch, bufs = task.instantiate(space.get(space.knob2point(knobs)))
        texts[step, explicit] = str(lower(sch, bufs))
    assert "unrolled" not in texts[0, 0]
    assert texts[1, 0].count("unrolled for (ff.c") >= 1 and "unrolled for (ff.inner" not in texts[1, 0]
    assert "unrolled for (ff.inner" in texts[2, 1]
