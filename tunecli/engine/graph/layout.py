"""Data layouts such as ``"NCHW"``, ``"NCHW16c"`` and ``"OIHW8i16o"`` (TVM's ``Layout``).

An upper-case letter is a primal axis; a number and a lower-case letter is a split of that axis
(``NCHW16c``: channel blocks of 16, the block innermost).  Shapes and arrays convert between any
two layouts of the same primal axes.
"""

from __future__ import annotations

import re

import numpy as np

from tunecli.errors import GraphError

_TOKEN = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout: str) -> tuple[tuple[str, int | None], ...]:
    """``"NCHW16c"`` -> ``(("N", None), ("C", None), ("H", None), ("W", None), ("c", 16))``."""
    if not isinstance(layout, str) or not layout:
        raise GraphError(f"layout must be a non-empty string such as 'NCHW', got {layout!r}")
    pos, axes = 0, []
    for m in _TOKEN.finditer(layout):
        if m.start() != pos:
            break
        pos = m.end()
        factor, letter = m.group(1), m.group(2)
        if letter.isupper() and factor:
            raise GraphError(f"layout {layout!r}: primal axis {letter} cannot have a factor")
        if letter.islower() and (not factor or int(factor) < 1):
            raise GraphError(
                f"layout {layout!r}: sub-axis {letter} needs a positive factor (e.g. 16{letter})"
            )
        axes.append((letter, int(factor) if factor else None))
    if pos != len(layout):
        raise GraphError(f"layout {layout!r}: cannot read it from position {pos}")
    letters = [a for a, _ in axes]
    if len(set(letters)) != len(letters):
        raise GraphError(f"layout {layout!r}: an axis appears twice")
    for a, _ in axes:
        if a.islower() and a.upper() not in letters:
            raise GraphError(f"layout {layout!r}: sub-axis {a} without its primal axis {a.upper()}")
    return tuple(axes)


def primal_axes(layout: str) -> str:
    """The primal axes in order: ``"NCHW16c"`` -> ``"NCHW"``."""
    return "".join(a for a, f in parse_layout(layout) if f is None)


def primal_sizes(shape: tuple[int, ...], layout: str) -> dict[str, int]:
    """The size of each primal axis of an array of ``shape`` in ``layout``."""
    axes = parse_layout(layout)
    if len(shape) != len(axes):
        raise GraphError(
            f"a shape {tuple(shape)} has {len(shape)} dimensions, layout {layout!r} has {len(axes)}"
        )
    sizes = {a: int(s) for (a, f), s in zip(axes, shape, strict=True) if f is None}
    for (a, f), s in zip(axes, shape, strict=True):
        if f is not None:
            if s != f:
                raise GraphError(f"layout {layout!r}: sub-axis {a} has size {s}, the layout says {f}")
            sizes[a.upper()] *= f
    return sizes


def layout_shape(sizes: dict[str, int], layout: str) -> tuple[int, ...]:
    """The shape in ``layout`` of an array whose primal axes have ``sizes``."""
    axes = parse_layout(layout)
    if set(primal_axes(layout)) != set(sizes):
        raise GraphError(f"layout {layout!r} does not have the axes {''.join(sizes)}")
    factors = {a.upper(): f for a, f in axes if f is not None}
    shape = []
    for a, f in axes:
        if f is not None:
            shape.append(f)
            continue
        size = sizes[a]
        split = factors.get(a)
        if split is not None:
            if size % split:
                raise GraphError(
                    f"layout {layout!r}: axis {a} of size {size} does not split into blocks of {split}"
                )
            size //= split
        shape.append(size)
    return tuple(shape)


def convert_shape(shape: tuple[int, ...], src: str, dst: str) -> tuple[int, ...]:
    """The shape in ``dst`` of an array of ``shape`` in ``src``."""
    return layout_shape(primal_sizes(shape, src), dst)


def convert_array(array: np.ndarray, src: str, dst: str) -> np.ndarray:
    """``array`` (in layout ``src``) rearranged into layout ``dst`` (TVM's ``layout_transform``)."""
    if src == dst:
        return array
    s_axes, d_axes = parse_layout(src), parse_layout(dst)
    sizes = primal_sizes(array.shape, src)
    out_shape = layout_shape(sizes, dst)
    s_letters = [a for a, _ in s_axes]
    prim = primal_axes(src)
    order = []
    for p in prim:
        order.append(s_letters.index(p))
        if p.lower() in s_letters:
            order.append(s_letters.index(p.lower()))
    merged = array.transpose(order).reshape([sizes[p] for p in prim])
    d_prim = primal_axes(dst)
    merged = merged.transpose([prim.index(p) for p in d_prim])
    d_letters = [a for a, _ in d_axes]
    names, split_shape = [], []
    for p in d_prim:
        factor = dict(d_axes).get(p.lower())
        if factor is not None:
            names += [p, p.lower()]
            split_shape += [sizes[p] // factor, factor]
        else:
            names.append(p)
            split_shape.append(sizes[p])
    out = merged.reshape(split_shape).transpose([names.index(a) for a in d_letters])
    assert out.shape == out_shape
    return np.ascontiguousarray(out)
