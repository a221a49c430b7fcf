"""ConvertLayout: convolutions rewritten into the data and kernel layouts a user asks for (TVM's
``relay.transform.ConvertLayout({"nn.conv2d": ["NCHW", "default"]})``), at ``opt_level`` 3.

Each ``nn.conv2d`` whose data or kernel layout differs from the desired one reads its data and
weight through ``layout_transform`` calls and computes in the desired layouts (``"default"``
kernel: ``OIHW`` for ``NCHW`` data, ``HWIO`` for ``NHWC``, ``HWOI`` for a depthwise ``NHWC``
convolution).  Its output stays in the new layout through the operators that can compute in it
(one-input elementwise operators, ``nn.bias_add`` with its axis moved, the 2-D pools with their
``layout`` changed, broadcasting arithmetic whose other operand is brought to the layout: a
per-channel ``[C]`` constant of NHWC becomes ``[1, C, 1, 1]`` of NCHW) and goes back to the
original layout before any other consumer and at the function's output; a transform of a
transform composes into one, or into none where they cancel, so two converted convolutions in a
row meet without a transform between them.  A network written in ``NHWC`` (which this compiler's
convolutions do not take) then builds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from tunecli.errors import GraphError

from ..graph_expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from ..layout import parse_layout
from ..op_registry import Op, OpPattern
from ..ops.transform import layout_transform, reshape
from ..traversal import post_order
from ..type_infer import infer_types, tensor_type_of
from .pass_infra import Pass, function_pass

#: The operators whose layouts this pass converts.
CONVERTIBLE = ("nn.conv2d",)
_BINARY = frozenset({"add", "subtract", "multiply", "divide", "maximum", "minimum", "power"})
_POOLS = frozenset({"nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d",
                    "nn.adaptive_avg_pool2d"})


def _plain(layout: str, letters: str) -> bool:
    """Whether ``layout`` orders exactly the primal axes ``letters`` (no blocked sub-axes)."""
    try:
        axes = parse_layout(layout)
    except GraphError:
        return False
    return all(f is None for _, f in axes) and sorted(a for a, _ in axes) == sorted(letters)


def desired_conv2d_layouts(desired: Mapping[str, Sequence[str]]) -> tuple[str, str]:
    """The checked ``(data_layout, kernel_layout)`` asked for ``nn.conv2d`` (kernel may be
    ``"default"``).

    Raises
    ------
    GraphError
        Naming the operator or layout that cannot be converted.
    """
    if not isinstance(desired, Mapping) or not desired:
        raise GraphError("ConvertLayout: desired_layouts must be a dict such as "
                         f"{{'nn.conv2d': ['NCHW', 'default']}}, got {desired!r}")
    for name in desired:
        if name not in CONVERTIBLE:
            raise GraphError(f"ConvertLayout: no layout conversion for {name!r}; this pass converts "
                             f"{', '.join(CONVERTIBLE)} (its consumers follow its layout)")
    layouts = desired["nn.conv2d"]
    if isinstance(layouts, str) or not 1 <= len(layouts) <= 2:
        raise GraphError(f"ConvertLayout: nn.conv2d wants [data_layout, kernel_layout], got {layouts!r}")
    data, kernel = layouts[0], (layouts[1] if len(layouts) == 2 else "default")
    if not _plain(data, "NCHW"):
        raise GraphError(f"ConvertLayout: nn.conv2d data layout {data!r} is not an order of N, C, H, W "
                         "(such as 'NCHW' or 'NHWC')")
    if kernel != "default" and not _plain(kernel, "OIHW"):
        raise GraphError(f"ConvertLayout: nn.conv2d kernel layout {kernel!r} is not 'default' or an order "
                         "of O, I, H, W (such as 'OIHW' or 'HWIO')")
    return data, kernel


class _Rewrite:
    """Each original node's new expression and the layout it is in, when not its original one."""

    def __init__(self) -> None:
        self.new: dict[Expr, Expr] = {}
        self.moved: dict[Expr, tuple[str, str]] = {}  # node -> (layout it is in, its original layout)

    def original(self, node: Expr) -> Expr:
        """The new expression of ``node`` in ``node``'s original layout."""
        new = self.new[node]
        if node not in self.moved:
            return new
        now, was = self.moved[node]
        return transform(new, now, was)


def transform(expr: Expr, src: str, dst: str) -> Expr:
    """``expr`` (in ``src``) in layout ``dst``; a transform of a transform composes or cancels."""
    if src == dst:
        return expr
    if isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == "layout_transform":
        if expr.attrs.dst_layout == src:  # type: ignore[attr-defined]
            inner = expr.attrs.src_layout  # type: ignore[attr-defined]
            return expr.args[0] if inner == dst else layout_transform(expr.args[0], inner, dst)
    return layout_transform(expr, src, dst)


def _default_kernel(data_layout: str, call: Call) -> str:
    if data_layout == "NCHW":
        return "OIHW"
    if data_layout == "NHWC":
        channels = tensor_type_of(call.args[0]).shape[call.attrs.data_layout.index("C")]  # type: ignore[attr-defined]
        groups = call.attrs.groups  # type: ignore[attr-defined]
        return "HWOI" if groups > 1 and groups == channels else "HWIO"
    raise GraphError(f"ConvertLayout: no default kernel layout for data layout {data_layout!r}; "
                     "name the kernel layout")


def _convert_conv2d(rw: _Rewrite, call: Call, data_layout: str, kernel_layout: str) -> bool:
    attrs = call.attrs
    cur_data, cur_kernel = attrs.data_layout, attrs.kernel_layout  # type: ignore[attr-defined]
    out_layout = attrs.out_layout or cur_data  # type: ignore[attr-defined]
    if not (_plain(cur_data, "NCHW") and _plain(cur_kernel, "OIHW") and _plain(out_layout, "NCHW")):
        return False  # a blocked convolution: not this pass's to change
    kernel_layout = _default_kernel(data_layout, call) if kernel_layout == "default" else kernel_layout
    if (cur_data, cur_kernel, out_layout) == (data_layout, kernel_layout, data_layout):
        return False
    data_node, weight_node = call.args
    data = _in_layout(rw, data_node, cur_data, data_layout)
    weight = transform(rw.original(weight_node), cur_kernel, kernel_layout)
    new_attrs = replace(attrs, data_layout=data_layout, kernel_layout=kernel_layout, out_layout="")  # type: ignore[type-var]
    rw.new[call] = Call(call.op, [data, weight], new_attrs)
    if data_layout != out_layout:
        rw.moved[call] = (data_layout, out_layout)
    return True


def _in_layout(rw: _Rewrite, node: Expr, original_layout: str, wanted: str) -> Expr:
    """The new expression of ``node`` (originally in ``original_layout``) in ``wanted``."""
    new = rw.new[node]
    now = rw.moved[node][0] if node in rw.moved else original_layout
    return transform(new, now, wanted)


def _follow(rw: _Rewrite, call: Call) -> bool:
    """Keep a moved input's layout through ``call`` when the operator can compute in it; False if not."""
    op = call.op
    if not isinstance(op, Op) or not call.args:
        return False
    if op.name in _BINARY and len(call.args) == 2:
        return _follow_binary(rw, call)
    if call.args[0] not in rw.moved:
        return False
    now, was = rw.moved[call.args[0]]
    if len(call.args) == 1 and op.pattern == OpPattern.ELEMWISE:
        rw.new[call] = Call(op, [rw.new[call.args[0]]], call.attrs)
    elif op.name == "nn.bias_add" and call.args[1] not in rw.moved:
        axis = call.attrs.axis % len(was)  # type: ignore[attr-defined]
        new_attrs = replace(call.attrs, axis=now.index(was[axis]))  # type: ignore[type-var]
        rw.new[call] = Call(op, [rw.new[call.args[0]], rw.new[call.args[1]]], new_attrs)
    elif op.name in _POOLS and call.attrs.layout == was and call.attrs.out_layout in ("", was):  # type: ignore[attr-defined]
        new_attrs = replace(call.attrs, layout=now, out_layout="")  # type: ignore[type-var]
        rw.new[call] = Call(op, [rw.new[call.args[0]]], new_attrs)
    else:
        return False
    rw.moved[call] = (now, was)
    return True


def _follow_binary(rw: _Rewrite, call: Call) -> bool:
    """A broadcasting operator with a moved operand computes in its layout; the other operand, of
    the same layout or of fewer dimensions (broadcast against the trailing axes), is brought to it."""
    moved = [a for a in call.args if a in rw.moved]
    if not moved:
        return False
    now, was = rw.moved[moved[0]]
    if any(rw.moved[a] != (now, was) for a in moved) or len(tensor_type_of(call).shape) != len(was):
        return False
    args = []
    for arg in call.args:
        if arg in rw.moved:
            args.append(rw.new[arg])
            continue
        shape = tuple(tensor_type_of(arg).shape)
        if not all(isinstance(d, int) for d in shape):
            return False
        full = (1,) * (len(was) - len(shape)) + shape  # numpy's broadcasting: aligned to the last axes
        new = rw.original(arg)
        if len(shape) != len(was):
            new = reshape(new, full) if shape else new
        args.append(transform(new, was, now) if shape else new)
    rw.new[call] = Call(call.op, args, call.attrs)
    rw.moved[call] = (now, was)
    return True


def convert_layout(fn: Function, desired: Mapping[str, Sequence[str]]) -> Function:
    """``fn`` with its convolutions in the ``desired`` layouts (see the module docstring)."""
    data_layout, kernel_layout = desired_conv2d_layouts(desired)
    infer_types(fn)
    rw = _Rewrite()
    changed = False
    for node in post_order(fn.body, into_functions=False):
        if isinstance(node, (Var, Constant, Function)):
            rw.new[node] = node
        elif isinstance(node, Tuple):
            rw.new[node] = Tuple([rw.original(f) for f in node.fields])
        elif isinstance(node, TupleGetItem):
            rw.new[node] = TupleGetItem(rw.original(node.tuple_value), node.index)
        elif isinstance(node, Call):
            if isinstance(node.op, Op) and node.op.name == "nn.conv2d":
                if _convert_conv2d(rw, node, data_layout, kernel_layout):
                    changed = True
                    continue
            if not _follow(rw, node):
                rw.new[node] = Call(node.op, [rw.original(a) for a in node.args], node.attrs)
        else:
            rw.new[node] = node
    if not changed:
        return fn
    return Function(fn.params, rw.original(fn.body), fn.ret_type, attrs=fn.attrs)


def ConvertLayout(desired_layouts: Mapping[str, Sequence[str]]) -> Pass:  # noqa: N802 - TVM's name
    """The pass (TVM's ``relay.transform.ConvertLayout``): ``desired_layouts`` maps ``"nn.conv2d"``
    to ``[data_layout, kernel_layout]`` (``"default"`` kernel: the usual one of the data layout).

    Raises
    ------
    GraphError
        For an operator this pass does not convert or a layout that is not an order of the axes.
    """
    desired_conv2d_layouts(desired_layouts)  # checked when made, as TVM does
    desired = dict(desired_layouts)
    return function_pass("ConvertLayout", 3, lambda fn: convert_layout(fn, desired))
