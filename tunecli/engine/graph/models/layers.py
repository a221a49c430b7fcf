"""Layer helpers of the built-in networks (TVM's ``relay.testing.layers``): each creates the
variables of its weights, named after the layer."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from tunecli.errors import GraphError

from ..graph_expr import Call, Expr, Var
from ..ops.broadcast import add
from ..ops.conv import conv2d as conv2d_op
from ..ops.conv3d import conv3d as conv3d_op
from ..ops.conv_transpose import conv2d_transpose as conv2d_transpose_op
from ..ops.define import IntOrInts
from ..ops.nn import batch_flatten, batch_norm, bias_add, dense, softmax

#: A keyword argument a layer helper passes on to its operator (strides, padding, channels, a layout,
#: epsilon...).
LayerOption: TypeAlias = "IntOrInts | float | str | None"
#: An elementwise activation applied to a layer's output (relu, ReLU6, swish...).
Activation: TypeAlias = Callable[[Expr], Expr]
#: A step applied to a block's hidden activations, given their channel count (squeeze-and-excitation).
HiddenStep: TypeAlias = Callable[[Expr, int], Expr]


def batch_norm_infer(
    data: Expr,
    name: str,
    gamma: Expr | None = None,
    beta: Expr | None = None,
    moving_mean: Expr | None = None,
    moving_var: Expr | None = None,
    **kwargs: LayerOption,
) -> Expr:
    """Field 0 of ``nn.batch_norm`` with variables ``<name>_gamma``, ``_beta``, ``_moving_mean``,
    ``_moving_var``."""
    return batch_norm(
        data,
        gamma or Var(f"{name}_gamma"),
        beta or Var(f"{name}_beta"),
        moving_mean or Var(f"{name}_moving_mean"),
        moving_var or Var(f"{name}_moving_var"),
        **kwargs,
    )[0]


def conv2d(data: Expr, name: str, weight: Expr | None = None, **kwargs: LayerOption) -> Call:
    """``nn.conv2d`` with the variable ``<name>_weight``."""
    return conv2d_op(data, weight or Var(f"{name}_weight"), **kwargs)


def conv3d(data: Expr, name: str, weight: Expr | None = None, **kwargs: LayerOption) -> Call:
    """``nn.conv3d`` with the variable ``<name>_weight``."""
    return conv3d_op(data, weight or Var(f"{name}_weight"), **kwargs)


def conv2d_transpose(data: Expr, name: str, weight: Expr | None = None, **kwargs: LayerOption) -> Call:
    """``nn.conv2d_transpose`` with the variable ``<name>_weight``."""
    return conv2d_transpose_op(data, weight or Var(f"{name}_weight"), **kwargs)


def conv2d_bias(data: Expr, name: str, **kwargs: LayerOption) -> Call:
    """:func:`conv2d` named ``name``, then ``nn.bias_add`` of the variable ``<name>_bias`` on axis 1."""
    return bias_add(conv2d(data, name, **kwargs), Var(f"{name}_bias"))


def conv2d_bn(data: Expr, conv_name: str, bn_name: str, epsilon: float = 1e-5, **kwargs: LayerOption) -> Expr:
    """:func:`conv2d` named ``conv_name``, then :func:`batch_norm_infer` named ``bn_name`` on the
    channel axis of the conv's ``data_layout``."""
    out = conv2d(data, conv_name, **kwargs)
    axis = kwargs.get("data_layout", "NCHW").index("C")
    return batch_norm_infer(out, bn_name, epsilon=epsilon, axis=axis)


def same_conv_bn(data: Expr, name: str, channels: int, kernel: int, stride: int, groups: int = 1,
                 epsilon: float = 1e-5) -> Expr:
    """A square ``kernel`` convolution ``<name>_conv`` padded by ``kernel // 2`` (the input's size
    at stride 1), then batch norm ``<name>_bn``."""
    return conv2d_bn(data, f"{name}_conv", f"{name}_bn", epsilon=epsilon, channels=channels,
                     kernel_size=(kernel, kernel), strides=(stride, stride),
                     padding=(kernel // 2, kernel // 2), groups=groups)


def inverted_bottleneck(
    data: Expr,
    name: str,
    in_channels: int,
    out_channels: int,
    kernel: int,
    stride: int,
    expansion: int,
    act: Activation,
    epsilon: float = 1e-5,
    hidden_step: HiddenStep | None = None,
) -> Expr:
    """A mobile inverted bottleneck ``<name>``: expand (1x1 ``_expand``, unless the expansion is 1),
    depthwise ``kernel`` x ``kernel`` ``_depthwise`` with ``stride``, each batch-normed and
    activated by ``act``; ``hidden_step`` on the result; project (1x1 ``_project``, batch norm, no
    activation); the input added when the shape is kept."""
    hidden = in_channels * expansion
    body = data
    if expansion != 1:
        body = act(same_conv_bn(body, f"{name}_expand", hidden, 1, 1, epsilon=epsilon))
    body = act(same_conv_bn(body, f"{name}_depthwise", hidden, kernel, stride, hidden, epsilon))
    if hidden_step is not None:
        body = hidden_step(body, hidden)
    body = same_conv_bn(body, f"{name}_project", out_channels, 1, 1, epsilon=epsilon)
    return add(body, data) if stride == 1 and in_channels == out_channels else body


def pooled_classifier(pooled: Expr, name: str, num_classes: int) -> Expr:
    """Class probabilities from globally pooled features: flatten, :func:`dense_add_bias` ``<name>``
    of ``num_classes`` units, softmax."""
    return softmax(dense_add_bias(batch_flatten(pooled), name, units=num_classes))


def dense_add_bias(
    data: Expr, name: str, units: int, weight: Expr | None = None, bias: Expr | None = None
) -> Call:
    """``nn.dense`` + ``nn.bias_add`` with the variables ``<name>_weight`` and ``<name>_bias``."""
    out = dense(data, weight or Var(f"{name}_weight"), units)
    return bias_add(out, bias or Var(f"{name}_bias"), axis=-1)


def conv_kernel_layout(data_layout: str, is_depthwise: bool = False) -> str:
    """The kernel layout going with ``data_layout`` (``NCHW`` -> ``OIHW``, ``NHWC`` -> ``HWIO``,
    depthwise ``NHWC`` -> ``HWOI``)."""
    if data_layout == "NCHW":
        return "OIHW"
    if data_layout == "NHWC":
        return "HWOI" if is_depthwise else "HWIO"
    raise GraphError(f"no kernel layout for data layout {data_layout!r}; use NCHW or NHWC")
