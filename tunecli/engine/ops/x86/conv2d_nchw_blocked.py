"""NCHW convolutions of kernel jobs through the blocked layouts ``relay.build`` uses.

``conv2d_nchw_blocked.x86`` (TVM's direct ``conv2d_NCHWc`` schedules) and
``conv2d_nchw_winograd.x86`` (Winograd F(m x m, 3 x 3), 3x3 stride-1 kernels only) take
``conv2d_nchw.x86``'s arguments (``N, H, W, CI, CO, KH, KW, stride, padding, dilation, dtype``)
and its data and result layouts: the kernel reads ``data [N, CI, H, W]`` and writes
``out [N, CO, OH, OW]``.  Inside, the data is blocked ``NCHW[ic_bn]c`` and the result computed
blocked ``NCHW[oc_bn]c``, as the graph's NCHWc and Winograd kernels do; the knobs, their
fallback configs and the schedules are ``conv2d_NCHWc.x86``'s and
``conv2d_NCHWc_winograd.x86``'s (the direct fallback's tile and output block may be wider:
:func:`define_blocked_space`).  :func:`kernel_job_template` says which one a job's
``conv2d_nchw.x86`` task runs as (``job.tasks``).

Where the layout transforms are counted: the data's packing and the result's unpacking are
stages of the kernel, in its time (a network with NCHW activations runs them per call).  The
weight is taken already in the config's layout, as ``relay.build`` transforms a constant weight
once at build time (and as ``dense.x86`` takes its weight in panels): the kernel's second
argument is ``[CO/oc_bn, CI/ic_bn, KH, KW, ic_bn, oc_bn]`` (``reference.oihw_to_kernel_nchwc``)
or the transformed ``[alpha, alpha, CO/oc_bn, CI/ic_bn, ic_bn, oc_bn]``
(``reference.winograd_kernel_transform``); :func:`weight_for_kernel` gives it from an
``[CO, CI, KH, KW]`` weight.

Records: a workload of either template is the convolution of one ``conv2d_NCHWc.x86`` (or
``conv2d_NCHWc_winograd.x86``) workload with the same knobs and space (:func:`twin_workload`), so
that template's records of the same convolution (a pre-tuned package's, a network's log) serve
it where it has no record of its own (``log.history_best``).

The numpy references take the same arguments as the kernel (any weight of that shape), the numpy
timing baselines an ``[CO, CI, KH, KW]`` weight (``Baseline.prepare``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import DTypeLike

from tunecli.engine import te
from tunecli.engine.ops import baseline
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.nn.conv2d import conv2d_NCHWc
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.conv2d import declare_conv2d_nchw
from tunecli.engine.ops.x86.conv2d_nchw_1x1 import GEMM_1X1, fills_vectors
from tunecli.engine.ops.x86.conv2d_nchw_pixels import PIXELS
from tunecli.engine.ops.x86.conv2d_nchw_rows import pack_rows_weight
from tunecli.engine.ops.x86.conv2d_nchwc import (
    SMALL_WINDOW,
    define_conv2d_nchwc_space,
    fallback_register_tile,
    fp32_lanes,
    largest_divisor,
    register_block,
    schedule_conv2d_NCHWc,
)
from tunecli.engine.ops.x86.conv2d_winograd import (
    check_winograd_workload,
    conv2d_winograd_compute,
    pack_conv2d_winograd,
    schedule_conv2d_winograd,
)
from tunecli.engine.schedule import Schedule
from tunecli.engine.target import Target, triple_arch
from tunecli.engine.task.space import ConfigSpace, OtherOptionEntity, SplitEntity
from tunecli.engine.task.workload_args import TaskArg, Workload
from tunecli.engine.te.window import IntPair, Padding, conv2d_output_shape, get_pad_tuple, pair
from tunecli.errors import InstantiationError, TuneError

BLOCKED = "conv2d_nchw_blocked.x86"
WINOGRAD = "conv2d_nchw_winograd.x86"
#: The blocked-layout template whose knobs, space and records each of these templates shares.
KNOB_TWINS = {BLOCKED: "conv2d_NCHWc.x86", WINOGRAD: "conv2d_NCHWc_winograd.x86"}
#: Most output positions of the direct fallback's tile (a 31-accumulator register tile's).
FALLBACK_COLUMNS = 31


def kernel_job_template(args: Sequence[TaskArg], target: Target) -> str | None:
    """The template a kernel job's ``conv2d_nchw.x86`` task runs as on ``target``, or None to keep it.

    float32 convolutions without dilation on an x86 ``llvm`` target take the blocked layouts:
    Winograd for 3x3 stride-1 kernels, the direct NCHWc schedules otherwise; with 512-bit vectors,
    unpadded 1x1 kernels whose output pixels fill the vectors (``conv2d_nchw_1x1.fills_vectors``)
    take the GEMM over pixels of :data:`GEMM_1X1`, and windows wider than 3 columns over fewer
    input channels than a vector, with rows of whole vectors (a 7x7 stem), the direct convolution
    over pixels of :data:`PIXELS`: no NCHW write from channel blocks (with narrower vectors the
    blocked schedule is as fast for the 1x1 layers).  Other targets and dtypes (int8) keep
    ``conv2d_nchw.x86``.

    Parameters
    ----------
    args : sequence
        ``conv2d_nchw.x86``'s complete arguments.
    target : Target

    Returns
    -------
    str or None
    """
    _, h, w, ci, _, kh, kw, stride, padding, dilation, dtype = args
    if target.kind != "llvm" or triple_arch(target.llvm_triple) != "x86_64" or dtype != "float32":
        return None
    try:
        if pair(dilation, "dilation") != (1, 1):
            return None
        unit_stride = pair(stride, "stride") == (1, 1)
        unpadded = not any(get_pad_tuple(padding, (kh, kw)))
        oh, ow, _ = conv2d_output_shape((h, w), (kh, kw), stride, padding, 1)
    except Exception:  # noqa: BLE001 - a malformed argument is reported by conv2d_nchw.x86's own checks
        return None
    lanes = target.vector_bits // 32
    if (kh, kw) == (1, 1) and unpadded and lanes >= 16 and fills_vectors(oh, ow, lanes):
        return GEMM_1X1
    if lanes >= 16 and ci < lanes and kw > SMALL_WINDOW and ow % lanes == 0:
        return PIXELS
    return WINOGRAD if (kh, kw) == (3, 3) and unit_stride else BLOCKED


def twin_workload(workload: Workload | None) -> Workload | None:
    """The ``conv2d_NCHWc.x86`` / ``conv2d_NCHWc_winograd.x86`` workload (TVM's form, as a network's
    task writes it) of the convolution of a :data:`BLOCKED` / :data:`WINOGRAD` workload; None for a
    workload of another template or one whose arguments do not describe a convolution.

    Parameters
    ----------
    workload : tuple or None
        ``(template name, N, H, W, CI, CO, KH, KW, stride, padding, dilation, dtype)``.

    Returns
    -------
    tuple or None
    """
    if not workload or workload[0] not in KNOB_TWINS or len(workload) != 12:
        return None
    name, n, h, w, ci, co, kh, kw, stride, padding, dilation, dtype = workload
    try:
        strides, dilations = pair(stride, "stride"), pair(dilation, "dilation")
        pads = get_pad_tuple(padding, (kh, kw))
    except (TuneError, TypeError, ValueError):  # malformed: the template reports them, no twin serves
        return None
    return (KNOB_TWINS[name], ("TENSOR", (n, ci, h, w), dtype), ("TENSOR", (co, ci, kh, kw), dtype),
            strides, pads, dilations, "NCHW", "NCHW", dtype)


def _logical_kernel_shape(kernel: te.Tensor) -> tuple[int, int, int, int]:
    """``(CO, CI, KH, KW)`` of an OIHW or a packed ``[CO/ob, CI/ib, KH, KW, ib, ob]`` kernel."""
    if len(kernel.shape) == 4:
        return tuple(kernel.shape)
    oc, ic, kh, kw, ib, ob = kernel.shape
    return oc * ob, ic * ib, kh, kw


def pack_data_stage(data: te.Tensor, ic_bn: int) -> te.Tensor:
    """``[N, C, H, W]`` -> ``[N, C/ic_bn, H, W, ic_bn]``, a stage of the kernel."""
    n, c, h, w = data.shape
    return te.compute((n, c // ic_bn, h, w, ic_bn), lambda b, cc, y, x, v: data[b, cc * ic_bn + v, y, x],
                      name="data_vec", tag="injective,layout_transform")


def unpack_stage(conv: te.Tensor) -> te.Tensor:
    """``[N, C/bn, H, W, bn]`` -> ``[N, C, H, W]``, the kernel's NCHW result."""
    n, cb, h, w, bn = conv.shape
    return te.compute((n, cb * bn, h, w), lambda b, c, y, x: conv[b, c // bn, y, x, c % bn],
                      name="conv2d_nchw", tag="injective,unpack_nchwc")


# -- conv2d_nchw_blocked.x86 ------------------------------------------------------------------------


def define_blocked_space(cfg: ConfigSpace, data_shape: Sequence[int], kernel_shape: Sequence[int],
                         stride: IntPair, padding: Padding) -> None:
    """``conv2d_NCHWc.x86``'s knobs and fallback config, with the fallback's tile as wide as
    :func:`fallback_tile` allows whatever the target's registers and its output block two vectors
    wide where that suits the tile (:func:`fallback_output_block`): the blocks are the kernel's
    own, no neighbouring layer reads them.  Its window columns are not unrolled (with a
    two-vector output block that is as fast or faster: benchmarks/README.md)."""
    define_conv2d_nchwc_space(cfg, data_shape, kernel_shape, stride, padding, unroll_small_windows=False)
    if not cfg.is_fallback:
        return
    oc, _, kh, kw = kernel_shape
    is_1x1 = (kh, kw) == (1, 1)
    oh = conv2d_output_shape(data_shape[2:], (kh, kw), stride, padding, 1)[0]
    rows, reg_n = fallback_tile(cfg["tile_oh"].val if is_1x1 else 1, cfg["tile_ow"].size,
                                oh if is_1x1 else None)
    ow = cfg["tile_ow"].size[0] * cfg["tile_ow"].size[-1]
    cfg["tile_ow"] = SplitEntity([ow // reg_n, reg_n])
    if is_1x1:
        cfg["tile_oh"] = OtherOptionEntity(rows)
    oc_bn = fallback_output_block(oc, cfg["tile_oc"].size[-1], rows * reg_n, fp32_lanes())
    cfg["tile_oc"] = SplitEntity([oc // oc_bn, oc_bn])


def fallback_tile(rows: int, ow_split: Sequence[int], oh: int | None) -> tuple[int, int]:
    """``(rows, columns)`` of the fallback's tile: ``conv2d_NCHWc.x86``'s (``tile_oh``, or 1, and
    ``tile_ow``'s inner factor) where the target's register tile reaches :data:`FALLBACK_COLUMNS`
    positions, else the largest divisor of the row within that many positions (and, for a 1x1
    kernel of ``oh`` output rows, two rows when a row takes at most half of them and 2 divides
    ``oh``).

    The NCHW result is written a channel's run of a tile's columns at a time, so a wide tile writes
    fewer, longer runs; a tile wider than the registers hold is reduced in register blocks
    (``conv2d_nchwc.register_block``) all the same."""
    if fallback_register_tile() >= FALLBACK_COLUMNS:
        return rows, ow_split[-1]
    ow = ow_split[0] * ow_split[-1]
    reg_n = largest_divisor(ow, FALLBACK_COLUMNS)
    two_rows = oh is not None and oh % 2 == 0 and reg_n == ow and 2 * ow <= FALLBACK_COLUMNS
    return (2 if two_rows else 1), reg_n


def fallback_output_block(oc: int, oc_bn: int, positions: int, lanes: int) -> int:
    """``oc_bn``, or two vectors of channels when ``oc_bn`` is one vector, they divide ``oc`` and a
    register block of ``positions`` output positions then holds as many accumulator vectors or at
    least half the target's vector registers: each input value broadcast then feeds two
    multiply-adds (fewer loads and broadcasts per multiply-add), and half the registers of
    independent accumulators keep the multiply-add units busy.  ``oc``: output channels,
    ``positions``: output positions of the fallback's register tile, ``lanes``: float32 lanes."""
    wide = 2 * lanes
    if oc_bn != lanes or oc % wide:
        return oc_bn

    def held(block: int) -> int:
        return min(positions, register_block(positions, block)) * -(-block // lanes)

    enough = (fallback_register_tile() + 2) // 2
    return wide if held(wide) >= min(held(oc_bn), enough) else oc_bn


def pack_conv2d_nchw_blocked(cfg: ConfigSpace, call: OpCall) -> OpCall:
    """The kernel's inputs: NCHW ``data`` and the ``[CO/oc_bn, CI/ic_bn, KH, KW, ic_bn, oc_bn]`` weight."""
    data, kernel = call.inputs
    define_blocked_space(cfg, data.shape, kernel.shape, call.attrs["stride"], call.attrs["padding"])
    oc, ic, kh, kw = kernel.shape
    ic_bn, oc_bn = cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]
    packed = te.placeholder((oc // oc_bn, ic // ic_bn, kh, kw, ic_bn, oc_bn), dtype=kernel.dtype,
                            name="kernel")
    return OpCall((data, packed), call.attrs)


def conv2d_nchw_blocked_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                                padding: Padding, dilation: IntPair, out_dtype: str) -> te.Tensor:
    """``conv2d_NCHWc.x86``'s knobs and convolution between a data-packing and an unpacking stage;
    an OIHW kernel is packed by a stage, a 6-D one taken as packed."""
    kernel_shape = _logical_kernel_shape(kernel)
    define_blocked_space(cfg, data.shape, kernel_shape, stride, padding)
    ic_bn, oc_bn = cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1]
    if len(kernel.shape) == 4:
        oc, ic, kh, kw = kernel.shape
        original = kernel
        kernel = te.compute((oc // oc_bn, ic // ic_bn, kh, kw, ic_bn, oc_bn),
                            lambda o, i, y, x, ib, ob: original[o * oc_bn + ob, i * ic_bn + ib, y, x],
                            name="kernel_vec", tag="injective,layout_transform")
    elif (kernel.shape[4], kernel.shape[5]) != (ic_bn, oc_bn):
        raise InstantiationError(f"{BLOCKED}: the kernel is packed in blocks ({kernel.shape[4]}, "
                                 f"{kernel.shape[5]}), the config's are ({ic_bn}, {oc_bn})")
    n, ic, h, w = data.shape
    oc, _, kh, kw = kernel_shape
    oh, ow, _ = conv2d_output_shape((h, w), (kh, kw), stride, padding, dilation)
    cfg.add_flop(2 * n * oc * oh * ow * ic * kh * kw)
    conv = conv2d_NCHWc(pack_data_stage(data, ic_bn), kernel, stride, padding, dilation, "NCHW", "NCHW",
                        out_dtype)
    return unpack_stage(conv)


def schedule_conv2d_nchw_blocked(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                                 epilogue: te.Tensor | None = None) -> Schedule:
    """``conv2d_NCHWc.x86``'s schedule, the unpacking stage its NCHW epilogue (register blocks written
    to NCHW); the data's packing inlined into its reader (the padding stage, or the convolution,
    which broadcasts one input value at a time either way), the padding too by :func:`inlines_padding`.
    With 32 vector registers the register block is written a channel at a time (its run of
    positions from the accumulator, a loop over channels) instead of a vector of channels scattered
    a lane at a time (up to a fifth of a strided 1x1 kernel's time)."""
    (out,) = outs
    (conv,) = out.op.input_tensors
    s = schedule_conv2d_NCHWc(cfg, [conv], epilogue=out if epilogue is None else epilogue)
    stage = s[out if epilogue is None else epilogue]
    if fp32_lanes() >= 16:
        _, _, *positions, channels = stage.leaf_iter_vars  # tile_output's: parallel, xo, ..., oc_bn
        stage.reorder(channels, *positions)
        for axis in positions:
            stage.unroll(axis)
        del stage.iter_var_attrs[channels]  # a serial loop: not vectorized
    data = conv.op.input_tensors[0]
    (packed,) = data.op.input_tensors if "pad" in data.op.tag else (data,)
    s[packed].compute_inline()
    if data is not packed and inlines_padding(cfg, data.shape, conv.shape):
        s[data].compute_inline()
    return s


def inlines_padding(cfg: ConfigSpace, padded_shape: Sequence[int], out_shape: Sequence[int]) -> bool:
    """Whether the convolution reads the NCHW data, bound checks in its loads, instead of a padded,
    packed copy made per call: with 32 vector registers, window columns not unrolled, and padded
    data ``[N, C/ic_bn, H, W, ic_bn]`` of at least twice the output's positions (a strided window,
    the copy a larger share of the work); else the checks cost more (benchmarks/README.md)."""
    positions, out_positions = padded_shape[2] * padded_shape[3], out_shape[2] * out_shape[3]
    return fp32_lanes() >= 16 and not cfg["unroll_kw"].val and positions >= 2 * out_positions


def conv2d_nchw_blocked_python(data: np.ndarray, kernel: np.ndarray, stride: IntPair, padding: Padding,
                               dilation: IntPair = 1, out_dtype: DTypeLike | None = None) -> np.ndarray:
    """numpy: NCHW ``data`` and a packed ``[CO/ob, CI/ib, KH, KW, ib, ob]`` kernel -> NCHW output."""
    weight = ref.kernel_nchwc_to_oihw(kernel)
    return ref.conv2d_nchw_python(data, weight, stride, padding, dilation, out_dtype)


def blocked_weight_oihw(data: np.ndarray, kernel: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(data, weight [CO, CI, KH, KW])`` of a packed kernel (the timing baseline's inputs)."""
    return data, ref.kernel_nchwc_to_oihw(kernel)


# -- conv2d_nchw_winograd.x86 -----------------------------------------------------------------------


def declare_conv2d_nchw_winograd(N: int, H: int, W: int, CI: int, CO: int, KH: int, KW: int,
                                 stride: IntPair, padding: Padding, dilation: IntPair = 1,
                                 dtype: str = "float32") -> OpCall:
    """``conv2d_nchw.x86``'s placeholders; only 3x3 kernels with stride and dilation 1."""
    check_winograd_workload((CO, CI, KH, KW), stride, dilation)
    return declare_conv2d_nchw(N, H, W, CI, CO, KH, KW, stride, padding, dilation, dtype)


def pack_conv2d_nchw_winograd(cfg: ConfigSpace, call: OpCall) -> OpCall:
    """The kernel's inputs: NCHW ``data`` and the transformed ``[alpha, alpha, CO/oc_bn, CI/ic_bn,
    ic_bn, oc_bn]`` weight."""
    return pack_conv2d_winograd(cfg, call, block_data=False)


def conv2d_nchw_winograd_compute(cfg: ConfigSpace, data: te.Tensor, kernel: te.Tensor, stride: IntPair,
                                 padding: Padding, dilation: IntPair, out_dtype: str) -> te.Tensor:
    """``conv2d_NCHWc_winograd.x86``'s stages on NCHW data (packed by a stage), then unpacked to
    NCHW; an OIHW kernel is transformed by stages, a 6-D one taken as transformed."""
    conv = conv2d_winograd_compute(cfg, data, kernel, stride, padding, dilation, "NCHW", "NCHW", out_dtype)
    if len(kernel.shape) == 6:
        alpha, _, _, _, ic_bn, oc_bn = kernel.shape
        if (cfg["tile_ic"].size[-1], cfg["tile_oc"].size[-1], cfg["tile_m"].val + 2) != (ic_bn, oc_bn, alpha):
            raise InstantiationError(f"{WINOGRAD}: the kernel is transformed for blocks ({ic_bn}, {oc_bn}) "
                                     f"and alpha {alpha}, not for the config's")
    return unpack_stage(conv)


def schedule_conv2d_nchw_winograd(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                                  epilogue: te.Tensor | None = None) -> Schedule:
    """``conv2d_NCHWc_winograd.x86``'s schedule, the output tiles written to NCHW by the unpacking
    stage."""
    (out,) = outs
    (conv,) = out.op.input_tensors
    return schedule_conv2d_winograd(cfg, [conv], epilogue=out if epilogue is None else epilogue)


def conv2d_nchw_winograd_python(data: np.ndarray, kernel: np.ndarray, stride: IntPair, padding: Padding,
                                dilation: IntPair = 1, out_dtype: DTypeLike | None = None) -> np.ndarray:
    """numpy: NCHW ``data`` and a transformed kernel -> NCHW output (``A^T [U * (B^T d B)] A``)."""
    blocked = ref.nchw_to_nchwc(data, kernel.shape[4])
    out = ref.conv2d_winograd_NCHWc_python(blocked, kernel, stride, padding, dilation, out_dtype=out_dtype)
    return ref.nchwc_to_nchw(out)


def winograd_weight_oihw(data: np.ndarray, kernel: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(data, weight [CO, CI, 3, 3])``: the least-squares 3x3 kernel of a transformed one (exact
    for a transformed kernel; for the timing baseline, which only needs a weight of that shape)."""
    alpha, _, kb, cb, ib, ob = kernel.shape
    g_inv = np.linalg.pinv(ref.winograd_matrices(alpha - 2)[2])  # [3, alpha]
    u = kernel.astype(np.float64).transpose(2, 5, 3, 4, 0, 1).reshape(kb * ob, cb * ib, alpha, alpha)
    weight = np.einsum("ka,oiab,lb->oikl", g_inv, u, g_inv)
    return data, np.ascontiguousarray(weight.astype(kernel.dtype))


def weight_for_kernel(template: str, weight: np.ndarray, kernel_shape: Sequence[int]) -> np.ndarray:
    """An ``[CO, CI, KH, KW]`` weight in the layout of the weight argument of a built ``template``
    kernel (:data:`BLOCKED`, :data:`WINOGRAD`, :data:`GEMM_1X1` or :data:`PIXELS`), whose shape
    ``kernel_shape`` gives the config's blocks."""
    if template == WINOGRAD:
        alpha, _, _, _, ic_bn, oc_bn = kernel_shape
        return ref.winograd_kernel_transform(weight, alpha - 2, ic_bn, oc_bn)
    if template == BLOCKED:
        return ref.oihw_to_kernel_nchwc(weight, kernel_shape[4], kernel_shape[5])
    if template in (GEMM_1X1, PIXELS):
        return pack_rows_weight(weight, kernel_shape[-1]).reshape(kernel_shape)
    raise InstantiationError(f"{template!r} is not {BLOCKED}, {WINOGRAD}, {GEMM_1X1} nor {PIXELS}")


_SUMMARY = ("`conv2d_nchw.x86`'s arguments, NCHW data and output; the kernel takes the weight {}; "
            "a kernel job's `conv2d_nchw.x86` task on x86 runs as {}")

CONV2D_NCHW_BLOCKED = Strategy(
    op="conv2d_nchw_blocked", target_key="cpu", name=BLOCKED, declare=declare_conv2d_nchw,
    compute=conv2d_nchw_blocked_compute, schedule=schedule_conv2d_nchw_blocked,
    reference=conv2d_nchw_blocked_python, outputs=("out",), pack=pack_conv2d_nchw_blocked,
    baseline=baseline.Baseline("im2col + matmul", baseline.conv2d_nchw, blocked_weight_oihw),
    summary=_SUMMARY.format("packed `[CO/oc_bn, CI/ic_bn, KH, KW, ic_bn, oc_bn]`",
                            "this (`conv2d_NCHWc.x86`'s knobs) unless Winograd serves it"))

CONV2D_NCHW_WINOGRAD = Strategy(
    op="conv2d_nchw_winograd", target_key="cpu", name=WINOGRAD, declare=declare_conv2d_nchw_winograd,
    compute=conv2d_nchw_winograd_compute, schedule=schedule_conv2d_nchw_winograd,
    reference=conv2d_nchw_winograd_python, outputs=("out",), pack=pack_conv2d_nchw_winograd,
    baseline=baseline.Baseline("im2col + matmul", baseline.conv2d_nchw, winograd_weight_oihw),
    summary=_SUMMARY.format("transformed `[alpha, alpha, CO/oc_bn, CI/ic_bn, ic_bn, oc_bn]`",
                            "this (`conv2d_NCHWc_winograd.x86`'s knobs) when 3x3, stride 1"))
