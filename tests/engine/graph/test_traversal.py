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
    assert g.free_vars(nn.bias_add(y, b)) == [x, w, b]


def test_post_order_skips_nodes_and_everything_below_them() -> None:
    x = g.var("x", shape=(4,))
    r = unary.relu(x)
    y = g.Tuple([unary.sigmoid(r), x])
    assert g.post_order(y, skip=lambda n: n is r) == [y.fields[0], x, y]
    assert g.post_order(y, skip=lambda n: n is y) == []


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


def test_mutator_visiting_nodes_one_by_one_walks_each_once(expanded_nodes: list[int]) -> None:
    y = g.var("x", shape=(4,))
    for _ in range(400):
        y = unary.relu(y)
    order = g.post_order(y)
    before = expanded_nodes[0]
    mutator = g.ExprMutator()
    assert [mutator.visit(node) for node in order] == order
    assert expanded_nodes[0] - before == len(order)


def test_free_vars_compares_each_variable_a_bounded_number_of_times(monkeypatch) -> None:
    compared = [0]
    real = g.Expr.__eq__

    def counting(self: g.Expr, other: object) -> bool:
        compared[0] += 1
        return real(self, other)

    variables = [g.var(f"v{i}", shape=(1,)) for i in range(2000)]
    monkeypatch.setattr(g.Expr, "__eq__", counting)
    assert g.free_vars(g.Tuple(variables)) == variables
    assert compared[0] <= 2 * len(variables)
