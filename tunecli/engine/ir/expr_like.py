"""What may stand for an expression: ``ExprLike``, the values ``expr.convert`` turns into one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:
    import numpy as np

    from .expr import Expr


class ExprConvertible(Protocol):
    """What stands for an expression (an IterVar, a one-element tensor)."""

    def as_expr(self) -> Expr: ...


#: What ``convert`` turns into an expression: an expression, a Python or numpy number, or an
#: object with ``as_expr()``.
ExprLike: TypeAlias = "Expr | int | float | np.number | np.bool_ | ExprConvertible"
