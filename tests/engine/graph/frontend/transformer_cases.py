"""Cases of the operators transformer exports contain (math, comparisons, masks, gathers, slices,
layer normalisation, batched products), each a small model made with ``onnx.helper``; registered
in ``onnx_models.CASES`` for the operator tests."""

from __future__ import annotations

import numpy as np
from onnx import helper

from .onnx_models import case, ints, make_model, one_op, randn


def positive(*shape: int) -> np.ndarray:
    """Values in [0.5, 2.5)."""
    return (np.abs(randn(*shape)) % 2 + 0.5).astype("float32")


def _bools(*shape: int) -> np.ndarray:
    return randn(*shape) > 0


# --- elementwise math ---------------------------------------------------------------------------------

case("Neg", "neg")(lambda: one_op("Neg", {"x": randn(2, 3)}))
case("Abs", "abs")(lambda: one_op("Abs", {"x": randn(2, 3)}))
case("Exp", "exp")(lambda: one_op("Exp", {"x": randn(2, 3)}))
case("Log", "log")(lambda: one_op("Log", {"x": positive(2, 3)}))
case("Sqrt", "sqrt")(lambda: one_op("Sqrt", {"x": positive(2, 3)}))
case("Sqrt", "folded-scale")(lambda: one_op("Sqrt", {}, {"x": np.float32(64.0)}, outputs={"y": "float32"}))
case("Reciprocal", "runtime")(lambda: one_op("Reciprocal", {"x": positive(3, 4)}))
case("Erf", "erf")(lambda: one_op("Erf", {"x": randn(4, 5)}))
case("Gelu", "erf-form-opset-20")(lambda: one_op("Gelu", {"x": randn(4, 6) * 3}, opset=20))
case("Gelu", "tanh-approximation")(lambda: one_op("Gelu", {"x": randn(4, 6) * 3}, approximate="tanh",
                                                  opset=20))
case("Pow", "square-constant-exponent")(lambda: one_op("Pow", {"x": randn(3, 4)}, {"e": np.float32(2.0)}))
case("Pow", "cube-int-exponent-opset-12")(
    lambda: one_op("Pow", {"x": randn(3, 4)}, {"e": np.asarray(3, dtype="int64")}, opset=12)
)
case("Pow", "runtime-exponent-broadcast")(lambda: one_op("Pow", {"x": positive(3, 4), "e": randn(4)}))
case("Pow", "half-opset-7")(lambda: one_op("Pow", {"x": positive(2, 5)}, {"e": np.float32(0.5)}, opset=7))
case("Max", "three-inputs-broadcast")(
    lambda: one_op("Max", {"a": randn(2, 3), "b": randn(3)}, {"c": randn(1)})
)
case("Min", "two-inputs")(lambda: one_op("Min", {"a": randn(2, 3), "b": randn(2, 1)}, opset=12))
case("Min", "one-input")(lambda: one_op("Min", {"a": randn(2, 3)}))

# --- comparisons, logic, selection ------------------------------------------------------------------------

_BOOL = {"y": "bool"}
for _op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"):
    case(_op, "float-broadcast")(
        lambda op=_op: one_op(op, {"a": np.round(randn(2, 3, 4)), "b": np.round(randn(3, 1))}, outputs=_BOOL)
    )
    case(_op, "int-folded")(
        lambda op=_op: one_op(op, {}, {"a": ints(1, -1, 3), "b": ints(1, 2, -3)}, outputs=_BOOL)
    )
case("Equal", "int-runtime-opset-11")(
    lambda: one_op("Equal", {"a": ints(3, 1, 4, 1), "b": ints(1)}, outputs=_BOOL, opset=11)
)
for _op in ("And", "Or", "Xor"):
    case(_op, "broadcast")(lambda op=_op: one_op(op, {"a": _bools(3, 4), "b": _bools(4)}, outputs=_BOOL))
case("Not", "not")(lambda: one_op("Not", {"a": _bools(3, 4)}, outputs=_BOOL))
case("Where", "mask-fill-broadcast")(
    lambda: one_op("Where", {"c": _bools(1, 4), "x": randn(3, 4)}, {"y0": np.float32(-1e4)},
                   outputs={"out": "float32"})
)
case("Where", "int-folded")(
    lambda: one_op("Where", {}, {"c": np.asarray([True, False, True]), "a": ints(1, 2, 3), "b": ints(-1)},
                   outputs={"y": "int64"})
)

# --- reductions ---------------------------------------------------------------------------------------------

for _op, _axes_input in (("ReduceSum", 13), ("ReduceMean", 18), ("ReduceMax", 18), ("ReduceMin", 18)):
    case(_op, "axes-attribute-keepdims")(
        lambda op=_op, n=_axes_input: one_op(op, {"x": randn(2, 3, 4)}, axes=[-1], opset=n - 1)
    )
    case(_op, "axes-attribute-no-keepdims")(
        lambda op=_op, n=_axes_input: one_op(op, {"x": randn(2, 3, 4)}, axes=[0, 2], keepdims=0, opset=n - 1)
    )
    case(_op, "axes-input")(lambda op=_op, n=_axes_input: one_op(op, {"x": randn(2, 3, 4)}, {"a": ints(1)},
                                                                  opset=n))
    case(_op, "all-axes")(lambda op=_op: one_op(op, {"x": randn(2, 3, 4)}, keepdims=0, opset=11))
case("ReduceSum", "noop-with-empty-axes")(
    lambda: one_op("ReduceSum", {"x": randn(2, 3)}, noop_with_empty_axes=1, opset=13)
)

# --- gathers, slices, splits, repeats ----------------------------------------------------------------------

case("Gather", "embedding-runtime-ids")(
    lambda: one_op("Gather", {"ids": ints(3, 0, 7, -1, 3).reshape(1, 5)}, {"table": randn(8, 6)},
                   input_names=["table", "ids"])
)
case("Gather", "runtime-ids-int32-axis-1")(
    lambda: one_op("Gather", {"x": randn(2, 5, 3), "i": np.asarray([[4, 0], [1, 1]], dtype="int32")}, axis=1)
)
case("Gather", "cls-token-scalar-index")(
    lambda: one_op("Gather", {"x": randn(2, 5, 3)}, {"i": np.asarray(0, dtype="int64")}, axis=1)
)
case("Gather", "known-indices-on-runtime-data")(
    lambda: one_op("Gather", {"x": randn(4, 3)}, {"i": ints(-1, 2, 0)}, axis=0)
)
case("Slice", "runtime-data-steps-opset-13")(
    lambda: one_op("Slice", {"x": randn(4, 6, 5)}, {"st": ints(1, -1), "en": ints(3, -100), "ax": ints(0, -1),
                                                    "sp": ints(1, -2)})
)
case("Slice", "runtime-data-large-end")(
    lambda: one_op("Slice", {"x": randn(3, 8)}, {"st": ints(2), "en": ints(2**62), "ax": ints(1)})
)
case("Slice", "runtime-attributes-opset-9")(
    lambda: one_op("Slice", {"x": randn(4, 5)}, starts=[1], ends=[3], axes=[1], opset=9)
)
_TWO = {"p": "float32", "q": "float32"}
case("Split", "equal-opset-11")(lambda: one_op("Split", {"x": randn(2, 6)}, axis=1, outputs=_TWO, opset=11))
case("Split", "sizes-attribute-opset-11")(
    lambda: one_op("Split", {"x": randn(5, 2)}, split=[2, 3], outputs=_TWO, opset=11)
)
case("Split", "sizes-input-opset-13")(
    lambda: one_op("Split", {"x": randn(2, 7)}, {"s": ints(3, 4)}, axis=-1, outputs=_TWO)
)
case("Split", "num-outputs-uneven-opset-18")(
    lambda: one_op("Split", {"x": randn(2, 7)}, axis=1, num_outputs=3, outputs={**_TWO, "r": "float32"},
                   opset=18)
)
case("Expand", "runtime-broadcast")(lambda: one_op("Expand", {"x": randn(3, 1)}, {"s": ints(2, 1, 4)}))
case("Expand", "shape-smaller-than-input")(lambda: one_op("Expand", {"x": randn(2, 3)}, {"s": ints(1, 1)}))
case("Expand", "folded")(
    lambda: one_op("Expand", {}, {"x": ints(1, 2), "s": ints(3, 1)}, outputs={"y": "int64"})
)
case("Tile", "runtime")(lambda: one_op("Tile", {"x": randn(2, 3)}, {"r": ints(2, 3)}))
case("Tile", "folded")(lambda: one_op("Tile", {}, {"x": ints(1, 2), "r": ints(3)}, outputs={"y": "int64"}))
case("Trilu", "upper-default")(lambda: one_op("Trilu", {"x": randn(2, 4, 5)}, opset=14))
case("Trilu", "lower-k-minus-1")(
    lambda: one_op("Trilu", {"x": randn(4, 4)}, {"k": np.asarray(-1, dtype="int64")}, upper=0, opset=14)
)
case("Trilu", "upper-k-2-folded")(
    lambda: one_op("Trilu", {}, {"x": randn(3, 5), "k": np.asarray(2, dtype="int64")}, opset=14)
)
case("Range", "folded-int")(
    lambda: one_op("Range", {}, {"s": np.asarray(1, "int64"), "l": np.asarray(10, "int64"),
                                 "d": np.asarray(3, "int64")}, outputs={"y": "int64"})
)


@case("Range", "position-ids-from-shape")
def _position_ids() -> tuple:
    """``torch.arange(x.size(1))`` as exported: Shape, Gather, Range, then an Add with the data."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
        helper.make_node("Range", ["zero", "n", "step"], ["pos"]),
        helper.make_node("Cast", ["pos"], ["posf"], to=1),
        helper.make_node("Add", ["x", "posf"], ["y"]),
    ]
    inits = {"one": np.asarray(1, "int64"), "zero": np.asarray(0, "int64"), "step": np.asarray(1, "int64")}
    return make_model(nodes, {"x": ((2, 5), "float32")}, {"y": "float32"}, inits), {"x": randn(2, 5)}


# --- normalisation, matrix products ------------------------------------------------------------------------

case("LayerNormalization", "last-axis-opset-17")(
    lambda: one_op("LayerNormalization", {"x": randn(2, 3, 8)}, {"s": randn(8), "b": randn(8)}, epsilon=1e-5,
                   opset=17)
)
case("LayerNormalization", "two-axes-no-bias")(
    lambda: one_op("LayerNormalization", {"x": randn(2, 3, 4)}, {"s": randn(3, 4)}, axis=1, opset=18)
)
case("MatMul", "vector-by-matrix")(lambda: one_op("MatMul", {"a": randn(3)}, {"b": randn(3, 2)}))
case("MatMul", "batch-by-vector")(lambda: one_op("MatMul", {"a": randn(2, 4, 3), "b": randn(3)}))
case("MatMul", "broadcast-batches")(lambda: one_op("MatMul", {"a": randn(2, 1, 3, 5), "b": randn(4, 5, 2)}))
case("MatMul", "matrix-by-batch")(lambda: one_op("MatMul", {"a": randn(3, 5), "b": randn(2, 5, 4)}))


@case("MatMul", "attention-scores-transposed-keys")
def _attention_scores() -> tuple:
    """``q @ k.transpose(-1, -2)``: the transpose is read through batch_matmul's transpose_b."""
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["y"]),
    ]
    inputs = {"q": randn(2, 3, 5, 4), "k": randn(2, 3, 6, 4)}
    return make_model(nodes, {n: (a.shape, "float32") for n, a in inputs.items()}, {"y": "float32"}), inputs


case("Einsum", "attention-scores-bhid-bhjd")(
    lambda: one_op("Einsum", {"q": randn(2, 3, 5, 4), "k": randn(2, 3, 6, 4)}, equation="bhid,bhjd->bhij")
)
case("Einsum", "attention-context-bhij-bhjd")(
    lambda: one_op("Einsum", {"p": randn(2, 3, 5, 6), "v": randn(2, 3, 6, 4)}, equation="bhij,bhjd->bhid")
)
case("Einsum", "projection-weight-ellipsis")(
    lambda: one_op("Einsum", {"x": randn(2, 5, 4)}, {"w": randn(3, 4)}, equation="...d,kd->...k")
)
case("Einsum", "transpose-one-operand")(lambda: one_op("Einsum", {"x": randn(2, 3, 4)}, equation="abc->cab"))
case("Einsum", "sum-lonely-label")(lambda: one_op("Einsum", {"x": randn(2, 3, 4)}, equation="abc->ac"))
case("Einsum", "outer-product")(lambda: one_op("Einsum", {"a": randn(3), "b": randn(4)}, equation="i,j->ij"))

# --- NaN and infinity tests, gathers by index tuples ------------------------------------------------------


def _specials(*shape: int) -> np.ndarray:
    x = randn(*shape)
    x.reshape(-1)[::3] = np.nan
    x.reshape(-1)[1::5] = np.inf
    x.reshape(-1)[2::7] = -np.inf
    return x


case("IsNaN", "runtime")(lambda: one_op("IsNaN", {"x": _specials(3, 7)}, outputs=_BOOL))
case("IsInf", "both-signs")(lambda: one_op("IsInf", {"x": _specials(3, 7)}, outputs=_BOOL))
case("IsInf", "negative-only")(
    lambda: one_op("IsInf", {"x": _specials(3, 7)}, detect_positive=0, outputs=_BOOL)
)
case("IsInf", "positive-only-folded")(
    lambda: one_op("IsInf", {}, {"x": _specials(2, 5)}, detect_negative=0, outputs=_BOOL)
)
case("GatherND", "runtime-data-index-pairs")(
    lambda: one_op("GatherND", {"x": randn(3, 4, 5)}, {"i": np.asarray([[[0, 1], [2, -1]]], dtype="int64")})
)
case("GatherND", "batch-dims-1")(
    lambda: one_op("GatherND", {"x": randn(2, 4, 5)}, {"i": np.asarray([[[3]], [[0]]], dtype="int64")},
                   batch_dims=1)
)
case("GatherND", "mask-broadcast-as-dynamo-exports")(
    lambda: one_op("GatherND", {"m": ints(1, 1, 0, 1, 0, 0).reshape(2, 3)},
                   {"i": np.asarray([[[[0]]], [[[1]]]], dtype="int64")}, outputs={"y": "int64"})
)
case("GatherElements", "runtime-data-axis-1")(
    lambda: one_op("GatherElements", {"x": randn(3, 4)},
                   {"i": np.asarray([[0, 3], [-1, 1], [2, 2]], "int64")}, axis=1)
)
case("GatherElements", "folded-axis-0")(
    lambda: one_op("GatherElements", {}, {"x": ints(1, 2, 3, 4).reshape(2, 2), "i": ints(1, 0).reshape(1, 2)},
                   outputs={"y": "int64"})
)


# --- Size and If: what torch's TorchScript exporter emits for Tensor.tile ---------------------------

case("Size", "runtime-input")(lambda: one_op("Size", {"x": randn(2, 3, 4)}, outputs={"y": "int64"}))


def _tile_as_torch_exports(repeats: tuple[int, ...]) -> tuple:
    """``x.tile(repeats)`` as torch 2.13's TorchScript exporter writes it: the repeats are padded with
    ones in an If whose condition compares Size(Shape(x)) with len(repeats)."""

    def branch(name: str, nodes: list, out: str) -> object:
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(out, 7, None)])

    then = branch("pad_repeats", [
        helper.make_node("Sub", ["rank", "n"], ["missing"]),
        helper.make_node("Reshape", ["missing", "one"], ["missing_1d"]),
        helper.make_node("Expand", ["one", "missing_1d"], ["ones"]),
        helper.make_node("Concat", ["ones", "reps"], ["padded"], axis=0),
    ], "padded")
    other = branch("keep_repeats", [helper.make_node("Identity", ["reps"], ["kept"])], "kept")
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Size", ["shape"], ["rank"], name="rank_of_x"),
        helper.make_node("Greater", ["rank", "n"], ["more"]),
        helper.make_node("If", ["more"], ["final"], name="pad_if", then_branch=then, else_branch=other),
        helper.make_node("Tile", ["x", "final"], ["y"]),
    ]
    inits = {"n": np.asarray(len(repeats), "int64"), "one": ints(1), "reps": ints(*repeats)}
    x = randn(2, 3, 4)
    return make_model(nodes, {"x": (x.shape, "float32")}, {"y": "float32"}, inits), {"x": x}


case("If", "condition-known-at-import-then")(lambda: _tile_as_torch_exports((2, 3)))
case("If", "condition-known-at-import-else")(lambda: _tile_as_torch_exports((1, 2, 3)))
