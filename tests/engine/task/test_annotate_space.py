"""The annotation knob enumerates TVM's policies in TVM's order."""

from __future__ import annotations

import pytest

from tunecli.engine.task.annotate_space import AnnotateSpace
from tunecli.engine.task.space_entities import VirtualAxis
from tunecli.errors import SpaceError


def test_annotate_policies() -> None:
    def anns(n: int, policy: str, **kwargs) -> list:
        return [e.anns for e in AnnotateSpace([VirtualAxis(8) for _ in range(n)], policy, **kwargs).entities]

    assert anns(2, "try_unroll") == [["none", "none"], ["none", "unroll"], ["unroll", "none"],
                                     ["unroll", "unroll"]]
    assert anns(2, "try_vec") == [["none", "none"], ["none", "vec"], ["vec", "none"]]
    assert anns(2, "try_unroll_vec") == [["none", "none"], ["none", "unroll"], ["none", "vec"],
                                         ["unroll", "none"], ["unroll", "unroll"], ["unroll", "vec"],
                                         ["vec", "none"], ["vec", "unroll"]]
    assert len(anns(3, "try_unroll_vec")) == 2**3 + 3 * 2**2
    assert anns(3, "unroll") == [["unroll"] * 3]
    assert anns(2, "vec") == []
    assert anns(4, "locate_cache", num_anchor=2) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    with pytest.raises(SpaceError, match="invalid policy: try_fuse"):
        anns(2, "try_fuse")
    assert repr(AnnotateSpace([VirtualAxis(2)], "try_unroll")) == "Annotate(policy=try_unroll) len=2"
