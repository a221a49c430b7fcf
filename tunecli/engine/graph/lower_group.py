"""One fused group (a ``Primitive`` function) → one compiled kernel (TVM's compile engine).

The group's parameters become placeholders; its calls are computed in order: a tunable anchor
(conv2d, dense, batch_matmul) through the strategy row the target selects (``op_strategy``) with
the config the call carries (a blocked convolution: the one ``AlterOpLayout`` chose its layouts
by) or else the one ``DispatchContext.current`` gives for the row's workload (a tuned record under
``apply_history_best``, else the fallback config), every other call by its te definition
(``op_compute``).  An anchor's group is scheduled by the row's schedule with the rest of the group
as its epilogue; other groups by ``group_schedule``.  Stages computed from constant parameters
alone (weight re-layouts) are compiled into build-time kernels and the group kernel reads
their results (``constant_stages``).  The kernel's arguments are the group's parameters it
still reads, in order, then the precomputed inputs, then its output (``LoweredKernel.inputs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tunecli.engine import te
from tunecli.engine.build import build
from tunecli.engine.codegen import CompiledKernel
from tunecli.engine.ir.stmt import PrimFunc
from tunecli.engine.lower import lower
from tunecli.engine.ops.strategy import OpCall
from tunecli.engine.schedule import create_schedule
from tunecli.engine.target import Target
from tunecli.engine.task.config_source import DEFAULT, ConfigSource, config_source
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.workload_args import Workload
from tunecli.errors import GraphError

from .constant_stages import (
    build_time_target,
    constant_frontier,
    identity_stage,
    placeholders_read,
    replace_stages,
)
from .gpu_group_schedule import schedule_group_gpu
from .graph_expr import Call, Expr, Function, Tuple, Var
from .group_schedule import schedule_group
from .op_compute import compute_of
from .op_registry import Op
from .op_strategy import Implementation, chosen_implementation
from .traversal import post_order
from .type_infer import tensor_type_of
from .types import TensorType


@dataclass(frozen=True)
class AnchorConfig:
    """The tunable op of a kernel: its task and whether a tuned record configured it.

    Attributes
    ----------
    task_name : str
    workload : tuple
    tuned : bool
        True when a record of this workload (a log's, a package's) configured it.
    source : ConfigSource
        Where its config came from (log, package, nearest record, default).
    """

    task_name: str
    workload: Workload
    tuned: bool
    source: ConfigSource = DEFAULT

    @classmethod
    def of(cls, task_name: str, workload: Workload, config: ConfigSpace) -> AnchorConfig:
        """The record of a kernel whose anchor ``config`` (a dispatch answer) configured."""
        source = config_source(config)
        return cls(task_name, workload, source.measured, source)


@dataclass(frozen=True)
class PrecomputedInput:
    """A kernel input computed once at build time from constant arguments of the group.

    Attributes
    ----------
    kernel : CompiledKernel
        Takes the arguments ``params`` (in order), writes the input (its last argument).
    params : tuple of int
        Indices of the group's parameters it reads (all constants).
    """

    kernel: CompiledKernel
    params: tuple[int, ...]


@dataclass(frozen=True)
class LoweredKernel:
    """A compiled group: the kernel, what to pass it, and, for a group with a tunable anchor, its task.

    Attributes
    ----------
    kernel : CompiledKernel
    inputs : tuple of (int or PrecomputedInput)
        The kernel's input arguments: a group parameter (its index) or a precomputed constant;
        the output follows them.
    anchor : AnchorConfig or None
    func : PrimFunc or None
        The lowered loop nest the kernel was compiled from (None from ``group_compiler``, which
        keeps no loop nest: a cached kernel has none).
    """

    kernel: CompiledKernel
    inputs: tuple[int | PrecomputedInput, ...]
    anchor: AnchorConfig | None
    func: PrimFunc | None = None


class _Query:
    """The type of :data:`QUERY`."""


#: ``lower_group``'s ``config`` when the anchor's config is to be asked for (see :func:`anchor_config`).
QUERY = _Query()


def lower_group(
    fn: Function, target: Target, func_name: str, constant_params: frozenset[int] = frozenset(),
    config: ConfigSpace | _Query | None = QUERY,
) -> LoweredKernel:
    """Compile the primitive function ``fn`` into the kernel ``func_name`` for ``target``.

    Parameters
    ----------
    fn : Function
        A fused group (typed parameters; the body's calls are operator calls).
    target : Target
    func_name : str
        Symbol of the kernel.
    constant_params : frozenset of int
        Indices of the parameters that are constants at every call (weights): stages computed
        from them alone are evaluated at build time (``constant_stages``).
    config : ConfigSpace or None, optional
        The anchor's config, when the caller has already asked for it (:func:`anchor_config`; None
        for a group without a tunable call).

    Returns
    -------
    LoweredKernel
    """
    anchor_impl = group_anchor(fn, target)
    if anchor_impl is not None and config is QUERY:
        config = anchor_config(*anchor_impl, target)
    placeholders = {
        p: te.placeholder(_param_shape(p, fn, anchor_impl), tensor_type_of(p).dtype, name=p.name_hint)
        for p in fn.params
    }
    out, anchor_outs = _compute_group(fn, placeholders, anchor_impl, config, target, func_name)
    anchor_cfg = config
    constants = [placeholders[fn.params[i]] for i in sorted(constant_params)]
    identities, precomputed = _hoist_constant_stages(out, constants, fn, placeholders, target, func_name)
    if identities:
        new = replace_stages([out], {id(stage.op): ident for stage, ident in identities})
        out = new.get(id(out.op), out)
        if anchor_outs is not None:
            anchor_outs = tuple(new.get(id(t.op), t) for t in anchor_outs)
    if anchor_outs is not None:
        epilogue = None if out is anchor_outs[0] else out
        with target:
            sch = anchor_impl[1].strategy.schedule(anchor_cfg, anchor_outs, epilogue)  # type: ignore[index]
    elif target.is_gpu:
        sch = schedule_group_gpu([out], target)
    else:
        sch = schedule_group([out], target)
    for _, ident in identities:
        sch[ident].compute_inline()
    read = {id(t.op) for t in placeholders_read(out)}
    used = [i for i, p in enumerate(fn.params) if id(placeholders[p].op) in read]
    args = [placeholders[fn.params[i]] for i in used] + [ph for ph, _ in precomputed] + [out]
    func = lower(sch, args, func_name, target)
    module = build(func, target=target)
    inputs: tuple[int | PrecomputedInput, ...] = (*used, *(pre for _, pre in precomputed))
    anchor = None
    if anchor_impl is not None:
        impl = anchor_impl[1]
        anchor = AnchorConfig.of(impl.task_name, impl.workload, anchor_cfg)
    return LoweredKernel(module.kernel, inputs, anchor, func)


def _compute_group(
    fn: Function,
    placeholders: dict[Var, te.Tensor],
    anchor_impl: tuple[Call, Implementation] | None,
    anchor_cfg: ConfigSpace,
    target: Target,
    func_name: str,
) -> tuple[te.Tensor, tuple[te.Tensor, ...] | None]:
    """The group's stages: ``(output, the anchor's outputs)``."""
    anchor_call = anchor_impl[0] if anchor_impl else None
    values: dict[Expr, te.Tensor | list[te.Tensor]] = dict(placeholders)
    anchor_outs: tuple[te.Tensor, ...] | None = None
    for node in post_order(fn.body, into_functions=False):
        if node in values:
            continue
        if isinstance(node, Tuple):
            values[node] = [values[f] for f in node.fields]
        elif isinstance(node, Call) and isinstance(node.op, Op):
            inputs = [values[a] for a in node.args]
            if node is anchor_call:
                impl: Implementation = anchor_impl[1]  # type: ignore[index]
                call = OpCall(tuple(inputs), impl.strategy.declare(*impl.args).attrs)
                with target:
                    anchor_outs = impl.strategy.outputs_of(anchor_cfg, call)
                values[node] = _in_call_layout(anchor_outs[0], tensor_type_of(node), impl.task_name)
            else:
                if isinstance(node.args[0], Tuple):
                    inputs = values[node.args[0]]
                values[node] = compute_of(node.op.name)(node.attrs, inputs, tensor_type_of(node))
        else:
            raise GraphError(f"{func_name}: cannot compile {node!r} inside a fused group")
    return values[fn.body], anchor_outs


def _hoist_constant_stages(
    out: te.Tensor,
    constants: list[te.Tensor],
    fn: Function,
    placeholders: dict[Var, te.Tensor],
    target: Target,
    func_name: str,
) -> tuple[list[tuple[te.Tensor, te.Tensor]], list[tuple[te.Tensor, PrecomputedInput]]]:
    """Compile each constant stage of the group into a build-time kernel; return ``(stage, identity
    stage)`` pairs and the new inputs (placeholder, how to compute it)."""
    index = {id(placeholders[p].op): i for i, p in enumerate(fn.params)}
    host = build_time_target(target)  # build-time kernels run here
    identities, precomputed = [], []
    for k, stage in enumerate(constant_frontier([out], constants)):
        reads = placeholders_read(stage)
        pre = build(create_schedule([stage.op]), [*reads, stage], host, name=f"{func_name}_const{k}")
        ph = te.placeholder(stage.shape, stage.dtype, name=f"{stage.op.name}_packed")
        identities.append((stage, identity_stage(ph, stage)))
        precomputed.append((ph, PrecomputedInput(pre.kernel, tuple(index[id(r.op)] for r in reads))))
    return identities, precomputed


def _in_call_layout(out: te.Tensor, call_type: TensorType, task_name: str) -> te.Tensor:
    """The anchor's output as the graph call's type: a channel-blocked ``[N, C/b, H, W, b]``
    output (an NCHWc row) is unpacked to ``[N, C, H, W]`` by an injective stage the epilogue
    starts with."""
    want = tuple(call_type.shape)
    if tuple(out.shape) == want:
        return out
    if len(out.shape) == 5 and len(want) == 4 and out.shape[1] * out.shape[4] == want[1]:
        block = out.shape[4]
        return te.compute(want, lambda n, c, h, w: out[n, c // block, h, w, c % block], name="unpack_nchwc",
                          tag="injective,layout_transform")
    raise GraphError(f"{task_name}: its output {tuple(out.shape)} is not the graph's {want}")


def anchor_config(call: Call, impl: Implementation, target: Target) -> ConfigSpace:
    """The config the anchor ``call`` is compiled with: the one it carries (a blocked convolution:
    the one ``AlterOpLayout`` chose its layouts by), else ``DispatchContext.current``'s answer for
    the row's workload (a tuned record, else the fallback config)."""
    cfg = getattr(call.attrs, "config", None)
    return cfg if cfg is not None else DispatchContext.current.query(target, impl.workload)


def group_anchor(fn: Function, target: Target) -> tuple[Call, Implementation] | None:
    """The group's tunable call and its strategy row on ``target`` (None: no tunable call, or no
    row fits it)."""
    for node in post_order(fn.body, into_functions=False):
        if isinstance(node, Call) and isinstance(node.op, Op) and node.op.strategy_op is not None:
            impl = chosen_implementation(node, target)
            return (node, impl) if impl is not None else None
    return None


def _param_shape(p: Var, fn: Function, anchor: tuple[Call, Implementation] | None) -> tuple[int, ...]:
    """A parameter's shape in the kernel: the anchor row's input shape when the anchor reads it
    (a depthwise weight ``[C * m, 1, KH, KW]`` is the row's ``[C, m, KH, KW]``: same bytes)."""
    shape = tuple(tensor_type_of(p).shape)
    if anchor is not None and p in anchor[0].args:
        declared = anchor[1].strategy.declare(*anchor[1].args).inputs[anchor[0].args.index(p)]
        same_rank = len(declared.shape) == len(shape)
        if same_rank and tuple(declared.shape) != shape and _size(declared.shape) == _size(shape):
            return tuple(declared.shape)
    return shape


def _size(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n
