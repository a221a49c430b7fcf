"""A direct convolution over any number of spatial axes, computed in output-channel blocks (the
scheme of TVM's x86 ``conv3d_ncdhw`` and ``conv2d_NCHWc`` schedules), shared by the x86 templates
of convolutions that are not ``conv2d``: ``conv3d_ncdhw.x86`` and ``conv2d_transpose_nchw.x86``.

The kernel ``[O, C, *K]`` is re-laid out to ``kernel_vec [O / oc_bn, C, *K, oc_bn]``; the
convolution writes ``[N, O / oc_bn, *OUT, oc_bn]`` whose ``reg_n x oc_bn`` tiles (``reg_n``
columns of the last spatial axis) accumulate in a local stage, ``oc_bn`` vectorized and the
columns unrolled, the input channels reduced in ``ic_bn`` chunks; a last stage unpacks to
``[N, O, *OUT]`` (an epilogue reads through it).  Batch, channel blocks and the outer spatial
axes are fused into one parallel loop.

Knobs, in TVM's order: ``tile_ic``, ``tile_oc`` (splits of C and O: ``ic_bn``, ``oc_bn``),
``tile_ow`` (split of the last output axis: ``reg_n``), ``unroll_kw`` (True/False: the last kernel
axis unrolled inside the channel chunk).
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ir import expr as E
from tunecli.engine.ops.epilogue import create_group_schedule, output_through_epilogue
from tunecli.engine.ops.x86.conv2d_nchwc import largest_divisor
from tunecli.engine.schedule import Schedule
from tunecli.engine.target import Target
from tunecli.engine.task.space import ConfigSpace, OtherOptionEntity, SplitEntity

#: Tags of the stages this module creates (the schedule finds them by tag).
CONV_TAG = "conv_blocked"
UNPACK_TAG = "injective,unpack_blocked"
KERNEL_TAG = "injective,layout_transform"


def define_blocked_space(cfg: ConfigSpace, ic: int, oc: int, ow: int, max_reg_n: int,
                         fallback_reg_n: int) -> None:
    """Define the knobs of the module docstring; a fallback config gets TVM's defaults: ``oc_bn``
    the largest divisor of O up to the float32 lanes, ``ic_bn`` the largest divisor of C up to
    ``oc_bn``, ``reg_n`` the largest divisor of the output width up to ``fallback_reg_n``, no
    unrolling."""
    cfg.define_split("tile_ic", ic, num_outputs=2)
    cfg.define_split("tile_oc", oc, num_outputs=2)
    cfg.define_split("tile_ow", ow, num_outputs=2, filter=lambda y: y.size[-1] <= max_reg_n)
    cfg.define_knob("unroll_kw", [True, False])
    if cfg.is_fallback:
        target = Target.current() or Target("llvm")
        oc_bn = largest_divisor(oc, max(target.vector_bits // 32, 1))
        ic_bn = largest_divisor(ic, oc_bn)
        reg_n = largest_divisor(ow, fallback_reg_n)
        cfg["tile_ic"] = SplitEntity([ic // ic_bn, ic_bn])
        cfg["tile_oc"] = SplitEntity([oc // oc_bn, oc_bn])
        cfg["tile_ow"] = SplitEntity([ow // reg_n, reg_n])
        cfg["unroll_kw"] = OtherOptionEntity(False)



def blocked_conv(
    data: te.Tensor,
    kernel: te.Tensor,
    oc_bn: int,
    strides: Sequence[int],
    dilation: Sequence[int],
    out_dtype: str,
) -> te.Tensor:
    """The convolution of an already padded ``data [N, C, *S]`` with ``kernel [O, C, *K]``.

    Parameters
    ----------
    data, kernel : te.Tensor
    oc_bn : int
        Output-channel block; divides O.
    strides, dilation : sequence of int
        One per spatial axis.
    out_dtype : str

    Returns
    -------
    te.Tensor
        ``[N, O, *OUT]``, the unpack stage of ``[N, O / oc_bn, *OUT, oc_bn]``.
    """
    n, c, *space = data.shape
    o, _, *window = kernel.shape
    rank = len(space)
    out = [
        (size - (k - 1) * d - 1) // s + 1
        for size, k, s, d in zip(space, window, strides, dilation, strict=True)
    ]
    kernel_vec = te.compute(
        (o // oc_bn, c, *window, oc_bn),
        lambda f, i, *rest: kernel[(f * oc_bn + rest[-1], i, *rest[:-1])],
        name="kernel_vec",
        tag=KERNEL_TAG,
    )
    rc = te.reduce_axis((0, c), name="ic")
    rk = [te.reduce_axis((0, k), name=f"k{axis}") for axis, k in enumerate(window)]

    def conv_body(b: E.Expr, f: E.Expr, *rest: E.Expr) -> E.Expr:
        pos = [rest[a] * strides[a] + rk[a] * dilation[a] for a in range(rank)]
        return te.sum(
            data[(b, rc, *pos)].astype(out_dtype) * kernel_vec[(f, rc, *rk, rest[-1])].astype(out_dtype),
            axis=[rc, *rk],
        )

    conv = te.compute((n, o // oc_bn, *out, oc_bn), conv_body, name="conv", tag=CONV_TAG)
    return te.compute(
        (n, o, *out),
        lambda b, f, *rest: conv[(b, f // oc_bn, *rest, f % oc_bn)],
        name="output_unpack",
        tag=UNPACK_TAG,
    )


def schedule_blocked(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                     epilogue: te.Tensor | None = None) -> Schedule:
    """Schedule the stages of :func:`blocked_conv` (the module docstring) and the stages before it:
    the kernel's re-layouts computed at the root in parallel, the data's (padding, dilation) too."""
    (out,) = outs
    s = create_group_schedule(outs, epilogue)
    final = output_through_epilogue(s, outs, epilogue)
    (conv,) = out.op.input_tensors
    (kernel_vec,) = [t for t in conv.op.input_tensors if t.op.tag == KERNEL_TAG and t.op.name == "kernel_vec"]
    (data,) = [t for t in conv.op.input_tensors if t is not kernel_vec]
    for stage in _compute_stages(kernel_vec):
        if stage is not kernel_vec:
            s[stage].compute_inline()
    s[kernel_vec].parallel(s[kernel_vec].op.axis[0])
    for stage in _compute_stages(data):
        outer = s[stage].op.axis[:-1]
        s[stage].parallel(s[stage].fuse(*outer) if len(outer) > 1 else outer[0])

    acc = s.cache_write(conv, "local")
    b, f, *space, v = s[conv].op.axis
    xo, xi = cfg["tile_ow"].apply(s, conv, space[-1])
    s[conv].reorder(b, f, *space[:-1], xo, xi, v)
    s[conv].parallel(s[conv].fuse(b, f, *space[:-1]))
    s[conv].vectorize(v)

    s[acc].compute_at(s[conv], xo)
    b, f, *space, v = s[acc].op.axis
    ic, *window = s[acc].op.reduce_axis
    ico, ici = cfg["tile_ic"].apply(s, acc, ic)
    if cfg["unroll_kw"].val:
        s[acc].reorder(b, f, *space[:-1], ico, *window[:-1], ici, window[-1], space[-1], v)
        s[acc].unroll(window[-1])
    else:
        s[acc].reorder(b, f, *space[:-1], ico, *window, ici, space[-1], v)
    s[acc].unroll(space[-1])
    s[acc].vectorize(v)

    b, f, *space = s[final].op.axis
    s[final].parallel(s[final].fuse(b, f, *space[:-1]))
    return s


def _compute_stages(tensor: te.Tensor) -> list[te.Tensor]:
    """``tensor`` and the compute stages it reads, producers first (empty for a placeholder)."""
    if not isinstance(tensor.op, te.ComputeOp):
        return []
    found = [t for inp in tensor.op.input_tensors for t in _compute_stages(inp)]
    return [*found, tensor]
