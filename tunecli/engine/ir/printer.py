"""Readable text of expressions, statements and lowered functions (what ``tunecli.lower`` prints)."""

from __future__ import annotations

from . import expr as E
from . import stmt as S
from .node import Node


def node_str(node: Node) -> str:
    """Text of an expression (one line) or a statement."""
    return expr_str(node) if isinstance(node, E.Expr) else stmt_str(node)


def expr_str(e: E.Expr) -> str:
    """One-line text of an expression."""
    if isinstance(e, E.IntImm):
        return ("True" if e.value else "False") if e.dtype == "bool" else str(e.value)
    if isinstance(e, E.FloatImm):
        text = repr(e.value)
        return text + "f" if e.dtype == "float32" else text
    if isinstance(e, E.StringImm):
        return repr(e.value)
    if isinstance(e, E.Var):
        return e.name
    if isinstance(e, (E.Min, E.Max)):
        return f"{e.symbol}({expr_str(e.a)}, {expr_str(e.b)})"
    if isinstance(e, E.BinaryOp):
        return f"({expr_str(e.a)} {e.symbol} {expr_str(e.b)})"
    if isinstance(e, E.Not):
        return f"!{expr_str(e.a)}"
    if isinstance(e, E.Cast):
        return f"{e.dtype}({expr_str(e.value)})"
    if isinstance(e, E.Select):
        return f"select({expr_str(e.condition)}, {expr_str(e.true_value)}, {expr_str(e.false_value)})"
    if isinstance(e, E.Call):
        return f"{e.name}({', '.join(expr_str(a) for a in e.args)})"
    if isinstance(e, E.Ramp):
        return f"ramp({expr_str(e.base)}, {expr_str(e.stride)}, {e.lanes})"
    if isinstance(e, E.Broadcast):
        return f"x{e.lanes}({expr_str(e.value)})"
    if isinstance(e, E.BufferLoad):
        return f"{e.buffer.name}[{', '.join(expr_str(i) for i in e.indices)}]"
    if isinstance(e, E.Let):
        return f"(let {e.var.name} = {expr_str(e.value)} in {expr_str(e.body)})"
    custom = getattr(e, "text", None)  # te nodes (tensor reads, reductions) print themselves
    if callable(custom):
        return custom()
    return f"<{type(e).__name__}>"


def stmt_str(s: S.Stmt | None, indent: int = 0) -> str:
    """Indented multi-line text of a statement."""
    pad = "  " * indent
    if s is None:
        return ""
    if isinstance(s, S.SeqStmt):
        return "".join(stmt_str(x, indent) for x in s.stmts)
    if isinstance(s, S.For):
        kind = "" if s.kind == S.SERIAL else f"{s.kind} "
        if s.thread_tag:
            kind = f"thread_binding({s.thread_tag}) {kind}"
        head = f"{pad}{kind}for ({s.loop_var.name}, {expr_str(s.min)}, {expr_str(s.extent)}) {{\n"
        return head + stmt_str(s.body, indent + 1) + pad + "}\n"
    if isinstance(s, S.BufferStore):
        idx = ", ".join(expr_str(i) for i in s.indices)
        return f"{pad}{s.buffer.name}[{idx}] = {expr_str(s.value)}\n"
    if isinstance(s, S.Allocate):
        return (f"{pad}allocate {s.buffer.name}[{s.buffer.dtype} * {s.buffer.size}], {s.buffer.scope}\n"
                + stmt_str(s.body, indent))
    if isinstance(s, S.IfThenElse):
        text = f"{pad}if ({expr_str(s.condition)}) {{\n{stmt_str(s.then_case, indent + 1)}{pad}}}"
        if s.else_case is not None:
            text += f" else {{\n{stmt_str(s.else_case, indent + 1)}{pad}}}"
        return text + "\n"
    if isinstance(s, S.LetStmt):
        return f"{pad}{s.var.name} = {expr_str(s.value)}\n" + stmt_str(s.body, indent)
    if isinstance(s, S.Evaluate):
        return f"{pad}{expr_str(s.value)}\n"
    return f"{pad}<{type(s).__name__}>\n"


def func_str(f: S.PrimFunc) -> str:
    """Text of a lowered function: its signature and its loop nest."""
    params = ", ".join(f"{b.name}: {b.dtype}{list(b.shape)}" for b in f.params)
    return f"primfn {f.name}({params}) {{\n{stmt_str(f.body, 1)}}}\n"
