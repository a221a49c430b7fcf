"""FuseOps groups calls into kernels by TVM's rules on the operators' patterns."""

from __future__ import annotations

import numpy as np

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.build_module import optimize
from tunecli.engine.graph.models import mobilenet, resnet
from tunecli.engine.graph.passes import FuseOps, PassContext


def _groups(expr: g.Expr) -> list[list[str]]:
    mod = FuseOps()(g.InferType()(g.IRModule.from_expr(expr)))
    return _kernel_ops(mod["main"])


def _kernel_ops(fn: g.Function) -> list[list[str]]:
    kernels = [
        n
        for n in g.post_order(fn.body, into_functions=False)
        if isinstance(n, g.Call) and isinstance(n.op, g.Function)
    ]
    return [
        [n.op.name for n in g.post_order(k.op.body, into_functions=False) if isinstance(n, g.Call)]
        for k in kernels
    ]


def _w(*shape: int) -> g.Constant:
    return relay.const(np.ones(shape, "float32"))


def test_anchor_takes_its_elementwise_and_broadcast_consumers() -> None:
    x = relay.var("x", shape=(1, 4, 8, 8))
    y = relay.nn.relu(relay.nn.bias_add(relay.nn.conv2d(x, _w(4, 4, 3, 3), padding=(1, 1)), _w(4)))
    assert _groups(relay.clip(relay.add(y, x), 0.0, 6.0)) == [
        ["nn.conv2d", "nn.bias_add", "nn.relu", "add", "clip"]
    ]


def test_an_injective_chain_is_one_kernel_and_a_pool_takes_it_as_prologue() -> None:
    x = relay.var("x", shape=(1, 4, 8, 8))
    chain = relay.transpose(relay.exp(relay.nn.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))), (0, 1, 3, 2))
    assert _groups(chain) == [["nn.pad", "exp", "transpose"]]
    assert _groups(relay.nn.max_pool2d(chain, (2, 2), (2, 2))) == [
        ["nn.pad", "exp", "transpose", "nn.max_pool2d"]
    ]


def test_a_concatenate_takes_an_injective_input_of_its_tuple_not_an_anchor() -> None:
    """The layout transform of one input joins the concatenate (one kernel, no copy in between);
    the convolution writing the other input stays its own kernel, and so does a field read twice."""
    x = relay.var("x", shape=(1, 4, 8, 8))
    conv = relay.nn.relu(relay.nn.conv2d(x, _w(4, 4, 1, 1)))
    moved = relay.transpose(relay.exp(x), (0, 1, 3, 2))
    assert _groups(relay.concatenate([conv, moved], axis=1)) == [
        ["nn.conv2d", "nn.relu"],
        ["exp", "transpose", "concatenate"],
    ]
    twice = relay.exp(x)
    assert _groups(relay.concatenate([twice, twice], axis=1)) == [["exp"], ["concatenate"]]


def test_an_anchor_never_takes_a_prologue_and_opaque_ops_stay_alone() -> None:
    x = relay.var("x", shape=(2, 8))
    dense = relay.nn.dense(relay.exp(x), _w(3, 8))
    assert _groups(relay.nn.softmax(relay.sigmoid(dense))) == [
        ["exp"],
        ["nn.dense", "sigmoid"],
        ["nn.softmax"],
    ]


def test_a_value_read_twice_fuses_up_to_where_its_paths_meet() -> None:
    x = relay.var("x", shape=(1, 4, 8, 8))
    conv = relay.nn.conv2d(x, _w(4, 4, 1, 1))
    assert _groups(relay.add(relay.nn.relu(conv), relay.exp(conv))) == [
        ["nn.conv2d", "nn.relu", "exp", "add"]
    ]


def test_erf_gelu_is_the_epilogue_of_its_dense_layer() -> None:
    x = relay.var("x", shape=(4, 8))
    h = relay.nn.bias_add(relay.nn.dense(x, _w(16, 8)), _w(16))
    half = relay.multiply(h, relay.const(0.5))
    erf = g.ops.unary.erf(relay.divide(h, relay.const(2**0.5)))
    gelu = relay.multiply(half, relay.add(relay.const(1.0), erf))
    assert _groups(gelu) == [["nn.dense", "nn.bias_add", "multiply", "divide", "erf", "add", "multiply"]]


def test_tanh_gelu_reads_its_input_three_times_and_is_still_one_epilogue() -> None:
    x = relay.var("x", shape=(4, 8))
    h = relay.nn.bias_add(relay.nn.dense(x, _w(16, 8)), _w(16))
    cube = relay.multiply(relay.multiply(h, h), h)
    inner = relay.multiply(relay.add(h, relay.multiply(cube, relay.const(0.044715))), relay.const(0.7978846))
    gelu = relay.multiply(relay.multiply(h, relay.const(0.5)), relay.add(relay.const(1.0), relay.tanh(inner)))
    (kernel,) = _groups(gelu)
    assert kernel[:2] == ["nn.dense", "nn.bias_add"] and kernel.count("tanh") == 1 and len(kernel) == 11


def test_a_value_read_twice_ends_its_group_where_a_path_leaves_the_fusable_ops() -> None:
    x = relay.var("x", shape=(1, 4, 8, 8))
    conv = relay.nn.conv2d(x, _w(4, 4, 1, 1))
    assert _groups(relay.add(relay.nn.relu(conv), relay.nn.softmax(conv))) == [
        ["nn.conv2d"],
        ["nn.softmax"],
        ["nn.relu", "add"],
    ]
    assert _groups(relay.Tuple([relay.nn.relu(conv), relay.exp(conv)])) == [
        ["nn.conv2d"], ["nn.relu"], ["exp"]]


def test_softmax_takes_an_injective_prologue_and_ends_its_group() -> None:
    scores = relay.var("scores", shape=(2, 8, 8))
    scaled = relay.add(relay.divide(relay.reshape(scores, (1, 2, 8, 8)), relay.const(2.0)), _w(1, 1, 1, 8))
    assert _groups(relay.exp(relay.nn.softmax(scaled, axis=-1))) == [
        ["reshape", "divide", "add", "nn.softmax"],
        ["exp"],
    ]


def test_opt_level_0_gives_one_kernel_per_call() -> None:
    x = relay.var("x", shape=(1, 4, 8, 8))
    expr = relay.nn.relu(relay.nn.conv2d(x, _w(4, 4, 1, 1)))
    mod = g.InferType()(g.IRModule.from_expr(expr))
    with PassContext(opt_level=0):
        assert _kernel_ops(FuseOps()(mod)["main"]) == [["nn.conv2d"], ["nn.relu"]]


def test_resnet18_has_one_kernel_per_convolution_group() -> None:
    """21 convolutions, each one kernel with its batch norm (folded), bias, residual add and relu;
    besides them the input's batch norm, the batch norms after the 4 residual adds that feed a
    shortcut directly (read twice: they end the add's group), max pooling with the following batch
    norm and relu, global pooling, flatten, dense + bias and softmax: 31 kernels."""
    mod, params = resnet.get_workload(num_layers=18, image_shape=(3, 64, 64))
    with PassContext(opt_level=3):
        kernels = _kernel_ops(optimize(mod, params)["main"])
    assert len(kernels) == 31
    with_conv = [k for k in kernels if "nn.conv2d" in k]
    assert len(with_conv) == 21 and all(k.count("nn.conv2d") == 1 for k in with_conv)
    assert sum(k == ["nn.conv2d", "add", "nn.relu"] for k in kernels) == 9
    assert ["nn.max_pool2d", "multiply", "add", "nn.relu"] in kernels
    assert not any("nn.batch_norm" in k for k in kernels)


def test_mobilenet_convolutions_take_their_batch_norm_and_relu() -> None:
    mod, params = mobilenet.get_workload(image_shape=(3, 32, 32))
    with PassContext(opt_level=3):
        kernels = _kernel_ops(optimize(mod, params)["main"])
    assert sum(k == ["nn.conv2d", "add", "nn.relu"] for k in kernels) == 27
    assert len(kernels) == 31
