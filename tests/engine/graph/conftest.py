"""Fixtures of the graph tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tunecli.engine.graph import Expr, traversal
from tunecli.engine.log import tophub


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


@pytest.fixture
def no_packages() -> Iterator[None]:
    """No pre-tuned package: a workload without a record falls back (on a machine whose CPU the
    shipped package has records of, it would get the nearest record's config)."""
    tophub.set_locations(tophub.DISABLED)
    yield
    tophub.set_locations(None)
