"""ResNet at ImageNet size: TVM's layer names and the conv2d workloads of TVM's tophub log."""

from __future__ import annotations

import json

from tests.engine.autotvm_templates import tophub_dir
from tunecli.engine import graph as g
from tunecli.engine.graph.models import resnet
from tunecli.engine.graph.ops.conv import conv2d_padding


def _conv_workloads(mod: g.IRModule) -> set[tuple]:
    found = set()
    for node in g.post_order(mod["main"]):
        if isinstance(node, g.Call) and node.op.name == "nn.conv2d":
            data, weight = node.args[0].checked_type, node.args[1].checked_type
            pads = conv2d_padding(node.attrs, weight.shape[2:])
            found.add((data.shape, weight.shape, node.attrs.strides, pads, node.attrs.dilation))
    return found


def _tophub_conv_workloads() -> set[tuple]:
    found = set()
    for line in (tophub_dir() / "llvm_v0.04.log").read_text().splitlines():
        if not line.startswith("{"):
            continue
        target, name, args, _ = json.loads(line)["input"]
        if name == "conv2d_NCHWc.x86":
            data, weight, strides, pads, dilation = args[:5]
            found.add((tuple(data[1]), tuple(weight[1]), tuple(strides), tuple(pads), tuple(dilation)))
    return found


def test_resnet18_conv_workloads_are_those_of_tvms_tophub_log() -> None:
    mod, _ = resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 224, 224))
    ours = _conv_workloads(mod)
    assert len(ours) == 12
    assert ours <= _tophub_conv_workloads()


def test_resnet50_bottleneck_conv_workloads_are_in_the_tophub_log() -> None:
    mod, _ = resnet.get_workload(num_layers=50, batch_size=1)
    assert _conv_workloads(mod) <= _tophub_conv_workloads()


def test_resnet18_names_and_sizes_follow_tvm() -> None:
    mod, params = resnet.get_workload(num_layers=18)
    assert len(params) == 99 and mod["main"].params[0].checked_type.shape == (1, 3, 224, 224)
    assert params["conv0_weight"].shape == (64, 3, 7, 7)
    assert params["stage2_unit1_sc_weight"].shape == (128, 64, 1, 1)
    assert params["fc1_weight"].shape == (1000, 512) and params["bn_data_gamma"].shape == (3,)
    assert g.count_calls(mod["main"]) == {
        "nn.batch_norm": 19,
        "nn.conv2d": 21,
        "nn.relu": 18,
        "nn.max_pool2d": 1,
        "add": 8,
        "nn.global_avg_pool2d": 1,
        "nn.batch_flatten": 1,
        "nn.dense": 1,
        "nn.bias_add": 1,
        "nn.softmax": 1,
    }
