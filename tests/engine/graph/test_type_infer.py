"""Type inference: shapes and dtypes, types of unannotated weights, and errors naming the op."""

from __future__ import annotations

import pytest

from tunecli.engine import graph as g
from tunecli.engine.graph.ops import broadcast, conv, nn, pool, transform, unary
from tunecli.engine.graph.types import FuncType, TensorType, TupleType
from tunecli.errors import GraphError


def _typed(expr: g.Expr) -> g.Function:
    fn = g.Function(g.free_vars(expr), expr)
    g.InferType()(g.IRModule.from_expr(fn))
    return fn


def test_weights_get_their_shapes_from_the_ops_that_use_them() -> None:
    x = g.var("data", shape=(1, 3, 32, 32))
    y = conv.conv2d(x, g.var("w"), strides=2, padding=1, channels=8, kernel_size=(3, 3))
    y = nn.batch_norm(y, g.var("gamma"), g.var("beta"), g.var("mean"), g.var("var"))[0]
    y = nn.dense(nn.batch_flatten(pool.global_avg_pool2d(y)), g.var("fc"), units=10)
    y = nn.bias_add(y, g.var("fc_bias"), axis=-1)
    fn = _typed(y)
    types = {p.name_hint: p.checked_type.shape for p in fn.params}
    assert types == {
        "data": (1, 3, 32, 32),
        "w": (8, 3, 3, 3),
        "gamma": (8,),
        "beta": (8,),
        "mean": (8,),
        "var": (8,),
        "fc": (10, 8),
        "fc_bias": (10,),
    }
    assert fn.checked_type == FuncType(tuple(p.checked_type for p in fn.params), TensorType((1, 10)))
    assert y.checked_type == TensorType((1, 10), "float32")


def test_tuple_types_and_field_reads() -> None:
    x = g.var("x", shape=(2, 3))
    t = g.Tuple([x, unary.cast(x, "int32")])
    _typed(t[1])
    assert t.checked_type == TupleType((TensorType((2, 3)), TensorType((2, 3), "int32")))
    with pytest.raises(GraphError, match="field 2 of a 2-tuple"):
        _typed(g.Tuple([x, x])[2])


def test_reading_checked_type_before_inference_fails() -> None:
    with pytest.raises(GraphError, match="InferType"):
        _ = unary.relu(g.var("x", shape=(1,))).checked_type


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda x: conv.conv2d(x, g.var("w", shape=(8, 4, 3, 3))),
            "nn.conv2d: data has 3 channels but the weight",
        ),
        (lambda x: conv.conv2d(x, g.var("w")), "nn.conv2d: the weight has no shape"),
        (
            lambda x: conv.conv2d(x, g.var("w", shape=(8, 3, 3, 3)), channels=4),
            "channels=4 but the weight has 8",
        ),
        (lambda x: conv.conv2d(x, g.var("w", shape=(8, 3, 9, 9))), "does not fit"),
        (
            lambda x: conv.conv2d(x, g.var("w"), channels=4, kernel_size=1, groups=2),
            "3 input channels do not",
        ),
        (lambda x: broadcast.add(x, g.var("y", shape=(5,))), "add: shapes .* do not broadcast"),
        (lambda x: broadcast.add(x, g.var("y", shape=(1,), dtype="int32")), "add: operands have dtypes"),
        (lambda x: nn.dense(x, g.var("w", shape=(4, 5))), "nn.dense: data .* has 8 input features"),
        (lambda x: transform.reshape(x, (5, -1)), "reshape: cannot reshape"),
        (lambda x: transform.transpose(x, (0, 1)), "not a permutation"),
        (lambda x: nn.bias_add(x, g.var("b", shape=(2,))), "nn.bias_add: the bias must be"),
        (lambda x: unary.relu(g.var("free")), r"nn.relu: the type of argument 0 \(data\) is unknown.*%free"),
        (lambda x: transform.layout_transform(x, "NCHW", "NCHW16c"), "does not split into blocks of 16"),
    ],
)
def test_errors_name_the_operator_and_the_mismatch(build, message) -> None:
    x = g.var("x", shape=(1, 3, 8, 8))
    with pytest.raises(GraphError, match=message):
        _typed(build(x))


def test_a_weight_used_twice_with_different_shapes_is_an_error() -> None:
    x = g.var("x", shape=(1, 3, 8, 8))
    w = g.var("w")
    a = conv.conv2d(x, w, channels=4, kernel_size=3)
    b = conv.conv2d(x, w, channels=4, kernel_size=1)
    with pytest.raises(GraphError, match=r"kernel_size=\(1, 1\) but the weight's window is \(3, 3\)"):
        _typed(g.Tuple([a, b]))


def test_called_functions_type_from_their_annotated_params() -> None:
    p = g.var("p0", shape=(1, 4))
    fused = g.Function([p], unary.relu(p) + 1.0).with_attr("Primitive", 1)
    x = g.var("x", shape=(1, 4))
    call = g.Call(fused, [x])
    _typed(call)
    assert call.checked_type == TensorType((1, 4))
    bad = g.Call(fused, [g.var("y", shape=(2, 4))])
    with pytest.raises(GraphError, match="argument types"):
        _typed(bad)


@pytest.mark.parametrize("layers", [50, 400])
def test_typing_a_graph_as_it_is_built_walks_each_node_once(layers: int, expanded_nodes: list[int]) -> None:
    y = g.var("x", shape=(1, 4, 8, 8))
    for i in range(layers):  # as the ONNX importer does: type each new node, weights from their uses
        y = conv.conv2d(y, g.var(f"w{i}"), channels=4, kernel_size=3, padding=1)
        assert g.infer_types(y) == TensorType((1, 4, 8, 8))
        y = unary.relu(y)
        g.infer_types(y)
    walked = expanded_nodes[0]
    nodes = len(g.post_order(y))
    assert nodes == 3 * layers + 1
    assert walked == nodes
    assert y.args[0].args[1].checked_type == TensorType((4, 4, 3, 3))


def test_typed_nodes_keep_their_type_and_rewritten_nodes_wait_for_inference() -> None:
    x = g.var("x", shape=(1, 4))
    r = unary.relu(x)
    y = unary.sigmoid(r) + 1.0
    g.infer_types(y)

    class SigmoidToTanh(g.ExprMutator):
        def visit_call(self, call: g.Call) -> g.Expr:
            new = super().visit_call(call)
            return unary.tanh(new.args[0]) if call.op.name == "sigmoid" else new

    out = SigmoidToTanh().visit(y)
    assert out.args[0].args[0] is r and r.has_type
    assert not out.has_type and not out.args[0].has_type
    assert g.infer_types(out) == TensorType((1, 4))
    assert out.args[0].checked_type == TensorType((1, 4))
