"""Readable text of graphs in the style of TVM's ``print(mod)``.

::

    def @main(%data: Tensor[(1, 3, 32, 32), float32], %conv_weight: Tensor[(8, 3, 3, 3), float32]) {
      %0 = nn.conv2d(%data, %conv_weight, padding=[1, 1], channels=8, kernel_size=[3, 3]) /* ty=... */;
      nn.relu(%0) /* ty=Tensor[(1, 8, 32, 32), float32] */
    }

Every call, tuple and tuple field read gets a ``%n`` line; scalar constants print inline, others as
``meta[relay.Constant][k]``; attributes print when they differ from their defaults; types print
where type inference has run.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .graph_expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from .op_registry import Op
from .traversal import post_order

_INDENT = "  "


def astext(node: Expr | Mapping[str, Function]) -> str:
    """The text of an expression, a function, or a module's functions (``{name: Function}``)."""
    printer = _Printer()
    if isinstance(node, Mapping):
        parts = [printer.function(fn, f"def @{name}", "") for name, fn in node.items()]
        return '#[version = "0.0.5"]\n' + "\n".join(parts)
    if isinstance(node, Function):
        return printer.function(node, "fn ", "")
    lines: list[str] = []
    result = printer.body(node, lines, _INDENT)
    return "\n".join([*lines, result]) if lines else result


def format_attr(value: object) -> str:
    """One attribute value as TVM prints it (``[1, 1]``, ``2e-05f``, ``"NCHW"``)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}f"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def _scalar(data: np.ndarray) -> str:
    value = data.item()
    kind = data.dtype.kind
    if kind == "f":
        suffix = "f" if data.dtype.itemsize == 4 else f"f{data.dtype.itemsize * 8}"
        return f"{value:g}{suffix}"
    if kind == "b":
        return str(bool(value))
    return f"{value}" if data.dtype == "int32" else f"{value}{data.dtype.str[1]}{data.dtype.itemsize * 8}"


def _type_comment(node: Expr) -> str:
    return f" /* ty={node.checked_type} */" if node.has_type else ""


class _Printer:
    def __init__(self) -> None:
        self.constants: dict[Constant, int] = {}

    def function(self, fn: Function, head: str, indent: str) -> str:
        params = ", ".join(self._param(p) for p in fn.params)
        attrs = "".join(f", {k}={format_attr(v)}" for k, v in fn.attrs.items())
        ret = f" -> {fn.checked_type.ret_type}" if fn.has_type else ""  # type: ignore[union-attr]
        lines: list[str] = []
        result = self.body(fn.body, lines, indent + _INDENT)
        inner = "\n".join([*lines, indent + _INDENT + result])
        return f"{head}({params}{attrs}){ret} {{\n{inner}\n{indent}}}"

    @staticmethod
    def _param(p: Var) -> str:
        t = p.checked_type if p.has_type else p.type_annotation
        return f"%{p.name_hint}" + (f": {t}" if t is not None else "")

    def body(self, root: Expr, lines: list[str], indent: str) -> str:
        names: dict[Expr, str] = {}
        counter = 0
        for node in post_order(root, into_functions=False):
            if isinstance(node, Var):
                names[node] = f"%{node.name_hint}"
            elif isinstance(node, Constant):
                names[node] = self._constant(node)
            elif isinstance(node, Function):
                if node is root:
                    continue
                text = self.function(node, "fn ", indent)
                lines.append(f"{indent}%{counter} = {text};")
                names[node] = f"%{counter}"
                counter += 1
            else:
                text = self._node(node, names) + _type_comment(node)
                if node is root:
                    return text
                lines.append(f"{indent}%{counter} = {text};")
                names[node] = f"%{counter}"
                counter += 1
        if isinstance(root, Function):
            return self.function(root, "fn ", indent)
        return names[root]

    def _constant(self, node: Constant) -> str:
        if node.data.ndim == 0:
            return _scalar(node.data)
        index = self.constants.setdefault(node, len(self.constants))
        return f"meta[relay.Constant][{index}]"

    @staticmethod
    def _node(node: Expr, names: dict[Expr, str]) -> str:
        if isinstance(node, Call):
            args = [names[a] for a in node.args]
            if isinstance(node.op, Op):
                args += [f"{k}={format_attr(v)}" for k, v in node.attrs.non_default().items()]
                return f"{node.op.name}({', '.join(args)})"
            return f"{names[node.op]}({', '.join(args)})"
        if isinstance(node, Tuple):
            return (
                "(" + ", ".join(names[f] for f in node.fields) + ("," if len(node.fields) == 1 else "") + ")"
            )
        if isinstance(node, TupleGetItem):
            return f"{names[node.tuple_value]}.{node.index}"
        raise TypeError(node)
