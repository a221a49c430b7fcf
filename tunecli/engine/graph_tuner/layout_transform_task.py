"""The ``layout_transform`` autotvm template: a tensor re-blocked from one data layout to another.

Arguments are TVM's: ``data, src_layout, dst_layout`` (``data`` a tensor or ``("TENSOR", shape,
dtype)``), so the workload ``("layout_transform", ("TENSOR", shape, dtype), "NCHW8c", "NCHW16c")``
is the one TVM's graph tuner logs.  The kernel arguments are ``data`` and the re-blocked output.
Layouts are ``engine.graph.layout``'s (``NCHW``, ``NCHW16c``); each primal axis may be split
once.  The schedule is the one a built graph gives its ``layout_transform`` kernels
(``engine.graph.group_schedule``: the innermost axis vectorized in runs contiguous in both
layouts, outer loops parallel when there is enough work), so the time measured is that of the
kernel the build runs.  The space has one config; its cost is what the graph tuner adds between
two convolutions whose chosen layouts differ.
"""

from __future__ import annotations

import numpy as np

from tunecli.engine import te
from tunecli.engine.graph.group_schedule import schedule_group
from tunecli.engine.graph.layout import convert_array, convert_shape, parse_layout
from tunecli.engine.ir import expr as E
from tunecli.engine.schedule import Schedule
from tunecli.engine.target import Target
from tunecli.engine.task.task import get_config, template
from tunecli.engine.task.workload_args import TaskArg, as_placeholder

TASK_NAME = "layout_transform"


def layout_transform_compute(data: te.Tensor, src_layout: str, dst_layout: str) -> te.Tensor:
    """``data`` (in ``src_layout``) as a tensor in ``dst_layout`` (TVM's ``topi.layout_transform``).

    Parameters
    ----------
    data : te.Tensor
    src_layout, dst_layout : str
        Layouts of the same primal axes, e.g. ``"NCHW8c"`` and ``"NCHW16c"``.

    Returns
    -------
    te.Tensor
    """
    shape = tuple(int(s) for s in data.shape)
    out_shape = convert_shape(shape, src_layout, dst_layout)
    src, dst = parse_layout(src_layout), parse_layout(dst_layout)
    src_factor = {a.upper(): f for a, f in src if f is not None}
    dst_factor = {a.upper(): f for a, f in dst if f is not None}
    dst_pos = {a: i for i, (a, _) in enumerate(dst)}

    def read(*out_index: E.Var) -> E.Expr:
        full = {}
        for a, f in dst:
            if f is None:
                inner = dst_factor.get(a)
                i = out_index[dst_pos[a]]
                full[a] = i * inner + out_index[dst_pos[a.lower()]] if inner else i
        index = []
        for a, f in src:
            if f is None:
                block = src_factor.get(a)
                index.append(te.indexdiv(full[a], block) if block else full[a])
            else:
                index.append(te.indexmod(full[a.upper()], f))
        return data[tuple(index)]

    return te.compute(out_shape, read, name="T_layout_trans", tag="injective,layout_transform")


def schedule_layout_transform(out: te.Tensor, src_layout: str = "", dst_layout: str = "") -> Schedule:
    """The schedule a built graph gives a ``layout_transform`` group (``group_schedule``), so the
    time measured is that of the kernel the build runs.  ``src_layout`` and ``dst_layout`` are
    TVM's arguments (the schedule reads the layouts from ``out``)."""
    return schedule_group([out], Target.current())


def _reference(data: TaskArg, src_layout: str, dst_layout: str) -> _Convert:
    """The numpy function giving the kernel's expected output."""
    return _Convert(src_layout, dst_layout)


class _Convert:
    """Picklable ``array -> array`` re-blocking (the template's numpy reference)."""

    def __init__(self, src: str, dst: str):
        self.src, self.dst = src, dst

    def __call__(self, array: np.ndarray) -> np.ndarray:
        return convert_array(array, self.src, self.dst)


@template(TASK_NAME, reference=_reference)
def layout_transform(data: TaskArg, src_layout: str,
                     dst_layout: str) -> tuple[Schedule, list[te.Tensor]]:
    """TVM's ``layout_transform`` autotvm template (one config; FLOPs counted as 1 so a record's
    GFLOPS stays finite)."""
    data = as_placeholder(data)
    cfg = get_config()
    cfg.add_flop(1)
    out = layout_transform_compute(data, src_layout, dst_layout)
    return schedule_layout_transform(out, src_layout, dst_layout), [data, out]
