"""GPU thread axes in lowered code: TVM's thread ranks and launch extents (GPU targets: ``Target.is_gpu``)."""

from __future__ import annotations

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.visitor import Visitor
from tunecli.errors import LoweringError

#: Tags of loops that become block or thread indices (the others, ``vthread``, stay loops).
LAUNCH_TAGS = tuple(f"{kind}.{axis}" for kind in ("blockIdx", "threadIdx") for axis in "xyz")


def thread_rank(tag: str) -> int | None:
    """TVM's rank of a thread axis tag: 0 for ``blockIdx.*``, 1 for ``threadIdx.*`` and
    ``vthread`` (virtual threads are at the level of threads), None for other tags."""
    if tag.startswith("blockIdx."):
        return 0
    if tag.startswith(("threadIdx.", "vthread")) or tag == "cthread":
        return 1
    return None


class _Extents(Visitor):
    def __init__(self, where: str) -> None:
        self.where = where
        self.extents: dict[str, int] = {}

    def visit_For(self, s: S.For) -> None:
        tag = s.thread_tag
        if tag in LAUNCH_TAGS:
            if not isinstance(s.extent, E.IntImm):
                raise LoweringError(f"{self.where}: loop {s.loop_var.name} is bound to {tag} but its "
                                    f"extent {s.extent} is not a constant")
            self.extents[tag] = max(self.extents.get(tag, 1), s.extent.value)
        self.generic_visit(s)


def launch_extents(stmt: S.Stmt, where: str = "lower") -> dict[str, int]:
    """``{tag: extent}``: the largest constant extent of the loops bound to each block/thread axis."""
    walker = _Extents(where)
    walker.visit(stmt)
    return walker.extents
