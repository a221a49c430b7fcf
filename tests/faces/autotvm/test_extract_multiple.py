"""``autotvm.task.extract_from_multiple_program``: the distinct tasks of several networks, each
workload once, in the order the networks first call it."""

from __future__ import annotations

import pytest

from tunecli import autotvm, relay
from tunecli.errors import GraphError

CONV = relay.op.get("nn.conv2d")


def two_convs(first: int, second: int) -> tuple:
    """data (1, 4, 12, 12) -> conv to ``first`` channels -> conv to ``second`` channels."""
    data = relay.var("data", shape=(1, 4, 12, 12), dtype="float32")
    a = relay.nn.conv2d(data, relay.var("a_weight"), channels=first, kernel_size=(3, 3), padding=(1, 1))
    b = relay.nn.conv2d(a, relay.var("b_weight"), channels=second, kernel_size=(1, 1))
    return relay.testing.create_workload(relay.Function(relay.analysis.free_vars(b), b))


def test_a_workload_shared_by_two_networks_is_one_task() -> None:
    (m1, p1), (m2, p2) = two_convs(8, 8), two_convs(8, 16)
    single = [autotvm.task.extract_from_program(m, target="llvm", params=p, ops=(CONV,))
              for m, p in ((m1, p1), (m2, p2))]
    both = autotvm.task.extract_from_multiple_program([m1, m2], [p1, p2], target="llvm", ops=(CONV,))
    assert [len(t) for t in single] == [2, 2]
    assert len(both) == 3
    assert [t.workload for t in both] == [t.workload for t in single[0]] + [single[1][1].workload]


def test_networks_and_parameters_must_pair_up() -> None:
    mod, params = two_convs(8, 8)
    with pytest.raises(GraphError, match="2 networks and 1 sets of parameters"):
        autotvm.task.extract_from_multiple_program([mod, mod], [params], target="llvm")
