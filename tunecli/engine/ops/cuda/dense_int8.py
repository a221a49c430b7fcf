"""``dense_int8.cuda``: TVM's GPU dense of int8 data and weights accumulating in int32.

TVM's knobs in TVM's order, so a record of TVM's logs decodes to the same config: ``tile_y`` and
``tile_x`` split the batch and the output features four ways (block, virtual thread, thread,
inner), ``tile_k`` splits the reduction counted in units of ``unit`` elements (16 when K is a
multiple of 16, else 4; K must be a multiple of 4) into outer steps and the steps one shared tile
holds, and ``auto_unroll_max_step`` unrolls the kernel.  Each thread accumulates its outputs in
registers; per outer step the block's threads load the data and weight tiles into shared memory
together (``threadIdx.x`` then ``threadIdx.y``), and each thread reads its operands from there.
TVM multiplies four int8 pairs at once with ``dp4a``; here each pair is widened to int32 and
multiplied, with the same result.

Template arguments are TVM's workload: ``data, weight, bias, out_dtype`` with ``data [M, K]``,
``weight [N, K]`` int8, ``bias`` None (a graph fuses the bias as an epilogue) and ``out_dtype``
int32.
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.cuda.dense import dense_operands
from tunecli.engine.ops.epilogue import create_group_schedule, output_and_accumulator
from tunecli.engine.ops.nn.dense import dense
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.workload_args import TaskArg
from tunecli.errors import InstantiationError

NAME = "dense_int8.cuda"


def reduction_unit(k: int) -> int:
    """Elements of K per ``tile_k`` step: 16 when K allows, else 4."""
    return 16 if k % 16 == 0 else 4


def declare_dense_int8(data: TaskArg, weight: TaskArg, bias: TaskArg = None,
                       out_dtype: str = "int32") -> OpCall:
    """TVM's dense workload of int8 operands: ``data [M, K]``, ``weight [N, K]``, K a multiple of 4."""
    data, weight = dense_operands(NAME, data, weight, bias)
    if (data.dtype, weight.dtype) != ("int8", "int8") or (out_dtype or "int32") != "int32":
        raise InstantiationError(f"{NAME}: int8 data and weight with an int32 output expected, got "
                                 f"{data.dtype}, {weight.dtype} -> {out_dtype}")
    if int(data.shape[1]) % 4:
        raise InstantiationError(f"{NAME}: K = {int(data.shape[1])} is not a multiple of 4")
    return OpCall((data, weight), {"out_dtype": "int32"})


def dense_int8_compute(cfg: ConfigSpace, data: te.Tensor, weight: te.Tensor,
                       out_dtype: str = "int32") -> te.Tensor:
    """``nn.dense`` accumulating in int32, with TVM's knobs."""
    (m, k), n = (int(d) for d in data.shape), int(weight.shape[0])
    cfg.define_split("tile_y", cfg.axis(m), num_outputs=4)
    cfg.define_split("tile_x", cfg.axis(n), num_outputs=4)
    cfg.define_split("tile_k", cfg.axis(k // reduction_unit(k)), num_outputs=2)
    cfg.define_knob("auto_unroll_max_step", [0, 512, 1500])
    cfg.add_flop(2 * m * n * k)
    return dense(data, weight, out_dtype=out_dtype)


def schedule_dense_int8(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                        epilogue: te.Tensor | None = None) -> Schedule:
    """The module docstring's schedule."""
    (product,) = outs
    s = create_group_schedule(outs, epilogue)
    data, weight = product.op.input_tensors
    unit = reduction_unit(int(data.shape[1]))
    output, acc = output_and_accumulator(s, product, epilogue)
    tiles = [s.cache_read(t, "shared", [acc]) for t in (data, weight)]

    rows, cols = s[output].op.axis
    kernel_scope, rows = s[output].split(rows, nparts=1)
    by, vy, ty, yi = cfg["tile_y"].apply(s, output, rows)
    bx, vx, tx, xi = cfg["tile_x"].apply(s, output, cols)
    s[output].reorder(by, bx, vy, vx, ty, tx, yi, xi)
    for axis, tag in ((by, "blockIdx.y"), (bx, "blockIdx.x"), (vy, "vthread"), (vx, "vthread"),
                      (ty, "threadIdx.y"), (tx, "threadIdx.x")):
        s[output].bind(axis, te.thread_axis(tag))
    s[acc].compute_at(s[output], tx)

    steps, within = s[acc].split(s[acc].op.reduce_axis[0], factor=unit)
    outer, inner = cfg["tile_k"].apply(s, acc, steps)
    s[acc].reorder(outer, inner, *s[acc].op.axis, within)
    threads_x, threads_y = cfg["tile_x"].size[2], cfg["tile_y"].size[2]
    for tile in tiles:
        s[tile].compute_at(s[acc], outer)
        flat = s[tile].fuse(*s[tile].op.axis)
        flat, lane_x = s[tile].split(flat, factor=threads_x)
        _, lane_y = s[tile].split(flat, factor=threads_y)
        s[tile].bind(lane_x, te.thread_axis("threadIdx.x"))
        s[tile].bind(lane_y, te.thread_axis("threadIdx.y"))

    s[output].pragma(kernel_scope, "auto_unroll_max_step", cfg["auto_unroll_max_step"].val)
    s[output].pragma(kernel_scope, "unroll_explicit", False)
    return s


DENSE_INT8_CUDA = Strategy(
    op="dense_int8", target_key="cuda", name=NAME, declare=declare_dense_int8, compute=dense_int8_compute,
    schedule=schedule_dense_int8, reference=ref.dense_python, outputs=("out",),
    summary="TVM's int8 GPU dense, int32 accumulation (knobs and arguments as in TVM's cuda logs)")
