"""TVM's x86 dense templates, ``dense_pack.x86`` and ``dense_nopack.x86``, with TVM's workloads and knobs.

Template arguments are TVM's workload: ``data, weight, bias, out_dtype`` with ``data [M, K]`` and
``weight [N, K]`` tensors and ``bias`` None (a graph fuses the bias as an epilogue); int8 inputs
with ``out_dtype="int32"`` accumulate in int32.

``dense_pack.x86``: the kernel takes the weight pre-packed into ``[N / bn, K, bn]`` panels (``bn``
is the inner ``tile_x`` factor).  Knobs, in TVM's order: ``tile_y`` (split of M in three),
``tile_x`` (split of N in three), ``tile_k`` (split of K), ``tile_inner`` (split of M, inner
``<= 16``: rows of the accumulator tile unrolled together).  The output is tiled into
``tile_y x tile_x`` inner blocks accumulated in registers; the outer tiles are one parallel loop.

``dense_nopack.x86``: the kernel takes ``weight [N, K]`` as it is.  Knobs ``tile_y``, ``tile_x``,
``tile_k`` (splits in two); the reduction is split into ``tile_k``-wide vector partial sums
``[M, N, vec]`` reduced last.
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import baseline
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.epilogue import create_group_schedule, inline_between, output_and_accumulator
from tunecli.engine.ops.nn.dense import dense_packed, pack_weight
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.conv2d_nchwc import fp32_lanes, logical_tensors
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace, SplitEntity
from tunecli.engine.task.workload_args import TaskArg
from tunecli.engine.task.workload_flop import dense_flop
from tunecli.errors import InstantiationError

MAX_TILE_INNER = 16


def declare_dense_tvm(data: TaskArg, weight: TaskArg, bias: TaskArg = None,
                      out_dtype: str = "float32") -> OpCall:
    """TVM's dense workload: ``data [M, K]``, ``weight [N, K]``, no bias."""
    if bias is not None:
        raise InstantiationError("dense_pack.x86 / dense_nopack.x86: give the bias as an epilogue, not in "
                                 "the workload (TVM's workloads have bias None)")
    data, weight = logical_tensors(data, weight)
    if len(data.shape) != 2 or len(weight.shape) != 2 or data.shape[1] != weight.shape[1]:
        raise InstantiationError(f"dense: data [M, K] and weight [N, K] expected, got {tuple(data.shape)} "
                                 f"and {tuple(weight.shape)}")
    return OpCall((data, weight), {"out_dtype": out_dtype})


def _divisor_at_most(n: int, limit: int) -> int:
    return next(b for b in range(min(limit, n), 0, -1) if n % b == 0)


def _halve_outer(outer: int) -> int:
    """TVM's outer tile of the fallback: double while more than 4 tiles remain and they split evenly."""
    tile = 1
    while outer // tile > 4 and (outer // tile) % 2 == 0:
        tile *= 2
    return tile


def define_dense_pack_space(cfg: ConfigSpace, m: int, n: int, k: int) -> None:
    """TVM's knobs of ``dense_pack.x86``; a fallback config gets TVM's ``_default_dense_pack_config``."""
    cfg.define_split("tile_y", m, num_outputs=3)
    cfg.define_split("tile_x", n, num_outputs=3)
    cfg.define_split("tile_k", k, num_outputs=2)
    cfg.define_split("tile_inner", m, num_outputs=2, filter=lambda y: y.size[-1] <= MAX_TILE_INNER)
    if cfg.is_fallback:
        x_ii = _divisor_at_most(n, 2 * fp32_lanes())
        x_oi = _halve_outer(n // x_ii)
        y_ii = next(b for b in (8, 4, 2, 1) if m % b == 0)
        y_oi = _halve_outer(m // y_ii)
        cfg["tile_y"] = SplitEntity([m // y_ii // y_oi, y_oi, y_ii])
        cfg["tile_x"] = SplitEntity([n // x_ii // x_oi, x_oi, x_ii])
        cfg["tile_k"] = SplitEntity([k, 1])
        cfg["tile_inner"] = SplitEntity([m // y_ii, y_ii])


def pack_dense(cfg: ConfigSpace, call: OpCall) -> OpCall:
    """The kernel's inputs: ``data`` and the ``packed_weight [N / bn, K, bn]`` placeholder."""
    data, weight = call.inputs
    (m, k), n = data.shape, weight.shape[0]
    define_dense_pack_space(cfg, m, n, k)
    bn = cfg["tile_x"].size[-1]
    packed = te.placeholder((n // bn, k, bn), dtype=weight.dtype, name="packed_weight")
    return OpCall((data, packed), call.attrs)


def dense_pack_x86_compute(cfg: ConfigSpace, data: te.Tensor, weight: te.Tensor, out_dtype: str) -> te.Tensor:
    """Define the knobs, then ``nn.dense_packed``; a 2-D weight is packed by a stage first."""
    m, k = data.shape
    n = weight.shape[0] * weight.shape[2] if len(weight.shape) == 3 else weight.shape[0]
    define_dense_pack_space(cfg, m, n, k)
    if len(weight.shape) == 2:
        weight = pack_weight(weight, cfg["tile_x"].size[-1])
    cfg.add_flop(2 * m * n * k)
    return dense_packed(data, weight, out_dtype)


def schedule_dense_pack_x86(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                            epilogue: te.Tensor | None = None) -> Schedule:
    """TVM's ``_schedule_dense_pack_template`` with the accumulator tile in a local stage."""
    (C,) = outs
    _, packed = C.op.input_tensors
    s = create_group_schedule(outs, epilogue)
    O, CC = output_and_accumulator(s, C, epilogue)
    if "layout_transform" in getattr(packed.op, "tag", ""):
        z, _, x = s[packed].op.axis
        s[packed].parallel(z)
        s[packed].vectorize(x)
    y, x = s[O].op.axis
    yt, yo, yi = cfg["tile_y"].apply(s, O, y)
    xt, xo, xi = cfg["tile_x"].apply(s, O, x)
    s[O].reorder(xt, yt, yo, xo, yi, xi)
    s[O].parallel(s[O].fuse(xt, yt))
    xyo = s[O].fuse(yo, xo)
    s[O].unroll(yi)
    s[O].vectorize(xi)

    s[CC].compute_at(s[O], xyo)
    y, x = s[CC].op.axis
    (k,) = s[CC].op.reduce_axis
    ko, ki = cfg["tile_k"].apply(s, CC, k)
    s[CC].reorder(ko, ki, y, x)
    s[CC].vectorize(x)
    tile_inner = cfg["tile_inner"].size[-1]
    if tile_inner > 1:
        yo, yi = s[CC].split(y, tile_inner)
        s[CC].reorder(ko, yo, ki, yi, x)
        s[CC].unroll(yo)
        s[CC].unroll(ki)
        s[CC].unroll(yi)
    else:
        s[CC].unroll(ki)
        s[CC].unroll(y)
    return s


def define_dense_nopack_space(cfg: ConfigSpace, m: int, n: int, k: int) -> None:
    """TVM's knobs of ``dense_nopack.x86``; a fallback config gets TVM's ``_default_dense_nopack_config``."""
    cfg.define_split("tile_y", m, num_outputs=2)
    cfg.define_split("tile_x", n, num_outputs=2)
    cfg.define_split("tile_k", k, num_outputs=2)
    if cfg.is_fallback:
        k_bn = _divisor_at_most(k, 2 * fp32_lanes())
        cfg["tile_k"] = SplitEntity([k // k_bn, k_bn])
        cfg["tile_x"] = SplitEntity([n, 1])
        cfg["tile_y"] = SplitEntity([1, m])


def dense_nopack_x86_compute(cfg: ConfigSpace, data: te.Tensor, weight: te.Tensor,
                             out_dtype: str) -> te.Tensor:
    """``tile_k``-wide vector partial sums ``[M, N, vec]``, then their sum (TVM's ``dense_nopack``)."""
    (m, k), n = data.shape, weight.shape[0]
    define_dense_nopack_space(cfg, m, n, k)
    cfg.add_flop(2 * m * n * k)
    vec = cfg["tile_k"].size[-1]
    rk = te.reduce_axis((0, k // vec), name="k")
    partial = te.compute(
        (m, n, vec),
        lambda z, y, x: te.sum(
            data[z, rk * vec + x].astype(out_dtype) * weight[y, rk * vec + x].astype(out_dtype), axis=rk),
        name="T_dense_partial")
    kk = te.reduce_axis((0, vec), name="kk")
    return te.compute((m, n), lambda y, x: te.sum(partial[y, x, kk], axis=kk), name="T_dense_nopack",
                      tag="dense_nopack")


def schedule_dense_nopack_x86(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                              epilogue: te.Tensor | None = None) -> Schedule:
    """TVM's ``_schedule_dense_nopack_template``; an epilogue reads the finished output tile."""
    (C,) = outs
    s = create_group_schedule(outs, epilogue)
    y, x = s[C].op.axis
    (kk,) = s[C].op.reduce_axis
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, yi, xi)
    xyo = s[C].fuse(yo, xo)
    s[C].parallel(xyo)
    s[C].unroll(kk)

    (partial,) = C.op.input_tensors
    s[partial].compute_at(s[C], xyo)
    z, y, x = s[partial].op.axis
    (k,) = s[partial].op.reduce_axis
    yz = s[partial].fuse(z, y)
    s[partial].reorder(k, yz, x)
    s[partial].unroll(yz)
    s[partial].vectorize(x)
    if epilogue is not None:
        inline_between(s, outs, epilogue)
        s[epilogue].parallel(s[epilogue].op.axis[0])
    return s


DENSE_PACK_TVM = Strategy(
    op="dense", target_key="cpu", name="dense_pack.x86", declare=declare_dense_tvm,
    compute=dense_pack_x86_compute, schedule=schedule_dense_pack_x86, reference=ref.dense_packed_python,
    outputs=("out",), pack=pack_dense, plevel=5,
    summary="TVM's; the kernel takes the weight packed `[N/bn, K, bn]`", baseline=baseline.DENSE_PACKED,
    workload_flop=dense_flop)

DENSE_NOPACK_TVM = Strategy(
    op="dense", target_key="cpu", name="dense_nopack.x86", declare=declare_dense_tvm,
    compute=dense_nopack_x86_compute, schedule=schedule_dense_nopack_x86, reference=ref.dense_python,
    outputs=("out",), plevel=4, summary="TVM's; the weight as given", baseline=baseline.DENSE,
    workload_flop=dense_flop)
