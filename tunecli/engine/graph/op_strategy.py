"""Which strategy row implements a tunable graph call, and its template arguments (TVM's
``relay.op.strategy``: ``conv2d_strategy``, ``dense_strategy`` ...).

For a call of ``nn.conv2d`` / ``nn.dense`` / ``nn.batch_matmul`` on a target, :func:`implementation`
picks the best row of ``ops.registry.STRATEGIES`` among the operator keys the call can use (a
depthwise convolution its depthwise keys, a plain one ``conv2d_NCHWc`` before ``conv2d_nchw``)
under the target key that decides (TVM's rule: the first key of the target with a row for the
call, so ``arm_cpu`` before ``cpu``: an ARM target's convolutions are its ``arm_cpu`` rows, never
x86 ones), and fills the row's template arguments by name from what the call determines (its *facts*:
``N, H, W, CI, CO, KH, KW, stride(s), padding, dilation, dtype`` and TVM's ``data, kernel,
layout, out_layout, out_dtype``...).  So the task name and workload of a call (what
``extract_from_program`` returns and ``apply_history_best`` looks up) are those of the row the
target selects: a new row is a table entry, not a change here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from tunecli.engine.log.history_best import package_config
from tunecli.engine.log.layout_choice import MARGIN
from tunecli.engine.ops.registry import STRATEGIES
from tunecli.engine.ops.strategy import Strategy
from tunecli.engine.target import Target
from tunecli.engine.task.config_source import config_source
from tunecli.engine.task.dispatcher import DispatchContext
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.task import args_to_workload
from tunecli.engine.task.workload_args import Workload, WorkloadArg
from tunecli.errors import GraphError

from .graph_expr import Call
from .layout import primal_sizes
from .ops.conv import conv2d_padding
from .ops.define import window_pads
from .type_infer import tensor_type_of


@dataclass(frozen=True)
class Implementation:
    """The strategy row of one graph call and the template arguments of its task.

    Attributes
    ----------
    strategy : Strategy
    args : tuple
        Template arguments, in the row's order (tensors as ``("TENSOR", shape, dtype)``).
    """

    strategy: Strategy
    args: tuple[WorkloadArg, ...]

    @property
    def task_name(self) -> str:
        """The autotvm template (task) name."""
        return self.strategy.name

    @property
    def workload(self) -> Workload:
        """The task's workload key: ``(name, *args)`` in log form."""
        return args_to_workload(self.args, self.strategy.name)


#: What a graph call determines of its template's arguments, by parameter name (``"N"``, ``"strides"``,
#: ``"data"``: a tensor as ``("TENSOR", shape, dtype)``).
Facts: TypeAlias = dict[str, WorkloadArg]


def _tensor(shape: tuple[int, ...], dtype: str) -> WorkloadArg:
    return ("TENSOR", tuple(int(s) for s in shape), dtype)


def _conv2d_keys(call: Call) -> tuple[list[str], Facts]:
    attrs = call.attrs
    data, weight, out = tensor_type_of(call.args[0]), tensor_type_of(call.args[1]), tensor_type_of(call)
    if attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW":
        return [], {}
    n, ci, h, w = data.shape
    co, _, kh, kw = weight.shape
    pads = tuple(int(p) for p in conv2d_padding(attrs, (kh, kw)))
    facts: Facts = {"N": n, "H": h, "W": w, "CI": ci, "CO": co, "KH": kh, "KW": kw, "C": ci,
             "multiplier": co // ci, "stride": tuple(attrs.strides), "strides": tuple(attrs.strides),
             "padding": pads, "dilation": tuple(attrs.dilation), "dtype": data.dtype,
             "data": _tensor(data.shape, data.dtype), "kernel": _tensor(weight.shape, weight.dtype),
             "layout": attrs.data_layout, "out_layout": attrs.out_layout or attrs.data_layout,
             "out_dtype": out.dtype}
    if attrs.groups == 1:
        return ["conv2d_NCHWc", "conv2d_nchw"], facts
    if attrs.groups == ci and co % ci == 0:
        return ["depthwise_conv2d_NCHWc", "depthwise_conv2d_nchw"], facts
    return [], facts


def _conv2d_nchwc_keys(call: Call) -> tuple[list[str], Facts]:
    """A blocked convolution (after ``AlterOpLayout``) keeps the NCHW convolution's workload: the
    logical ``data [N, C, H, W]`` and ``kernel [O, I, KH, KW]``, layouts ``NCHW``, so tuned logs apply."""
    attrs = call.attrs
    data, weight, out = tensor_type_of(call.args[0]), tensor_type_of(call.args[1]), tensor_type_of(call)
    d = primal_sizes(data.shape, attrs.data_layout)
    k = primal_sizes(weight.shape, attrs.kernel_layout)
    n, ci, h, w = d["N"], d["C"], d["H"], d["W"]
    co, kh, kw = k["O"], k["H"], k["W"]
    pads = tuple(int(p) for p in conv2d_padding(attrs, (kh, kw)))
    facts: Facts = {"N": n, "H": h, "W": w, "CI": ci, "CO": co, "KH": kh, "KW": kw, "C": ci,
             "multiplier": co // ci, "stride": tuple(attrs.strides), "strides": tuple(attrs.strides),
             "padding": pads, "dilation": tuple(attrs.dilation), "dtype": data.dtype,
             "data": _tensor((n, ci, h, w), data.dtype),
             "kernel": _tensor((co, k["I"], kh, kw), weight.dtype),
             "layout": "NCHW", "out_layout": "NCHW", "out_dtype": out.dtype}
    if call.op.name == "nn.contrib_depthwise_conv2d_NCHWc":  # type: ignore[union-attr]
        return ["depthwise_conv2d_NCHWc"], facts
    return ["conv2d_NCHWc"], facts


def _conv2d_winograd_keys(call: Call) -> tuple[list[str], Facts]:
    """A Winograd convolution keeps the NCHW convolution's workload too; its weight is the transformed
    kernel ``[alpha, alpha, O/oc_bn, I/ic_bn, ic_bn, oc_bn]`` of an ``[O, I, 3, 3]`` kernel."""
    attrs = call.attrs
    data, weight, out = tensor_type_of(call.args[0]), tensor_type_of(call.args[1]), tensor_type_of(call)
    d = primal_sizes(data.shape, attrs.data_layout)
    _, _, kb, cb, ic_bn, oc_bn = weight.shape
    facts: Facts = {"data": _tensor((d["N"], d["C"], d["H"], d["W"]), data.dtype),
             "kernel": _tensor((kb * oc_bn, cb * ic_bn, 3, 3), weight.dtype),
             "strides": tuple(attrs.strides), "padding": tuple(int(p) for p in conv2d_padding(attrs, (3, 3))),
             "dilation": tuple(attrs.dilation), "layout": "NCHW", "out_layout": "NCHW",
             "out_dtype": out.dtype}
    return ["conv2d_NCHWc_winograd"], facts


def _dense_keys(call: Call) -> tuple[list[str], Facts]:
    data, weight, out = tensor_type_of(call.args[0]), tensor_type_of(call.args[1]), tensor_type_of(call)
    (m, k), n = data.shape, weight.shape[0]
    facts: Facts = {"M": m, "N": n, "K": k, "dtype": data.dtype, "data": _tensor(data.shape, data.dtype),
             "weight": _tensor(weight.shape, weight.dtype), "bias": None, "out_dtype": out.dtype}
    int8 = (data.dtype, weight.dtype, out.dtype) == ("int8", "int8", "int32") and int(k) % 4 == 0
    return (["dense_int8", "dense"] if int8 else ["dense"]), facts


def _batch_matmul_keys(call: Call) -> tuple[list[str], Facts]:
    """TVM's workload of ``batch_matmul.x86``: both operands, the output shape and dtype, and
    which operands are transposed (every form is served)."""
    x, y, out = tensor_type_of(call.args[0]), tensor_type_of(call.args[1]), tensor_type_of(call)
    facts: Facts = {"tensor_a": _tensor(x.shape, x.dtype), "tensor_b": _tensor(y.shape, y.dtype),
             "out_shape": tuple(int(d) for d in out.shape), "out_dtype": out.dtype,
             "transpose_a": bool(call.attrs.transpose_a), "transpose_b": bool(call.attrs.transpose_b)}
    return ["batch_matmul"], facts


def _conv3d_keys(call: Call) -> tuple[list[str], Facts]:
    """TVM's workload of ``conv3d_ncdhw.x86``: both tensors, the window attributes (padding in six
    numbers) and the output dtype."""
    data, weight, out = tensor_type_of(call.args[0]), tensor_type_of(call.args[1]), tensor_type_of(call)
    facts: Facts = {"data": _tensor(data.shape, data.dtype), "kernel": _tensor(weight.shape, weight.dtype),
             "strides": tuple(call.attrs.strides), "padding": tuple(call.attrs.padding),
             "dilation": tuple(call.attrs.dilation), "out_dtype": out.dtype}
    return ["conv3d_ncdhw"], facts


def _conv2d_transpose_keys(call: Call) -> tuple[list[str], Facts]:
    """TVM's workload of ``conv2d_transpose_nchw.x86`` (one group, no dilation, as TVM's x86
    strategy): both tensors, strides, padding in four numbers, output dtype, output padding."""
    attrs = call.attrs
    data, weight, out = tensor_type_of(call.args[0]), tensor_type_of(call.args[1]), tensor_type_of(call)
    if attrs.groups != 1 or tuple(attrs.dilation) != (1, 1):
        return [], {}
    facts: Facts = {"data": _tensor(data.shape, data.dtype), "kernel": _tensor(weight.shape, weight.dtype),
             "strides": tuple(attrs.strides),
             "padding": tuple(int(p) for p in window_pads(call.op.name, attrs.padding, weight.shape[2:])),
             "out_dtype": out.dtype, "output_padding": tuple(attrs.output_padding)}
    return ["conv2d_transpose_nchw"], facts


_KEYS = {"nn.conv2d": _conv2d_keys, "nn.contrib_conv2d_NCHWc": _conv2d_nchwc_keys,
         "nn.conv3d": _conv3d_keys, "nn.conv2d_transpose": _conv2d_transpose_keys,
         "nn.contrib_conv2d_NCHWc_winograd": _conv2d_winograd_keys,
         "nn.contrib_depthwise_conv2d_NCHWc": _conv2d_nchwc_keys, "nn.dense": _dense_keys,
         "nn.batch_matmul": _batch_matmul_keys}


def implementation(call: Call, target: Target) -> Implementation | None:
    """The strategy row and template arguments of a tunable ``call`` on ``target``; None when the
    operator is not tunable or no row fits it (a grouped, non-depthwise convolution)."""
    keys_of = _KEYS.get(call.op.name)  # type: ignore[union-attr]
    if keys_of is None:
        return None
    keys, facts = keys_of(call)
    deciding = _deciding_key(keys, target)
    for key in keys:
        rows = _rows(key, target, deciding)
        if rows:
            return Implementation(rows[0], _template_args(rows[0], facts, call))
    return None


def _deciding_key(op_keys: Sequence[str], target: Target) -> str | None:
    """The first key of ``target`` with a row for any of ``op_keys`` (TVM's ``select_implementation``:
    the strategy of the first target key that registers one decides; later keys only fall back)."""
    for target_key in target.keys:
        if any(row.target_key == target_key for op in op_keys for row in STRATEGIES.candidates(op, target)):
            return target_key
    return None


def _rows(op_key: str, target: Target, target_key: str | None) -> list[Strategy]:
    """The rows of ``op_key`` registered under ``target_key`` for ``target``, best first."""
    return [row for row in STRATEGIES.candidates(op_key, target) if row.target_key == target_key]


def winograd_implementation(call: Call, target: Target) -> Implementation | None:
    """The ``conv2d_NCHWc_winograd`` row for an NCHW ``nn.conv2d`` it serves (3x3, stride 1,
    dilation 1, one group, float32) on ``target``; None otherwise."""
    if call.op.name != "nn.conv2d":  # type: ignore[union-attr]
        return None
    attrs = call.attrs
    data, weight, out = tensor_type_of(call.args[0]), tensor_type_of(call.args[1]), tensor_type_of(call)
    if (attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW" or tuple(weight.shape[2:]) != (3, 3)
            or tuple(attrs.strides) != (1, 1) or tuple(attrs.dilation) != (1, 1) or attrs.groups != 1
            or {data.dtype, weight.dtype, out.dtype} != {"float32"}):
        return None
    keys, facts = _conv2d_keys(call)
    rows = _rows("conv2d_NCHWc_winograd", target, _deciding_key([*keys, "conv2d_NCHWc_winograd"], target))
    if not rows:
        return None
    return Implementation(rows[0], _template_args(rows[0], facts, call))


#: Rows that serve a dense layer as alternatives of the call's own row (TVM's ``dense_strategy``
#: on x86 offers both its packed and unpacked templates, so its extraction gives two tasks per
#: dense layer).
DENSE_ALTERNATIVES = ("dense_pack.x86",)


def dense_pack_implementation(call: Call, target: Target) -> Implementation | None:
    """The ``dense_pack.x86`` row for an ``nn.dense`` on ``target``; None otherwise.  Its kernel
    takes the weight in panels, which ``relay.build`` packs once at build time; untuned, the
    call's own row (higher plevel) runs."""
    if call.op.name != "nn.dense":  # type: ignore[union-attr]
        return None
    keys, facts = _dense_keys(call)
    rows = [r for r in STRATEGIES.candidates(keys[0], target) if r.name in DENSE_ALTERNATIVES]
    return Implementation(rows[0], _template_args(rows[0], facts, call)) if rows else None


def chosen_implementation(call: Call, target: Target) -> Implementation | None:
    """The implementation a build runs for a tunable ``call``: a dense layer with alternatives
    (:func:`dense_pack_implementation`) takes :func:`select_implementation`'s choice (the tuned
    one of lower cost, else the higher plevel: the call's own row); any other call its
    :func:`implementation` (convolutions choose in ``AlterOpLayout``)."""
    candidates = [impl for impl in (implementation(call, target), dense_pack_implementation(call, target))
                  if impl is not None]
    if len(candidates) < 2:
        return candidates[0] if candidates else None
    return select_implementation(candidates, target)[0]


def conv2d_candidates(call: Call, target: Target) -> list[Implementation]:
    """The implementations ``AlterOpLayout`` chooses among for a call (opt_level 3): the call's
    :func:`implementation` and, for a convolution it serves, :func:`winograd_implementation`."""
    return [impl for impl in (implementation(call, target), winograd_implementation(call, target))
            if impl is not None]


def select_implementation(candidates: Sequence[Implementation],
                          target: Target) -> tuple[Implementation, ConfigSpace]:
    """The implementation of a call and its config (TVM's ``select_implementation`` with autotvm).

    A dispatch context that decides per call (``apply_graph_best``: the graph tuner's record of
    the call names its template) decides.  Otherwise each candidate's workload is queried; among
    those answered by a record of the workload (not a fallback config nor the nearest record's)
    the lowest cost wins, ties keeping the earlier candidate, except that the candidate an untuned
    build runs (``untuned_choice``) keeps the call unless the fastest is faster than it by more
    than ``layout_choice.MARGIN``; when none has one, the highest ``plevel``.

    Parameters
    ----------
    candidates : sequence of Implementation
        At least one; workloads of one call.
    target : Target

    Returns
    -------
    (Implementation, config)
    """
    context = DispatchContext.current
    chosen = context.choose(target, [impl.workload for impl in candidates])
    if chosen is not None:
        workload, cfg = chosen
        return next(impl for impl in candidates if impl.workload == workload), cfg
    configs = [context.query(target, impl.workload) for impl in candidates]
    tuned = [i for i, cfg in enumerate(configs) if config_source(cfg).measured]
    if tuned:
        best = min(tuned, key=lambda i: _cost(configs[i]))
        usual = untuned_choice(candidates, target)  # an untuned build's: kept unless clearly slower
        if usual in tuned and not _cost(configs[best]) < _cost(configs[usual]) * (1 - MARGIN):
            best = usual
    else:
        best = max(range(len(candidates)), key=lambda i: candidates[i].strategy.plevel)
    return candidates[best], configs[best]


def untuned_choice(candidates: Sequence[Implementation], target: Target) -> int:
    """The index of the candidate an untuned build runs: the fastest by the pre-tuned packages'
    records, else the highest ``plevel``.  With records, ``select_implementation`` keeps it unless
    another candidate's answer is faster than its answer by more than ``layout_choice.MARGIN``
    (timing noise, and the costs a kernel's own timing does not see)."""
    packaged = {i: package_config(target, impl.workload) for i, impl in enumerate(candidates)}
    measured = {i: cfg for i, cfg in packaged.items() if cfg is not None}
    if measured:
        return min(measured, key=lambda i: _cost(measured[i]))
    return max(range(len(candidates)), key=lambda i: candidates[i].strategy.plevel)


def _cost(config: ConfigSpace) -> float:
    return math.inf if config.cost is None else float(config.cost)


def _template_args(strategy: Strategy, facts: Facts, call: Call) -> tuple[WorkloadArg, ...]:
    args = []
    for p in strategy.parameters:
        if p.name in facts:
            args.append(facts[p.name])
        elif p.default is not p.empty:
            args.append(p.default)
        else:
            raise GraphError(f"{call.op.name}: the template {strategy.name} takes an argument "  # type: ignore[union-attr]
                             f"{p.name!r} the graph call does not determine")
    return tuple(args)
