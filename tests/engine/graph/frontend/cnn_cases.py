"""Cases of the CNN-era operators (convolutions, pools, activations, shape chains), each a small model
made with ``onnx.helper``; registered in ``onnx_models.CASES`` for the operator tests."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from .onnx_models import case, ints, make_model, one_op, randn

# --- convolution, matrix products -----------------------------------------------------------------

case("Conv", "pads-strides-bias")(
    lambda: one_op("Conv", {"x": randn(1, 3, 9, 9)}, {"w": randn(4, 3, 3, 3), "b": randn(4)},
                   pads=[1, 0, 2, 1], strides=[2, 1])
)
case("Conv", "group-2-dilation")(
    lambda: one_op("Conv", {"x": randn(2, 4, 10, 10)}, {"w": randn(6, 2, 3, 3)}, group=2, dilations=[2, 2])
)
case("Conv", "depthwise-same-upper-stride-2")(
    lambda: one_op("Conv", {"x": randn(1, 8, 9, 8)}, {"w": randn(8, 1, 3, 3), "b": randn(8)}, group=8,
                   strides=[2, 2], auto_pad="SAME_UPPER", opset=11)
)
case("Conv", "same-lower-even-kernel")(
    lambda: one_op("Conv", {"x": randn(1, 3, 7, 7)}, {"w": randn(5, 3, 2, 4)}, auto_pad="SAME_LOWER")
)
case("Conv", "valid-kernel-shape")(
    lambda: one_op("Conv", {"x": randn(1, 3, 6, 6)}, {"w": randn(2, 3, 3, 3)}, auto_pad="VALID",
                   kernel_shape=[3, 3], opset=7)
)
case("Gemm", "bias-vector")(lambda: one_op("Gemm", {"a": randn(3, 5)}, {"b": randn(5, 4), "c": randn(4)}))
case("Gemm", "alpha-beta-transposes-matrix-c")(
    lambda: one_op("Gemm", {"a": randn(5, 3)}, {"b": randn(4, 5), "c": randn(3, 4)}, alpha=0.5, beta=2.0,
                   transA=1, transB=1, opset=9)
)
case("Gemm", "runtime-b-scalar-c-no-c-scale")(
    lambda: one_op("Gemm", {"a": randn(2, 6), "b": randn(6, 3)}, {"c": randn(1)}, beta=-1.5, opset=11)
)
case("Gemm", "no-c")(lambda: one_op("Gemm", {"a": randn(2, 6)}, {"b": randn(3, 6)}, transB=1, alpha=3.0))
case("MatMul", "2d-weight")(lambda: one_op("MatMul", {"a": randn(3, 7)}, {"b": randn(7, 2)}))
case("MatMul", "3d-by-2d")(lambda: one_op("MatMul", {"a": randn(2, 3, 7)}, {"b": randn(7, 4)}))
case("MatMul", "batched-runtime")(lambda: one_op("MatMul", {"a": randn(2, 3, 3, 5), "b": randn(2, 3, 5, 4)}))
case("MatMul", "2d-runtime")(lambda: one_op("MatMul", {"a": randn(4, 5), "b": randn(5, 6)}, opset=9))

# --- elementwise -------------------------------------------------------------------------------------

case("Relu", "relu")(lambda: one_op("Relu", {"x": randn(2, 3, 4)}))
case("Sigmoid", "sigmoid")(lambda: one_op("Sigmoid", {"x": randn(2, 3, 4)}))
case("Tanh", "tanh")(lambda: one_op("Tanh", {"x": randn(2, 3, 4)}))
case("LeakyRelu", "default-alpha")(lambda: one_op("LeakyRelu", {"x": randn(2, 8)}))
case("LeakyRelu", "alpha")(lambda: one_op("LeakyRelu", {"x": randn(2, 8)}, alpha=0.3, opset=16))
case("Clip", "attributes-opset-6")(lambda: one_op("Clip", {"x": randn(3, 4)}, min=-0.5, max=0.7, opset=7))
case("Clip", "attribute-max-only")(lambda: one_op("Clip", {"x": randn(3, 4)}, max=0.2, opset=10))
case("Clip", "inputs-opset-11")(
    lambda: one_op("Clip", {"x": randn(3, 4)}, {"lo": np.float32(-0.3), "hi": np.float32(0.4)}, opset=11)
)
case("Clip", "input-max-only")(
    lambda: one_op("Clip", {"x": randn(3, 4)}, {"hi": np.float32(6.0)}, input_names=["x", "", "hi"])
)
case("Clip", "no-bounds")(lambda: one_op("Clip", {"x": randn(3, 4)}, opset=12))
for _op in ("Add", "Sub", "Mul", "Div"):
    case(_op, "broadcast-runtime")(lambda op=_op: one_op(op, {"a": randn(3, 1, 5), "b": randn(4, 1) + 3}))
    case(_op, "broadcast-constant")(
        lambda op=_op: one_op(op, {"a": randn(2, 3, 4, 4)}, {"b": randn(3, 1, 1) + 3}, opset=7)
    )
    case(_op, "int-constants-folded")(
        lambda op=_op: one_op(op, {}, {"a": ints(7, -7, 9), "b": ints(2, 2, -4)}, outputs={"y": "int64"})
    )

# --- normalisation, pooling ---------------------------------------------------------------------------


def _bn_params(c: int) -> dict[str, np.ndarray]:
    return {"s": randn(c), "b": randn(c), "m": randn(c), "v": np.abs(randn(c)) + 0.5}


case("BatchNormalization", "opset-9")(
    lambda: one_op("BatchNormalization", {"x": randn(2, 3, 4, 4)}, _bn_params(3), epsilon=1e-3, opset=9)
)
case("BatchNormalization", "opset-15-2d")(
    lambda: one_op("BatchNormalization", {"x": randn(4, 5)}, _bn_params(5), opset=15)
)
case("BatchNormalization", "opset-7-spatial")(
    lambda: one_op("BatchNormalization", {"x": randn(1, 2, 3, 3)}, _bn_params(2), spatial=1, opset=7)
)
case("MaxPool", "pads-strides")(
    lambda: one_op("MaxPool", {"x": randn(1, 2, 9, 9)}, kernel_shape=[3, 3], strides=[2, 2],
                   pads=[1, 1, 1, 1])
)
case("MaxPool", "ceil-mode")(
    lambda: one_op("MaxPool", {"x": randn(1, 2, 8, 8)}, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
)
case("MaxPool", "same-upper")(
    lambda: one_op("MaxPool", {"x": randn(1, 2, 7, 9)}, kernel_shape=[2, 3], strides=[2, 1],
                   auto_pad="SAME_UPPER")
)
# (onnxruntime 1.32 pads SAME windows without their dilation, against the ONNX spec: dilation is
# tested with explicit pads)
case("MaxPool", "dilation-pads")(
    lambda: one_op("MaxPool", {"x": randn(1, 2, 7, 9)}, kernel_shape=[2, 3], dilations=[2, 1],
                   pads=[1, 1, 0, 1], opset=12)
)
case("MaxPool", "ceil-mode-drops-a-window-starting-in-the-padding")(
    lambda: one_op("MaxPool", {"x": randn(1, 2, 5, 5)}, kernel_shape=[2, 2], strides=[2, 2],
                   pads=[1, 1, 1, 1], ceil_mode=1)
)
case("MaxPool", "ceil-mode-rounds-up-one-dimension")(
    lambda: one_op("MaxPool", {"x": randn(1, 2, 5, 6)}, kernel_shape=[2, 3], strides=[2, 2],
                   pads=[1, 0, 1, 0], ceil_mode=1)
)
case("MaxPool", "opset-8")(
    lambda: one_op("MaxPool", {"x": randn(2, 3, 6, 6)}, kernel_shape=[2, 2], strides=[2, 2], opset=8)
)
case("AveragePool", "pads-exclude-pad")(
    lambda: one_op("AveragePool", {"x": randn(1, 2, 7, 7)}, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
)
case("AveragePool", "pads-include-pad")(
    lambda: one_op("AveragePool", {"x": randn(1, 2, 7, 7)}, kernel_shape=[3, 3], strides=[2, 2],
                   pads=[1, 0, 1, 2], count_include_pad=1, opset=7)
)
case("AveragePool", "ceil-mode")(
    lambda: one_op("AveragePool", {"x": randn(1, 2, 8, 8)}, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1,
                   opset=11)
)
case("AveragePool", "ceil-mode-include-pad-drops-a-window")(
    lambda: one_op("AveragePool", {"x": randn(1, 2, 7, 7)}, kernel_shape=[2, 2], strides=[2, 2],
                   pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)
)
case("AveragePool", "ceil-mode-rounds-up-one-dimension")(
    lambda: one_op("AveragePool", {"x": randn(1, 2, 5, 6)}, kernel_shape=[2, 3], strides=[2, 2],
                   pads=[1, 0, 1, 0], ceil_mode=1)
)
case("AveragePool", "same-lower")(
    lambda: one_op("AveragePool", {"x": randn(1, 2, 6, 5)}, kernel_shape=[2, 2], auto_pad="SAME_LOWER")
)
case("GlobalAveragePool", "global")(lambda: one_op("GlobalAveragePool", {"x": randn(2, 3, 5, 4)}))

# --- shape changes --------------------------------------------------------------------------------------

case("Flatten", "axis-1")(lambda: one_op("Flatten", {"x": randn(2, 3, 4, 5)}))
case("Flatten", "axis-2")(lambda: one_op("Flatten", {"x": randn(2, 3, 4, 5)}, axis=2))
case("Flatten", "axis-0-opset-9")(lambda: one_op("Flatten", {"x": randn(2, 3, 4)}, axis=0, opset=9))
case("Flatten", "axis-negative")(lambda: one_op("Flatten", {"x": randn(2, 3, 4)}, axis=-1, opset=11))
case("Reshape", "zero-and-minus-one")(lambda: one_op("Reshape", {"x": randn(2, 3, 4)}, {"s": ints(0, -1, 2)}))
case("Reshape", "allowzero-0-opset-14")(
    lambda: one_op("Reshape", {"x": randn(2, 3, 4)}, {"s": ints(4, 0, 2)}, allowzero=0, opset=14)
)
case("Reshape", "constant-folded")(
    lambda: one_op("Reshape", {}, {"x": ints(1, 2, 3, 4), "s": ints(2, 2)}, outputs={"y": "int64"})
)
case("Transpose", "perm")(lambda: one_op("Transpose", {"x": randn(2, 3, 4, 5)}, perm=[0, 2, 3, 1]))
case("Transpose", "default-reverses")(lambda: one_op("Transpose", {"x": randn(2, 3, 4)}))
case("Concat", "runtime-and-constant")(
    lambda: one_op("Concat", {"a": randn(2, 3, 4), "b": randn(2, 1, 4)}, {"c": randn(2, 2, 4)}, axis=1)
)
case("Concat", "negative-axis")(
    lambda: one_op("Concat", {"a": randn(2, 3), "b": randn(2, 5)}, axis=-1, opset=11)
)
case("Softmax", "opset-11-flattens-at-axis")(
    lambda: one_op("Softmax", {"x": randn(2, 3, 4)}, axis=1, opset=11)
)
case("Softmax", "opset-11-default-axis")(lambda: one_op("Softmax", {"x": randn(2, 3, 4)}, opset=11))
case("Softmax", "opset-13-axis")(lambda: one_op("Softmax", {"x": randn(2, 3, 4)}, axis=1))
case("Softmax", "opset-13-default-axis")(lambda: one_op("Softmax", {"x": randn(2, 3, 4)}))
case("Pad", "attributes-opset-7")(
    lambda: one_op("Pad", {"x": randn(1, 2, 3, 3)}, pads=[0, 0, 1, 2, 0, 0, 2, 1], value=1.5, opset=7)
)
case("Pad", "inputs-constant-value")(
    lambda: one_op("Pad", {"x": randn(1, 2, 3, 3)}, {"p": ints(0, 0, 1, 1, 0, 0, 1, 1), "v": np.float32(-2)},
                   opset=11)
)
case("Pad", "reflect")(
    lambda: one_op("Pad", {"x": randn(2, 4, 5)}, {"p": ints(0, 1, 2, 0, 2, 1)}, mode="reflect")
)
case("Pad", "edge-axes-opset-18")(
    lambda: one_op("Pad", {"x": randn(2, 4, 5)}, {"p": ints(1, 2, 3, 0), "a": ints(-1, 0)}, mode="edge",
                   input_names=["x", "p", "", "a"], opset=18)
)

# --- constants, identity, dropout ------------------------------------------------------------------------


def _then_add(node: object, opset: int = 13, shape: tuple = (2, 3)) -> tuple:
    add = helper.make_node("Add", ["x", "k"], ["y"])
    model = make_model([node, add], {"x": (shape, "float32")}, {"y": "float32"}, opset=opset)
    return model, {"x": randn(*shape)}


case("Constant", "tensor-value")(
    lambda: _then_add(helper.make_node("Constant", [], ["k"], value=helper.make_tensor(
        "k", TensorProto.FLOAT, [3], [1.0, -2.0, 0.5])))
)
case("Constant", "value-floats")(
    lambda: _then_add(helper.make_node("Constant", [], ["k"], value_floats=[1.0, 2.0, 3.0]), opset=12)
)
case("Constant", "value-float")(
    lambda: _then_add(helper.make_node("Constant", [], ["k"], value_float=0.25), opset=12)
)
@case("ConstantOfShape", "fill-from-shape")
def _constant_of_shape() -> tuple:
    fill = helper.make_tensor("v", TensorProto.FLOAT, [1], [0.75])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("ConstantOfShape", ["s"], ["k"], value=fill),
        helper.make_node("Add", ["x", "k"], ["y"]),
    ]
    return make_model(nodes, {"x": ((2, 3), "float32")}, {"y": "float32"}), {"x": randn(2, 3)}


case("Identity", "runtime")(lambda: one_op("Identity", {"x": randn(3, 2)}))
case("Identity", "constant")(lambda: one_op("Identity", {}, {"x": randn(3, 2)}))
case("Dropout", "ratio-attribute-opset-7")(lambda: one_op("Dropout", {"x": randn(3, 4)}, ratio=0.3, opset=7))
case("Dropout", "mask-output-opset-12")(
    lambda: one_op("Dropout", {"x": randn(3, 4)}, {"r": np.float32(0.5), "t": np.asarray(False)},
                   outputs={"y": "float32", "mask": "bool"}, opset=12)
)

# --- shape chains, folded at import ----------------------------------------------------------------------


def _flatten_by_shape_chain(opset: int, cast: bool = False, slice_: bool = False) -> tuple:
    """PyTorch's ``x.view(x.size(0), -1)`` as exported: Shape, Gather, Unsqueeze, Concat, Reshape."""
    unsqueeze = (helper.make_node("Unsqueeze", ["n"], ["nu"], axes=[0]) if opset < 13
                 else helper.make_node("Unsqueeze", ["n", "zero_axis"], ["nu"]))
    nodes = [helper.make_node("Shape", ["x"], ["s"])]
    if slice_:
        nodes.append(helper.make_node("Slice", ["s", "start", "stop"], ["nu"]))
    else:
        nodes += [helper.make_node("Gather", ["s", "zero"], ["n"], axis=0), unsqueeze]
    shape_name = "nu"
    if cast:
        nodes += [helper.make_node("Cast", ["nu"], ["nuf"], to=TensorProto.FLOAT),
                  helper.make_node("Cast", ["nuf"], ["nui"], to=TensorProto.INT64)]
        shape_name = "nui"
    nodes += [
        helper.make_node("Concat", [shape_name, "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="flatten_reshape"),
    ]
    inits = {"zero": np.asarray(0, dtype="int64"), "zero_axis": ints(0), "minus_one": ints(-1),
             "start": ints(0), "stop": ints(1)}
    used = {i for n in nodes for i in n.input}
    model = make_model(nodes, {"x": ((2, 3, 4, 5), "float32")}, {"y": "float32"},
                       {k: v for k, v in inits.items() if k in used}, opset=opset)
    return model, {"x": randn(2, 3, 4, 5)}


case("Shape", "chain-to-reshape")(lambda: _flatten_by_shape_chain(13))
case("Shape", "start-end-opset-15")(
    lambda: one_op("Shape", {"x": randn(2, 3, 4)}, start=1, end=-1, outputs={"y": "int64"}, opset=15)
)
case("Gather", "chain-opset-11")(lambda: _flatten_by_shape_chain(11))
case("Gather", "constant-matrix-negative-index")(
    lambda: one_op("Gather", {}, {"d": randn(4, 3), "i": ints(-1, 0)}, axis=0)
)
case("Unsqueeze", "chain-opset-13")(lambda: _flatten_by_shape_chain(13))
case("Unsqueeze", "runtime-attribute-opset-11")(lambda: one_op("Unsqueeze", {"x": randn(3, 4)}, axes=[0, -1],
                                                               opset=11))
case("Unsqueeze", "runtime-input")(lambda: one_op("Unsqueeze", {"x": randn(3, 4)}, {"a": ints(1, 3)}))
case("Squeeze", "runtime-attribute-opset-11")(lambda: one_op("Squeeze", {"x": randn(3, 1, 4, 1)}, axes=[1],
                                                             opset=11))
case("Squeeze", "runtime-all")(lambda: one_op("Squeeze", {"x": randn(1, 3, 1, 4)}))
case("Squeeze", "runtime-input")(lambda: one_op("Squeeze", {"x": randn(1, 3, 1, 4)}, {"a": ints(-2)}))
case("Concat", "shape-chain")(lambda: _flatten_by_shape_chain(13))
case("Cast", "shape-chain")(lambda: _flatten_by_shape_chain(13, cast=True))
case("Cast", "runtime-to-float64")(lambda: one_op("Cast", {"x": randn(3, 4)}, to=TensorProto.DOUBLE,
                                                  outputs={"y": "float64"}))
case("Slice", "shape-chain")(lambda: _flatten_by_shape_chain(13, slice_=True))
case("Slice", "attributes-opset-9")(
    lambda: one_op("Slice", {}, {"x": randn(4, 5)}, starts=[1, -3], ends=[3, 100], axes=[0, 1], opset=9)
)
case("Slice", "inputs-negative-step")(
    lambda: one_op("Slice", {}, {"x": randn(4, 6), "st": ints(-1), "en": ints(-100), "ax": ints(1),
                                 "sp": ints(-2)})
)

# --- transposed convolution ---------------------------------------------------------------------------

case("ConvTranspose", "stride-2-pads-output-padding-bias")(
    lambda: one_op("ConvTranspose", {"x": randn(1, 3, 5, 4)}, {"w": randn(3, 2, 3, 3), "b": randn(2)},
                   strides=[2, 2], pads=[1, 0, 1, 1], output_padding=[1, 0])
)
case("ConvTranspose", "groups-dilation-opset-11")(
    lambda: one_op("ConvTranspose", {"x": randn(2, 4, 4, 4)}, {"w": randn(4, 3, 2, 3)}, group=2,
                   dilations=[2, 1], strides=[1, 2], opset=11)
)
case("ConvTranspose", "output-shape")(
    lambda: one_op("ConvTranspose", {"x": randn(1, 2, 3, 3)}, {"w": randn(2, 4, 3, 3)}, strides=[2, 2],
                   output_shape=[6, 6])
)
case("ConvTranspose", "same-upper-stride-2")(
    lambda: one_op("ConvTranspose", {"x": randn(1, 2, 3, 4)}, {"w": randn(2, 2, 4, 4)}, strides=[2, 2],
                   auto_pad="SAME_UPPER")
)

# --- resize -----------------------------------------------------------------------------------------------

_EMPTY = np.zeros(0, dtype="float32")
case("Resize", "nearest-scales-2x-asymmetric-floor")(
    lambda: one_op("Resize", {"x": randn(1, 2, 3, 4)},
                   {"roi": _EMPTY, "s": np.asarray([1, 1, 2, 2], "float32")},
                   mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor",
                   opset=11)
)
case("Resize", "nearest-sizes-half-pixel-round-prefer-floor")(
    lambda: one_op("Resize", {"x": randn(1, 2, 5, 4)}, {"sz": ints(1, 2, 7, 9)},
                   input_names=["x", "", "", "sz"], mode="nearest")
)
case("Resize", "linear-scales-half-pixel")(
    lambda: one_op("Resize", {"x": randn(2, 3, 4, 5)}, {"s": np.asarray([1, 1, 2.5, 1.5], "float32")},
                   input_names=["x", "", "s"], mode="linear")
)
case("Resize", "linear-sizes-align-corners-downscale")(
    lambda: one_op("Resize", {"x": randn(1, 2, 8, 7)}, {"sz": ints(1, 2, 3, 5)},
                   input_names=["x", "", "", "sz"], mode="linear",
                   coordinate_transformation_mode="align_corners")
)
case("Resize", "linear-pytorch-half-pixel-axes-opset-18")(
    lambda: one_op("Resize", {"x": randn(1, 2, 4, 4)}, {"sz": ints(1, 6)}, input_names=["x", "", "", "sz"],
                   mode="linear", coordinate_transformation_mode="pytorch_half_pixel", axes=[2, 3], opset=18)
)
case("Resize", "nearest-round-prefer-ceil-tf-half-pixel")(
    lambda: one_op("Resize", {"x": randn(1, 1, 5, 5)}, {"s": np.asarray([1, 1, 1.6, 0.6], "float32")},
                   input_names=["x", "", "s"], mode="nearest", nearest_mode="round_prefer_ceil",
                   coordinate_transformation_mode="tf_half_pixel_for_nn")
)
