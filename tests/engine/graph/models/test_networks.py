"""The built-in networks type-check, print, and run through the interpreter on small images."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.models import mobilenet, mobilenet_v2, resnet, squeezenet, vgg
from tunecli.errors import GraphError

NETWORKS: dict[str, Callable[[], tuple[g.IRModule, dict]]] = {
    "resnet-18": lambda: resnet.get_workload(num_layers=18, image_shape=(3, 64, 64)),
    "resnet-34": lambda: resnet.get_workload(num_layers=34, image_shape=(3, 64, 64)),
    "resnet-50": lambda: resnet.get_workload(num_layers=50, image_shape=(3, 64, 64)),
    "resnet-20-cifar": lambda: resnet.get_workload(num_layers=20, image_shape=(3, 28, 28), num_classes=10),
    "mobilenet": lambda: mobilenet.get_workload(image_shape=(3, 64, 64)),
    "mobilenet-nhwc": lambda: mobilenet.get_workload(image_shape=(64, 64, 3), layout="NHWC"),
    "mobilenet-v2": lambda: mobilenet_v2.get_workload(image_shape=(3, 64, 64)),
    "vgg-11": lambda: vgg.get_workload(1, image_shape=(3, 32, 32), num_layers=11),
    "vgg-16-bn": lambda: vgg.get_workload(2, image_shape=(3, 32, 32), num_layers=16, batch_norm=True),
    "squeezenet-1.0": lambda: squeezenet.get_workload(version="1.0", image_shape=(3, 64, 64)),
    "squeezenet-1.1": lambda: squeezenet.get_workload(version="1.1", image_shape=(3, 64, 64)),
}


@pytest.mark.parametrize("name", NETWORKS)
def test_network_types_prints_and_runs(name: str) -> None:
    mod, params = NETWORKS[name]()
    main = mod["main"]
    data = main.params[0]
    assert data.name_hint == "data" and set(params) == {p.name_hint for p in main.params[1:]}
    for p in main.params[1:]:
        assert params[p.name_hint].shape == p.checked_type.shape, p.name_hint
    batch = data.checked_type.shape[0]
    num_classes = 10 if "cifar" in name else 1000
    assert main.body.checked_type == g.TensorType((batch, num_classes), "float32")
    text = str(mod)
    assert text.count("nn.conv2d(") == g.count_calls(main)["nn.conv2d"]
    x = np.random.default_rng(0).random(data.checked_type.shape).astype("float32")
    out, values = g.evaluate_nodes(main, [x], params)
    assert out.shape == (batch, num_classes) and np.isfinite(out).all()
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)
    logits = values[main.body.args[0]]
    assert np.isfinite(logits).all() and np.ptp(logits.astype(np.float64)) > 0


def test_weights_are_seeded_and_initialised_like_tvm() -> None:
    _, a = resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    _, b = resnet.get_workload(num_layers=18, image_shape=(3, 32, 32))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert (a["bn_data_gamma"] == 1).all() and (a["stage1_unit1_bn1_moving_var"] == 1).all()
    assert (a["fc1_bias"] == 0).all() and (a["bn0_beta"] == 0 if "bn0_beta" in a else True)
    w = a["conv0_weight"]
    bound = np.sqrt(3 / ((w.shape[1] + w.shape[0]) * 9 / 2))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound


def test_mobilenet_layers_are_depthwise_and_pointwise() -> None:
    mod, params = mobilenet.get_workload(image_shape=(3, 64, 64))
    convs = [n for n in g.post_order(mod["main"]) if isinstance(n, g.Call) and n.op.name == "nn.conv2d"]
    depthwise = [c for c in convs if c.attrs.groups > 1]
    assert len(convs) == 27 and len(depthwise) == 13
    assert params["separable_conv_block_1_weight"].shape == (32, 1, 3, 3)
    assert all(c.attrs.groups == c.args[0].checked_type.shape[1] for c in depthwise)


def test_mobilenet_v2_has_inverted_residuals() -> None:
    mod, params = mobilenet_v2.get_workload(image_shape=(3, 64, 64))
    counts = g.count_calls(mod["main"])
    assert counts["add"] == 10 and counts["clip"] == 35 and counts["nn.conv2d"] == 52
    assert params["b2_1_expand_conv_weight"].shape == (96, 16, 1, 1)
    assert params["b2_1_depthwise_conv_weight"].shape == (96, 1, 3, 3)


def test_bad_network_arguments_are_named() -> None:
    with pytest.raises(GraphError, match="resnet: num_layers 19"):
        resnet.get_workload(num_layers=19)
    with pytest.raises(GraphError, match="vgg: num_layers 12"):
        vgg.get_workload(1, num_layers=12)
    with pytest.raises(GraphError, match="squeezenet: version '2.0'"):
        squeezenet.get_workload(version="2.0")
