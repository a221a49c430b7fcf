"""FoldConstant evaluates constant subexpressions once; bind_params turns named parameters into constants."""

from __future__ import annotations

import numpy as np

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.passes import FoldConstant, bind_params


def test_constant_subexpressions_become_one_constant() -> None:
    x = relay.var("x", shape=(3,))
    w = relay.var("w", shape=(3,))
    expr = relay.add(x, relay.sqrt(relay.multiply(w, relay.const(4.0))))
    fn = bind_params(g.Function([x, w], expr), {"w": np.array([1, 4, 9], "float32")})
    assert [p.name_hint for p in fn.params] == ["x"]
    mod = FoldConstant()(g.InferType()(g.IRModule({"main": fn})))
    body = mod["main"].body
    assert g.count_calls(mod["main"]) == {"add": 1}
    assert isinstance(body.args[1], g.Constant)
    np.testing.assert_allclose(body.args[1].data, [2, 4, 6])
    np.testing.assert_allclose(g.evaluate(mod, [np.zeros(3, "float32")]), [2, 4, 6])


def test_tuple_reads_of_built_tuples_fold() -> None:
    x = relay.var("x", shape=(2,))
    expr = relay.Tuple([x, relay.exp(x)])[1]
    mod = FoldConstant()(g.InferType()(g.IRModule.from_expr(expr)))
    assert isinstance(mod["main"].body, g.Call) and mod["main"].body.op.name == "exp"
