"""PassContext decides which passes of a Sequential run (TVM's opt_level, required and disabled passes)."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli import relay
from tunecli.engine import graph as g
from tunecli.engine.graph.passes import FoldConstant, FuseOps, PassContext, Sequential
from tunecli.errors import GraphError


def _module() -> g.IRModule:
    x = relay.var("x", shape=(4,))
    c = relay.add(relay.const(np.ones(4, "float32")), relay.const(np.ones(4, "float32")))
    return g.InferType()(g.IRModule.from_expr(relay.multiply(x, c)))


def _constants_folded(mod: g.IRModule) -> bool:
    return g.count_calls(mod["main"]) == {"multiply": 1}


def test_default_context_is_opt_level_2_and_contexts_nest() -> None:
    assert PassContext.current().opt_level == 2
    with PassContext(opt_level=3) as outer:
        with PassContext(opt_level=0):
            assert PassContext.current().opt_level == 0
        assert PassContext.current() is outer
    assert PassContext.current().opt_level == 2


def test_sequential_runs_a_pass_only_at_or_above_its_level() -> None:
    seq = Sequential([FoldConstant()])
    with PassContext(opt_level=1):
        assert not _constants_folded(seq(_module()))
    with PassContext(opt_level=2):
        assert _constants_folded(seq(_module()))


def test_required_and_disabled_passes() -> None:
    seq = Sequential([FoldConstant()])
    with PassContext(opt_level=0, required_pass=["FoldConstant"]):
        assert _constants_folded(seq(_module()))
    with PassContext(opt_level=3, disabled_pass=["FoldConstant"]):
        assert not _constants_folded(seq(_module()))


def test_a_pass_called_directly_always_runs_and_fuse_ops_reads_the_level() -> None:
    assert _constants_folded(FoldConstant()(_module()))
    x = relay.var("x", shape=(4,))
    mod = g.InferType()(g.IRModule.from_expr(relay.nn.relu(relay.exp(x))))
    with PassContext(opt_level=0):
        assert _kernels(FuseOps()(mod)) == 2
    assert _kernels(FuseOps()(mod)) == 1


def _kernels(mod: g.IRModule) -> int:
    return sum(isinstance(n, g.Call) and isinstance(n.op, g.Function)
               for n in g.post_order(mod["main"].body, into_functions=False))


def test_bad_opt_level_and_bad_module_are_named() -> None:
    with pytest.raises(GraphError, match="opt_level must be an int from 0 to 4"):
        PassContext(opt_level=7)
    with pytest.raises(GraphError, match="pass FoldConstant: expected an IRModule"):
        FoldConstant()(relay.var("x"))
