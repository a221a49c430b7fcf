"""Fixtures of the graph tests."""

from __future__ import annotations

import pytest

from tunecli.engine.graph import Expr, traversal


@pytest.fixture
def expanded_nodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A one-item list counting the nodes that graph walks expand from now on (calls of
    ``traversal.children``, the real one): the work of a pass, independent of the machine's load."""
    count = [0]
    real = traversal.children

    def counting(node: Expr) -> tuple[Expr, ...]:
        count[0] += 1
        return real(node)

    monkeypatch.setattr(traversal, "children", counting)
    return count
