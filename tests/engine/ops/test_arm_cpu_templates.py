"""TVM's ARM templates (``conv2d_nchw_spatial_pack.arm_cpu``, ``depthwise_conv2d_nchw.arm_cpu``):
their knobs and TVM's logs.

The records are lines of TVM's pre-tuned ``arm_cpu`` log (tophub ``arm_cpu_v0.08.log``); their
config index must denote the entity they log, as in TVM, and the config must build and compute
the convolution.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from tunecli.engine.build import build
from tunecli.engine.ops import registry
from tunecli.engine.task.task import create

AARCH64 = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon"
#: From TVM's arm_cpu tophub log: a 7x7 stride-2 convolution (index 58242) and a 1x1 one.
TVM_RECORDS = [
    {"input": ["llvm -device=arm_cpu -model=bcm2837 -mtriple=armv7l-linux-gnueabihf -mattr=+neon",
               "conv2d_nchw_spatial_pack.arm_cpu",
               [["TENSOR", [1, 3, 224, 224], "float32"], ["TENSOR", [64, 3, 7, 7], "float32"], [2, 2],
                [3, 3, 3, 3], [1, 1], "float32"], {}],
     "config": {"index": 58242, "code_hash": None, "entity": [
         ["tile_co", "sp", [16, 4]], ["tile_oh", "sp", [112, 1]], ["tile_ow", "sp", [28, 4]],
         ["reorder_0", "re", [0, 1, 2, 3, 4, 5, 6, 9, 7, 8]], ["ann_reduce", "an", ["none", "unroll"]],
         ["ann_spatial", "an", ["unroll", "none", "vec"]]]}},
    {"input": ["llvm -device=arm_cpu -model=bcm2837 -mtriple=armv7l-linux-gnueabihf -mattr=+neon",
               "conv2d_nchw_spatial_pack.arm_cpu",
               [["TENSOR", [1, 1024, 14, 14], "float32"], ["TENSOR", [512, 1024, 1, 1], "float32"], [1, 1],
                [0, 0, 0, 0], [1, 1], "float32"], {}],
     "config": {"index": 3733, "code_hash": None, "entity": [
         ["tile_co", "sp", [64, 8]], ["tile_oh", "sp", [7, 2]], ["tile_ow", "sp", [7, 2]],
         ["reorder_0", "re", [0, 1, 2, 3, 4, 5, 6, 9, 7, 8]], ["ann_reduce", "an", ["unroll", "unroll"]],
         ["ann_spatial", "an", ["none", "none", "vec"]]]}},
    {"input": ["llvm -device=arm_cpu -model=bcm2837 -mtriple=armv7l-linux-gnueabihf -mattr=+neon",
               "depthwise_conv2d_nchw.arm_cpu",
               [["TENSOR", [1, 960, 7, 7], "float32"], ["TENSOR", [960, 1, 3, 3], "float32"], [1, 1],
                [1, 1, 1, 1], [1, 1], "float32"], {}],
     "config": {"index": 1513, "code_hash": None, "entity": [
         ["tile_c", "sp", [480, 2]], ["tile_h", "sp", [7, 1]], ["tile_w", "sp", [1, 7]],
         ["ann", "an", ["unroll", "unroll", "vec"]]]}},
    {"input": ["llvm -device=arm_cpu -model=bcm2837 -mtriple=armv7l-linux-gnueabihf -mattr=+neon",
               "depthwise_conv2d_nchw.arm_cpu",
               [["TENSOR", [1, 576, 14, 14], "float32"], ["TENSOR", [576, 1, 3, 3], "float32"], [2, 2],
                [1, 1, 1, 1], [1, 1], "float32"], {}],
     "config": {"index": 864, "code_hash": None, "entity": [
         ["tile_c", "sp", [144, 4]], ["tile_h", "sp", [1, 7]], ["tile_w", "sp", [7, 1]],
         ["ann", "an", ["unroll", "none", "vec"]]]}},
]


@pytest.mark.parametrize("record", TVM_RECORDS, ids=["conv7x7s2", "conv1x1", "depthwise", "depthwise_s2"])
def test_tvm_arm_cpu_records_decode_to_the_logged_entities(record):
    name, args = record["input"][1], record["input"][2]
    task = create(name, args=args, target=AARCH64)
    got = [list(k) for k in task.config_space.get(record["config"]["index"]).to_json_dict()["entity"]]
    logged = record["config"]["entity"]
    assert [k[:2] for k in got] == [k[:2] for k in logged]
    for (knob, kind, value), (_, _, want) in zip(got, logged, strict=True):
        value = list(value)
        if kind == "sp":  # TVM 0.7 wrote the outer factor, later versions (and we) write -1
            assert value[1:] == want[1:] and value[0] in (-1, want[0]), knob
        else:
            assert value == want, knob


def test_an_aarch64_target_selects_the_arm_template_for_conv2d_and_the_cpu_one_for_dense():
    select = registry.STRATEGIES.select
    assert select("conv2d_nchw", AARCH64).name == "conv2d_nchw_spatial_pack.arm_cpu"
    assert select("conv2d_nchw", "llvm").name == "conv2d_nchw.x86"
    assert select("depthwise_conv2d_nchw", AARCH64).name == "depthwise_conv2d_nchw.arm_cpu"
    assert select("dense", AARCH64).name == "dense.x86"  # TVM: dense falls back to cpu


@pytest.mark.parametrize(("name", "kernel", "strides", "padding", "dilation", "index"), [
    ("conv2d_nchw_spatial_pack.arm_cpu", (6, 4, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 5),
    ("conv2d_nchw_spatial_pack.arm_cpu", (6, 4, 3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 17),
    ("depthwise_conv2d_nchw.arm_cpu", (4, 2, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 7),
    ("depthwise_conv2d_nchw.arm_cpu", (4, 1, 3, 3), (1, 1), (0, 0, 0, 0), (2, 2), 11),
])
def test_strided_and_dilated_configs_match_numpy(name, kernel, strides, padding, dilation, index):
    args = (("TENSOR", (1, 4, 10, 10), "float32"), ("TENSOR", kernel, "float32"), strides, padding,
            dilation, "float32")
    task = create(name, args=args, target="llvm")
    sch, bufs = task.instantiate(task.config_space.get(index))
    mod = build(sch, bufs, target="llvm")
    rng = np.random.default_rng(index)
    data, kernel = (rng.standard_normal(tuple(t.shape)).astype("float32") for t in bufs[:2])
    out = np.zeros(tuple(bufs[2].shape), "float32")
    mod(data, kernel, out)
    np.testing.assert_allclose(out, task.reference(data, kernel), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("record", [TVM_RECORDS[1], TVM_RECORDS[2]], ids=["conv1x1", "depthwise"])
def test_tvm_arm_cpu_records_build_neon_code_for_aarch64(record):
    task = create(record["input"][1], args=record["input"][2], target=AARCH64)
    with task.target:
        sch, bufs = task.instantiate(task.config_space.get(record["config"]["index"]))
    mod = build(sch, bufs, target=task.target)
    assert int.from_bytes(mod.object_bytes()[18:20], "little") == 183  # EM_AARCH64
    assert re.search(r"\bv\d+\.[24]s\b", mod.get_source("asm"))  # NEON vector registers
