"""Operators that repeat a tensor or make one from its index: broadcast_to (BROADCAST), tile and
arange (INJECTIVE)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..graph_expr import Call, Expr
from ..op_registry import Attrs, OpPattern, expect, tensor_arg
from ..types import TensorType, Type
from .define import broadcast_shape, int_tuple, make_call, register_op


@dataclass(frozen=True)
class BroadcastToAttrs(Attrs):
    """``broadcast_to``: the target shape."""

    shape: tuple[int, ...] = ()


@dataclass(frozen=True)
class TileAttrs(Attrs):
    """``tile``: the repetitions per axis."""

    reps: tuple[int, ...] = ()


@dataclass(frozen=True)
class ArangeAttrs(Attrs):
    """``arange``: start, stop and step of the sequence, and its dtype."""

    start: float = 0.0
    stop: float = 1.0
    step: float = 1.0
    dtype: str = "float32"


def _broadcast_to_relation(op_name: str, arg_types: Sequence[Type | None], attrs: BroadcastToAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    shape = broadcast_shape(op_name, data.shape, attrs.shape)
    expect(shape == attrs.shape, op_name, f"{data.shape} does not broadcast to {attrs.shape}")
    return TensorType(shape, data.dtype)


def _broadcast_to(attrs: BroadcastToAttrs, x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(x, attrs.shape))


def tiled_shape(op_name: str, shape: tuple[int, ...], reps: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's ``tile`` shape: the shorter of shape and reps padded with leading ones."""
    expect(all(r >= 1 for r in reps), op_name, f"reps {reps} must be positive")
    n = max(len(shape), len(reps))
    padded = (1,) * (n - len(shape)) + tuple(shape)
    times = (1,) * (n - len(reps)) + tuple(reps)
    return tuple(s * r for s, r in zip(padded, times, strict=True))


def _tile_relation(op_name: str, arg_types: Sequence[Type | None], attrs: TileAttrs) -> Type:
    data = tensor_arg(op_name, arg_types, 0, "data")
    return TensorType(tiled_shape(op_name, data.shape, attrs.reps), data.dtype)


def _tile(attrs: TileAttrs, x: np.ndarray) -> np.ndarray:
    return np.tile(x, attrs.reps)


def arange_length(op_name: str, attrs: ArangeAttrs) -> int:
    """How many values ``arange`` gives (numpy's count: ``ceil((stop - start) / step)``, at least 1)."""
    expect(attrs.step != 0, op_name, "step is 0")
    count = int(np.ceil((attrs.stop - attrs.start) / attrs.step))
    expect(count > 0, op_name, f"start {attrs.start}, stop {attrs.stop}, step {attrs.step} give no values")
    return count


def _arange_relation(op_name: str, arg_types: Sequence[Type | None], attrs: ArangeAttrs) -> Type:
    return TensorType((arange_length(op_name, attrs),), attrs.dtype)


def _arange(attrs: ArangeAttrs) -> np.ndarray:
    n = arange_length("arange", attrs)
    return (attrs.start + np.arange(n, dtype=np.float64) * attrs.step).astype(attrs.dtype)


register_op(
    "broadcast_to", ("data",), _broadcast_to_relation, _broadcast_to, OpPattern.BROADCAST, BroadcastToAttrs
)
register_op("tile", ("data",), _tile_relation, _tile, OpPattern.INJECTIVE, TileAttrs)
register_op("arange", (), _arange_relation, _arange, OpPattern.INJECTIVE, ArangeAttrs)


def broadcast_to(data: Expr, shape: Sequence[int]) -> Call:
    """``data`` repeated along its axes of size 1 (and new leading axes) to ``shape``
    (``relay.broadcast_to``)."""
    return make_call("broadcast_to", [data], BroadcastToAttrs(int_tuple(shape, None, "shape")))


def tile(data: Expr, reps: Sequence[int]) -> Call:
    """``data`` repeated ``reps`` times per axis (``relay.tile``; numpy's ``tile``)."""
    return make_call("tile", [data], TileAttrs(int_tuple(reps, None, "reps")))


def arange(start: float, stop: float | None = None, step: float = 1, dtype: str = "float32") -> Call:
    """``start, start + step, ...`` below ``stop`` (``relay.arange``; one argument: ``0 .. start``)."""
    if stop is None:
        start, stop = 0, start
    return make_call("arange", [], ArangeAttrs(float(start), float(stop), float(step), str(np.dtype(dtype))))
