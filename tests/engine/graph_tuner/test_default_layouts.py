"""The default-layout candidates of a convolution whose fallback config lies outside its space."""

from __future__ import annotations

from tunecli.engine.graph_tuner.default_layouts import default_layout_configs
from tunecli.engine.target import Target
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.task import create

#: A 1x1 stride-2 convolution with a 4x4 output (ResNet-18's 128 -> 256 shortcut at a 64x64 input):
#: its fallback's tile_oh is 4, the knob offers 1 and 2.
WORKLOAD = (("TENSOR", (1, 128, 8, 8), "float32"), ("TENSOR", (256, 128, 1, 1), "float32"),
            (2, 2), (0, 0, 0, 0), (1, 1), "NCHW", "NCHW", "float32")


def test_a_fallback_value_outside_the_knob_takes_the_nearest_one() -> None:
    with Target("llvm"):
        task = create("conv2d_NCHWc.x86", WORKLOAD, "llvm")
        fallback = FallbackConfigEntity()
        task.instantiate(fallback)
        assert fallback["tile_oh"].val not in [e.val for e in task.config_space.space_map["tile_oh"].entities]
        record = task.config_space.get(0)
        configs = default_layout_configs(task, [record])
    assert configs[0]["tile_oh"].val == 2
    for cfg in configs:
        assert [cfg[k].size[-1] for k in ("tile_ic", "tile_oc")] == \
               [fallback[k].size[-1] for k in ("tile_ic", "tile_oc")]
    assert configs[0]["tile_ow"].size[-1] == fallback["tile_ow"].size[-1]
    assert configs[-1]["tile_oh"].val == record["tile_oh"].val
