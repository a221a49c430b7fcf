"""AlterOpLayout: NCHW convolutions become blocked ``NCHW{b}c`` convolutions on x86, and the blocked
layout propagates through their consumers (TVM's ``relay.transform.AlterOpLayout`` with the x86
``conv2d_alter_layout``), at ``opt_level`` 3.

Each ``nn.conv2d`` whose strategy row on the target is ``conv2d_NCHWc.x86`` (or
``depthwise_conv2d_NCHWc.x86``) asks the current dispatch context for the config of its
workload, once, in graph (post) order — the order the graph tuner numbers convolutions in, so
``apply_graph_best`` gives each its own record — and becomes ``nn.contrib_conv2d_NCHWc``
(``nn.contrib_depthwise_conv2d_NCHWc``) with data layout ``NCHW{ic_bn}c``, output layout
``NCHW{oc_bn}c`` (the config's ``tile_ic`` / ``tile_oc`` blocks), the kernel transformed to
``OIHW{ic_bn}i{oc_bn}o`` (``OIHW1i{oc_bn}o``; a constant weight is folded by the next
``FoldConstant``) and the config itself as the call's ``config`` attribute, which its kernel is
compiled with.  A convolution ``conv2d_NCHWc_winograd.x86`` also serves (3x3, stride 1) has both
implementations' workloads queried (``op_strategy.select_implementation``: the tuned one of
lower cost, else Winograd); chosen, it becomes ``nn.contrib_conv2d_NCHWc_winograd`` reading
``nn.contrib_conv2d_NCHWc_winograd_weight_transform`` of its kernel (folded likewise).
The workload stays the NCHW convolution's (``op_strategy``), so tuned logs apply.
Consumers follow ``layout_propagation``'s rules; ``layout_transform`` calls remain where layouts
really change: into the first convolution, between convolutions with different blocks, before
layout-fixed operators (``nn.batch_flatten``, ``nn.dense``...) and at the function's output.
"""

from __future__ import annotations

from dataclasses import fields

from tunecli.engine.target import Target, as_target

from ..graph_expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from ..op_registry import OPS, Op
from ..op_strategy import conv2d_candidates, select_implementation
from ..ops.conv import Conv2DNCHWcAttrs
from ..ops.conv_winograd import CONV_OP, TRANSFORM_OP, WinogradWeightTransformAttrs
from ..traversal import post_order
from ..type_infer import tensor_type_of
from .layout_propagation import LayoutRewriter, propagate
from .pass_infra import Pass, function_pass

#: The strategy rows whose kernels take blocked tensors, and the graph operator of each.
BLOCKED_CONVOLUTIONS = {
    "conv2d_NCHWc": "nn.contrib_conv2d_NCHWc",
    "depthwise_conv2d_NCHWc": "nn.contrib_depthwise_conv2d_NCHWc",
    "conv2d_NCHWc_winograd": CONV_OP,
}


def alter_op_layout(fn: Function, target: Target) -> Function:
    """``fn`` with its x86 convolutions blocked and the layouts propagated (see the module docstring)."""
    rw = LayoutRewriter()
    for node in post_order(fn.body, into_functions=False):
        if isinstance(node, (Var, Constant, Function)):
            rw.set(node, node)
        elif isinstance(node, Tuple):
            new = [rw.original(f) for f in node.fields]
            rw.set(node, node if all(n is o for n, o in zip(new, node.fields, strict=True)) else Tuple(new))
        elif isinstance(node, TupleGetItem):
            tup = rw.original(node.tuple_value)
            rw.set(node, node if tup is node.tuple_value else TupleGetItem(tup, node.index))
        elif isinstance(node, Call) and isinstance(node.op, Op):
            blocked = _blocked_convolution(rw, node, target)
            rw.set(node, *(blocked or propagate(rw, node)))
        elif isinstance(node, Call):
            rw.set(node, rw.restored(node))
        else:
            rw.set(node, node)
    body = rw.original(fn.body)
    return fn if body is fn.body else Function(fn.params, body, fn.ret_type, attrs=fn.attrs)


def _blocked_convolution(rw: LayoutRewriter, call: Call, target: Target) -> tuple[Expr, str] | None:
    """The blocked form of an NCHW ``nn.conv2d`` and its output layout; None for other calls."""
    attrs = call.attrs
    if (call.op.name != "nn.conv2d" or attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW"  # type: ignore[union-attr]
            or attrs.out_layout not in ("", "NCHW")):
        return None
    own = conv2d_candidates(call, target)
    if not own or own[0].strategy.op not in BLOCKED_CONVOLUTIONS:
        return None  # the target's own row is not blocked (an arm_cpu spatial pack): left in NCHW
    candidates = [impl for impl in own
                  if impl.strategy.op in BLOCKED_CONVOLUTIONS and impl.strategy.pack is not None]
    if not candidates:
        return None
    depthwise = candidates[0].strategy.op == "depthwise_conv2d_NCHWc"
    if depthwise and tensor_type_of(call.args[1]).shape[0] != tensor_type_of(call.args[0]).shape[1]:
        return None  # a channel multiplier above 1: not TVM's blocked depthwise template
    with target:
        impl, cfg = select_implementation(candidates, target)
        data, kernel = impl.strategy.pack(cfg, impl.strategy.declare(*impl.args)).inputs
    ic_bn, oc_bn = int(data.shape[-1]), int(kernel.shape[-1])
    winograd = impl.strategy.op == "conv2d_NCHWc_winograd"
    kernel_layout = f"OIHW{1 if depthwise else ic_bn}i{oc_bn}o"
    values: dict[str, object] = {f.name: getattr(attrs, f.name) for f in fields(attrs)}
    values.update(data_layout=f"NCHW{ic_bn}c", kernel_layout="" if winograd else kernel_layout,
                  out_layout=f"NCHW{oc_bn}c", config=cfg)
    weight = rw.original(call.args[1])
    if winograd:
        transform = WinogradWeightTransformAttrs(int(kernel.shape[0]) - 2, ic_bn, oc_bn)
        weight = Call(OPS.get(TRANSFORM_OP), [weight], transform)
    else:
        weight = rw.transform(weight, "OIHW", kernel_layout)
    args = [rw.as_layout(call.args[0], f"NCHW{ic_bn}c"), weight]
    op = OPS.get(BLOCKED_CONVOLUTIONS[impl.strategy.op])
    return Call(op, args, Conv2DNCHWcAttrs(**values)), f"NCHW{oc_bn}c"


def AlterOpLayout(target: str | Target | None = None) -> Pass:  # noqa: N802 - TVM's name
    """The pass (TVM's ``relay.transform.AlterOpLayout()``) for ``target`` (default: the current
    target); it changes nothing for a target whose convolutions are not blocked (not ``cpu``)."""
    t = as_target(target) if target is not None else Target.current()

    def rewrite(fn: Function) -> Function:
        if t is None or "cpu" not in t.keys:
            return fn
        return alter_op_layout(fn, t)

    return function_pass("AlterOpLayout", 3, rewrite)
