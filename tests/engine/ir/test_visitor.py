"""Visitors dispatch to the ``visit_<class>`` of their own class (a subclass's override wins even
after its base class has visited the same node kinds); ``post_order`` and ``substitute`` walk every
node, children first, and share what they do not change."""

from __future__ import annotations

from tunecli.engine.ir import expr as E
from tunecli.engine.ir.visitor import Mutator, Visitor, post_order, substitute


class _CountAdds(Visitor):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def visit_Add(self, node: E.Add) -> None:
        self.seen.append("base")
        self.generic_visit(node)


class _CountAddsTwice(_CountAdds):
    def visit_Add(self, node: E.Add) -> None:
        self.seen.append("override")
        self.generic_visit(node)


class _CountMuls(_CountAdds):  # inherits visit_Add, adds visit_Mul
    def visit_Mul(self, node: E.Mul) -> None:
        self.seen.append("mul")
        self.generic_visit(node)


def test_each_class_dispatches_to_its_own_methods_whatever_was_visited_before() -> None:
    x = E.Var("x", "int32")
    tree = (x + 1) * (x + 2)
    base, override, muls = _CountAdds(), _CountAddsTwice(), _CountMuls()
    base.visit(tree)
    override.visit(tree)
    muls.visit(tree)
    base.visit(tree)
    assert base.seen == ["base", "base"] * 2
    assert override.seen == ["override", "override"]
    assert muls.seen == ["mul", "base", "base"]


def test_post_order_calls_children_before_parents_and_sees_every_node() -> None:
    x, y = E.Var("x", "int32"), E.Var("y", "int32")
    order: list[object] = []
    tree = (x + y) * 3
    post_order(tree, order.append)
    assert order.index(x) < order.index(tree.a) < order.index(tree)
    assert order.index(y) < order.index(tree.a)
    assert order[-1] is tree
    assert sum(isinstance(n, E.Var) for n in order) == 2


def test_substitute_replaces_by_identity_and_shares_unchanged_subtrees() -> None:
    x, y, other_x = E.Var("x", "int32"), E.Var("y", "int32"), E.Var("x", "int32")
    kept = y * 7
    tree = (x + other_x) + kept
    out = substitute(tree, {x: E.const(5, "int32")})
    assert isinstance(out.a.a, E.IntImm) and out.a.a.value == 5
    assert out.a.b is other_x  # same name, another variable
    assert out.b is kept
    assert substitute(tree, {}) is tree


def test_a_mutator_without_changes_returns_the_same_tree() -> None:
    x = E.Var("x", "int32")
    tree = (x + 1) * (x - 2)
    assert Mutator().visit(tree) is tree
