"""The shipped package serves ResNet-18, MobileNet v1 and v2 on Zen 5 with Zen 5 records: every
workload of the three networks has one, in the channel blocks of the fallback config (the layouts
a build without the package runs, so the records add no layout transform between kernels), and
each Winograd record is faster than its direct twin's (a build keeps the Winograd kernels)."""

from __future__ import annotations

import pytest

from tunecli.engine.graph.extract import extract_from_program
from tunecli.engine.job.network_models import MODELS
from tunecli.engine.log import tophub
from tunecli.engine.log.history_best import package_config
from tunecli.engine.log.record import load_from_file
from tunecli.engine.target import Target
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.task import Task

ZEN5 = Target("llvm -mcpu=znver5")

#: No user package directory: the shipped package alone answers.
pytestmark = pytest.mark.usefixtures("shipped_package_only")


def network_tasks(name: str) -> list[Task]:
    """The tasks of a built-in network (224x224, batch 1) for a Zen 5 target, as its job extracts
    them (convolutions with their Winograd twins, dense layers)."""
    model = MODELS[name]
    mod, params = model.load(1, model.image_shape, "float32")
    return extract_from_program(mod["main"], target=ZEN5, params=params,
                                ops=["nn.conv2d", "nn.contrib_conv2d_NCHWc_winograd", "nn.dense"])


def zen5_records() -> dict[tuple, int]:
    return {inp.task.workload: inp.config.index for inp, _ in load_from_file(tophub.SHIPPED_DIR / "llvm.log")
            if str(inp.target) == str(ZEN5)}


def blocks(config) -> tuple[int, int]:
    return config["tile_ic"].size[-1], config["tile_oc"].size[-1]


@pytest.mark.parametrize("name", ["resnet-18", "mobilenet", "mobilenet_v2"])
def test_every_workload_has_a_zen5_record_in_the_fallbacks_channel_blocks(name: str):
    records = zen5_records()
    tasks = network_tasks(name)
    assert tasks
    for task in tasks:
        config = package_config(ZEN5, task.workload)
        assert config is not None and config.index == records.get(task.workload), task.workload
        if "tile_oc" in config:
            fallback = FallbackConfigEntity()
            with ZEN5:
                task.instantiate(fallback)
            assert blocks(config) == blocks(fallback), task.workload


def test_resnet18_winograd_records_beat_their_direct_twins_on_zen5():
    tasks = network_tasks("resnet-18")
    winograd = [t for t in tasks if t.name == "conv2d_NCHWc_winograd.x86"]
    assert len(winograd) == 4
    for task in winograd:
        direct = ("conv2d_NCHWc.x86",) + task.workload[1:]
        assert package_config(ZEN5, task.workload).cost < package_config(ZEN5, direct).cost, task.workload
