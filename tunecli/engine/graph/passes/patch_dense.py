"""PatchConvToDense: a convolution whose windows tile its input (stride equal to the kernel, no
padding, no dilation, one group) is a dense layer over the patches.

Such a convolution (ViT's 16×16 stride-16 patch embedding, Swin's and ConvNeXt's 4×4 stride-4
ones) reads every input pixel exactly once, so it is the product of the input rearranged into one
row per output pixel (``[pixels, C·kh·kw]``: a reshape and a transpose, no copies of overlapping
windows) with the weight as ``[O, C·kh·kw]``, then the result rearranged into the convolution's
output layout.  The product then runs as ``nn.dense`` (its tuned, packed GEMM templates) instead
of a direct convolution whose reduction over few input channels vectorizes poorly; the weight's
rearrangement is a constant that ``FoldConstant`` computes once.  A channel bias, and the usual
next step of a patch embedding (the NCHW result flattened into tokens ``[N, OH·OW, O]``, or
permuted to NHWC), are applied to the product's rows directly.

Left alone: 1×1 convolutions (already GEMMs in the blocked convolution templates, in networks
that keep channel-blocked layouts), and windows of fewer than ``MIN_PATCH_DEPTH`` products, where
the direct convolution is as fast.  Rows or columns of the input past the last whole window
(which the convolution ignores) are sliced off first.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..graph_expr import Call, Expr, Function
from ..op_registry import Op
from ..ops.broadcast import add
from ..ops.conv import Conv2DAttrs
from ..ops.nn import dense
from ..ops.slicing import strided_slice
from ..ops.transform import reshape, transpose
from ..traversal import ExprMutator
from ..type_infer import tensor_type_of
from .pass_infra import Pass, function_pass

#: Data and kernel layouts rewritten (the axes' letters in any order, no channel blocks).
_DATA_AXES, _KERNEL_AXES = frozenset("NCHW"), frozenset("OIHW")
#: Fewest products per output (``C·kh·kw``) rewritten: below it the direct convolution's output
#: block is as fast (a stem of 4×4 windows over 3 channels has 48), above it the GEMM is faster.
MIN_PATCH_DEPTH = 256


def is_patch_conv(call: Call) -> bool:
    """Whether ``call`` is a floating-point ``nn.conv2d`` whose windows tile its input without
    overlap or gaps (stride == kernel > 1×1, padding 0, dilation 1, groups 1, unblocked layouts),
    with at least ``MIN_PATCH_DEPTH`` products per output."""
    if not (isinstance(call.op, Op) and call.op.name == "nn.conv2d"):
        return False
    attrs: Conv2DAttrs = call.attrs
    data_layout, kernel_layout = attrs.data_layout, attrs.kernel_layout
    out_layout = attrs.out_layout or data_layout
    if not (len(data_layout) == 4 and set(data_layout) == _DATA_AXES and len(kernel_layout) == 4
            and set(kernel_layout) == _KERNEL_AXES and sorted(out_layout) == sorted(data_layout)):
        return False
    weight = tensor_type_of(call.args[1]).shape
    kernel = (int(weight[kernel_layout.index("H")]), int(weight[kernel_layout.index("W")]))
    depth = int(weight[kernel_layout.index("I")]) * kernel[0] * kernel[1]
    return (
        depth >= MIN_PATCH_DEPTH
        and tensor_type_of(call.args[0]).dtype.startswith("float")
        and attrs.groups == 1
        and tuple(attrs.dilation) == (1, 1)
        and not any(attrs.padding)
        and tuple(attrs.strides) == kernel
        and kernel != (1, 1)
    )


@dataclass(frozen=True)
class _Rows:
    """A patch convolution's result as the dense layer's ``[N·OH·OW, O]`` matrix, and its NCHW shape."""

    matrix: Expr
    shape: tuple[int, int, int, int]

    def nchw(self) -> Expr:
        n, o, oh, ow = self.shape
        return transpose(reshape(self.matrix, [n, oh, ow, o]), [0, 3, 1, 2])


def patch_rows(call: Call, data: Expr, weight: Expr) -> tuple[Expr, tuple[int, int, int, int]]:
    """The patch convolution ``call`` (``is_patch_conv``) on ``data`` and ``weight`` as a dense
    layer over its patches: the ``[N·OH·OW, O]`` product (rows in ``N, OH, OW`` order) and the
    convolution's ``(N, O, OH, OW)``."""
    attrs: Conv2DAttrs = call.attrs
    layout, kernel_layout = attrs.data_layout, attrs.kernel_layout
    shape = {axis: int(n) for axis, n in zip(layout, tensor_type_of(call.args[0]).shape, strict=True)}
    wshape = {axis: int(n) for axis, n in zip(kernel_layout, tensor_type_of(call.args[1]).shape, strict=True)}
    kh, kw, channels = wshape["H"], wshape["W"], wshape["O"]
    oh, ow = shape["H"] // kh, shape["W"] // kw
    if (oh * kh, ow * kw) != (shape["H"], shape["W"]):  # the pixels no window covers
        data = strided_slice(data, [0, 0], [oh * kh, ow * kw], axes=[layout.index("H"), layout.index("W")])
    # each of H and W split into (windows, offset in the window), in place
    split: list[str] = []
    sizes: list[int] = []
    for axis in layout:
        if axis == "H":
            split += ["OH", "KH"]
            sizes += [oh, kh]
        elif axis == "W":
            split += ["OW", "KW"]
            sizes += [ow, kw]
        else:
            split.append(axis)
            sizes.append(shape[axis])
    rows = transpose(reshape(data, sizes), [split.index(a) for a in ("N", "OH", "OW", "C", "KH", "KW")])
    patches = reshape(rows, [shape["N"] * oh * ow, shape["C"] * kh * kw])
    oihw = [kernel_layout.index(a) for a in "OIHW"]
    matrix = weight if kernel_layout == "OIHW" else transpose(weight, oihw)
    product = dense(patches, reshape(matrix, [channels, shape["C"] * kh * kw]), channels, attrs.out_dtype)
    return product, (shape["N"], channels, oh, ow)


class _PatchConv(ExprMutator):
    """Rewrites the patch convolutions; an NCHW result's channel bias and its rearrangement into
    tokens (``[N, OH·OW, O]``, ViT's and Swin's flatten and transpose) or into NHWC (ConvNeXt's
    permute) are applied to the product's rows directly, so that the rows are not transposed to
    NCHW and back."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[Expr, _Rows] = {}  # an NCHW result → its rows

    def visit_call(self, call: Call) -> Expr:
        new = super().visit_call(call)
        if not isinstance(new, Call) or not isinstance(new.op, Op):
            return new
        name = new.op.name
        if is_patch_conv(call):
            matrix, shape = patch_rows(call, new.args[0], new.args[1])
            layout = call.attrs.out_layout or call.attrs.data_layout
            if layout == "NCHW":
                return self._record(_Rows(matrix, shape))
            n, o, oh, ow = shape
            pixels = reshape(matrix, [n, oh, ow, o])
            return pixels if layout == "NHWC" else transpose(pixels, ["NHWC".index(a) for a in layout])
        if name in ("add", "nn.bias_add"):
            return self._biased(call, new) or new
        if name == "transpose" and new.args[0] in self.rows:  # NCHW -> NHWC
            rows = self.rows[new.args[0]]
            if _axes(new) == (0, 2, 3, 1):
                n, o, oh, ow = rows.shape
                return reshape(rows.matrix, [n, oh, ow, o])
        if name == "transpose" and _axes(new) == (0, 2, 1):  # [N, O, OH*OW] -> tokens
            inner = new.args[0]
            if isinstance(inner, Call) and isinstance(inner.op, Op) and inner.op.name == "reshape" \
                    and inner.args[0] in self.rows:
                rows = self.rows[inner.args[0]]
                n, o, oh, ow = rows.shape
                if tuple(int(d) for d in tensor_type_of(call.args[0]).shape) == (n, o, oh * ow):
                    return reshape(rows.matrix, [n, oh * ow, o])
        return new

    def _record(self, rows: _Rows) -> Expr:
        out = rows.nchw()
        self.rows[out] = rows
        return out

    def _biased(self, call: Call, new: Call) -> Expr | None:
        """A channel bias added to a patch convolution's NCHW result, added to its rows instead."""
        for k in (0, 1):
            if new.args[k] not in self.rows or (new.op.name == "nn.bias_add" and k == 1):
                continue
            rows = self.rows[new.args[k]]
            bias_type = tensor_type_of(call.args[1 - k])
            channels = rows.shape[1]
            shape = tuple(int(d) for d in bias_type.shape)
            if new.op.name == "nn.bias_add":
                per_channel = call.attrs.axis % 4 == 1 and shape == (channels,)
            else:
                per_channel = shape in ((channels, 1, 1), (1, channels, 1, 1))
            if per_channel and bias_type.dtype == tensor_type_of(call).dtype:
                bias = reshape(new.args[1 - k], [channels])
                return self._record(_Rows(add(rows.matrix, bias), rows.shape))
        return None


def _axes(call: Call) -> tuple[int, ...] | None:
    axes = call.attrs.axes
    return None if axes is None else tuple(int(a) for a in axes)


def patch_conv_to_dense(fn: Function) -> Function:
    """``fn`` with its patch convolutions (``is_patch_conv``) as dense layers over the patches."""
    return _PatchConv().visit(fn)  # type: ignore[return-value]


def PatchConvToDense() -> Pass:  # noqa: N802 - named as TVM's passes are
    """The pass (opt_level 2, as TVM's other rewrites of an operator into cheaper ones)."""
    return function_pass("PatchConvToDense", 2, patch_conv_to_dense)
