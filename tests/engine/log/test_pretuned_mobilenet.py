"""The shipped package serves MobileNet v1 on Zen 5: every 1x1 and depthwise convolution after the
stem gets a Zen 5 record with 32-channel blocks in and out (two AVX-512 vectors, one layout through
the network), while a Zen 4 target keeps the Zen 4 records."""

from __future__ import annotations

import pytest

from tunecli.engine.graph.extract import extract_from_program
from tunecli.engine.job.network_models import MODELS
from tunecli.engine.log import tophub
from tunecli.engine.log.history_best import package_config
from tunecli.engine.log.record import load_from_file
from tunecli.engine.target import Target

#: No user package directory: the shipped package alone answers.
pytestmark = pytest.mark.usefixtures("shipped_package_only")


def mobilenet_v1_layers(target: Target) -> list:
    """MobileNet v1's 1x1 and depthwise convolution tasks (224x224, batch 1) for ``target``."""
    model = MODELS["mobilenet"]
    mod, params = model.load(1, model.image_shape, "float32")
    tasks = extract_from_program(mod["main"], target=target, params=params)
    return [t for t in tasks if t.name == "depthwise_conv2d_NCHWc.x86"
            or (t.name == "conv2d_NCHWc.x86" and t.args[1][1][2:] == (1, 1))]


def channel_blocks(target: Target, task) -> tuple[int, int]:
    config = package_config(target, task.workload)
    assert config is not None, task.workload
    return config["tile_ic"].size[-1], config["tile_oc"].size[-1]


def test_mobilenet_v1_layers_take_32_channel_blocks_from_the_package_on_zen5():
    target = Target("llvm -mcpu=znver5")
    layers = mobilenet_v1_layers(target)
    assert len({t.workload for t in layers}) == 18
    assert {channel_blocks(target, t) for t in layers} == {(32, 32)}


def test_a_zen4_target_keeps_the_zen4_records_of_those_layers():
    target = Target("llvm -mcpu=znver4")
    zen4 = {inp.task.workload: inp.config.index for inp, _ in load_from_file(tophub.SHIPPED_DIR / "llvm.log")
            if str(inp.target) == str(target)}
    for task in mobilenet_v1_layers(target):
        assert package_config(target, task.workload).index == zen4[task.workload], task.workload
