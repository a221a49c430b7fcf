"""TVM-style ``tir`` namespace: scalar expressions and index arithmetic (re-exports of tunecli.engine).

``tvm.tir.indexmod(y, bn)``, ``tvm.tir.floordiv(x, 4)``, ``tvm.tir.const(0, "float32")``,
``tvm.tir.IntImm("int32", 4)`` (TVM's argument order; ``IntImm(4)`` works too),
``tvm.tir.Select(cond, a, b)`` (the node ``if_then_else`` builds: only the branch taken is
evaluated, where TVM's Select may evaluate both), ``tvm.tir.exp``, the expression nodes
(``tvm.tir.Add``, ``tvm.tir.Min``, ``tvm.tir.Call`` ...) and the binary ``tvm.tir.min``/``max`` ...
"""

from tunecli.engine.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    Call,
    Cast,
    Div,
    Expr,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mul,
    Not,
    Or,
    Ramp,
    Select,
    StringImm,
    Sub,
    Var,
    const,
    max_value,
    min_value,
)
from tunecli.engine.te import IterVar, Reduce, max, min
from tunecli.engine.te import indexing as _indexing
from tunecli.engine.te import intrinsics as _intrinsics
from tunecli.engine.te.indexing import *  # noqa: F403 - listed once, in the engine's modules
from tunecli.engine.te.intrinsics import *  # noqa: F403

PrimExpr = Expr

__all__ = [
    "EQ", "GE", "GT", "LE", "LT", "NE", "Add", "And", "Broadcast", "Call", "Div", "FloorDiv", "FloorMod",
    "Let", "Max", "Min", "Mul", "Not", "Or", "Ramp", "Reduce", "Sub", "max", "min", "Cast", "Expr",
    "PrimExpr", "FloatImm", "IntImm", "Select", "StringImm", "Var", "const", "max_value", "min_value",
    "IterVar", *_indexing.__all__, *_intrinsics.__all__,
]
