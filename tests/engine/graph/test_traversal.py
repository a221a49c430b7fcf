"""Walking and rewriting graphs: post order, free variables, count_calls, ExprMutator."""

from __future__ import annotations

from tunecli.engine import graph as g
from tunecli.engine.graph.ops import conv, nn, unary


def test_free_vars_in_order_of_first_use_skip_bound_ones() -> None:
    x, w, b = g.var("x", shape=(1, 3, 8, 8)), g.var("w"), g.var("b")
    y = nn.bias_add(conv.conv2d(x, w, channels=4, kernel_size=3), b)
    assert g.free_vars(y) == [x, w, b]
    fn = g.Function([x, w], y)
    assert g.free_vars(fn) == [b]


def test_post_order_is_iterative_on_deep_chains() -> None:
    x = g.var("x", shape=(4,))
    y = x
    for _ in range(5000):
        y = unary.relu(y)
    order = g.post_order(y)
    assert len(order) == 5001 and order[0] is x and order[-1] is y


def test_mutator_rewrites_once_and_keeps_unchanged_nodes() -> None:
    x = g.var("x", shape=(4,))
    r = unary.relu(x)
    y = g.Tuple([r, unary.sigmoid(r)])

    class ReluToTanh(g.ExprMutator):
        def visit_call(self, call: g.Call) -> g.Expr:
            new = super().visit_call(call)
            return unary.tanh(new.args[0]) if call.op.name == "nn.relu" else new

    out = ReluToTanh().visit(y)
    assert out.fields[0].op.name == "tanh" and out.fields[1].args[0] is out.fields[0]
    assert ReluToTanh().visit(x) is x


def test_post_order_can_stop_at_nested_functions_and_count_calls() -> None:
    p = g.var("p0", shape=(2,))
    fused = g.Function([p], unary.relu(unary.relu(p)))
    x = g.var("x", shape=(2,))
    call = g.Call(fused, [x])
    assert g.post_order(call, into_functions=False) == [fused, x, call]
    assert len(g.post_order(call)) == 6
    assert g.count_calls(call) == {"nn.relu": 2}
    seen = []
    g.post_order_visit(call, seen.append)
    assert seen[-1] is call
