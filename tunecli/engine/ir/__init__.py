"""The IR shared by tensor expressions and the lowered loop nest.

Import from the submodules (``ir.expr``, ``ir.stmt``, ``ir.visitor``); this package re-exports
the names most code needs.
"""

from .dtype import DataType, parse_dtype
from .expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    ConstExpr,
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
    cast,
    const,
    convert,
    max_value,
    min_value,
)
from .node import Node
from .simplify import simplify
from .stmt import (
    PARALLEL,
    SERIAL,
    UNROLLED,
    VECTORIZED,
    Allocate,
    Buffer,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)
from .visitor import Mutator, Visitor, post_order, substitute

__all__ = [
    "DataType", "parse_dtype", "EQ", "GE", "GT", "LE", "LT", "NE", "Add", "And", "Broadcast", "BufferLoad",
    "Call", "Cast", "ConstExpr", "Div", "Expr", "FloatImm", "FloorDiv", "FloorMod", "IntImm", "Let", "Max",
    "Min", "Mul", "Node", "Not", "Or", "Ramp", "Select", "StringImm", "Sub", "Var", "cast", "const",
    "convert", "max_value", "min_value", "PARALLEL", "SERIAL", "UNROLLED", "VECTORIZED", "Allocate",
    "Buffer", "BufferStore", "Evaluate", "For", "IfThenElse", "LetStmt", "PrimFunc", "SeqStmt", "Stmt",
    "seq", "Mutator", "Visitor", "post_order", "substitute", "simplify",
]
