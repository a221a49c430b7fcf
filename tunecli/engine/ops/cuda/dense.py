"""``dense_small_batch.gpu``: TVM's dense template for small batches on GPUs (``topi/gpu/dense.py``).

One knob, as TVM's: ``tile_k``, a 2-way split of the reduction (K) whose inner part ``kf`` is
the number of threads of a block.  Each block computes one output element: the reduction is
factored over ``kf`` (``rfactor``); thread ``t`` sums ``data[i, k] * weight[j, k]`` over the
``k = ko * kf + t`` in a register and stores the sum into a ``shared`` array of ``kf`` partial
sums; after a barrier the block's threads add the partial sums up in a register (TVM reduces
them with a cross-thread all-reduce instead; here each thread writes the same value).  The grid
is ``N x M`` blocks (``blockIdx.x`` over the output features, ``blockIdx.y`` over the batch).
Without a tuned record ``tile_k`` is TVM's fallback, ``[-1, 64]`` (``[1, K]`` when K <= 64).

Template arguments are TVM's workload: ``data, weight, bias, out_dtype`` with ``data [M, K]``,
``weight [N, K]`` and ``bias`` None (a graph fuses the bias as an epilogue).
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import baseline
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.epilogue import create_group_schedule, output_and_accumulator
from tunecli.engine.ops.nn.dense import dense
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace, SplitEntity
from tunecli.engine.task.workload_args import TaskArg, as_placeholder
from tunecli.errors import InstantiationError


def dense_operands(template: str, data: TaskArg, weight: TaskArg,
                   bias: TaskArg) -> tuple[te.Tensor, te.Tensor]:
    """The operands of TVM's GPU dense workloads, checked: ``data [M, K]``, ``weight [N, K]`` and
    no bias (a bias is an epilogue)."""
    if bias is not None:
        raise InstantiationError(f"{template}: give the bias as an epilogue, not in the workload (TVM's "
                                 "workloads have bias None)")
    data, weight = as_placeholder(data, "data"), as_placeholder(weight, "weight")
    if len(data.shape) != 2 or len(weight.shape) != 2 or data.shape[1] != weight.shape[1]:
        raise InstantiationError(f"{template}: data [M, K] and weight [N, K] expected, got "
                                 f"{tuple(data.shape)} and {tuple(weight.shape)}")
    return data, weight


def declare_dense_gpu(data: TaskArg, weight: TaskArg, bias: TaskArg = None,
                      out_dtype: str = "float32") -> OpCall:
    """TVM's dense workload: ``data [M, K]``, ``weight [N, K]``, no bias."""
    data, weight = dense_operands("dense_small_batch.gpu", data, weight, bias)
    return OpCall((data, weight), {"out_dtype": out_dtype or data.dtype})


def dense_small_batch_compute(cfg: ConfigSpace, data: te.Tensor, weight: te.Tensor,
                              out_dtype: str) -> te.Tensor:
    """``nn.dense`` with TVM's ``tile_k`` knob."""
    (m, k), n = (int(d) for d in data.shape), int(weight.shape[0])
    cfg.define_split("tile_k", cfg.axis(k), num_outputs=2)
    if cfg.is_fallback:
        cfg["tile_k"] = SplitEntity([-1, 64] if k > 64 else [1, k])
    cfg.add_flop(2 * m * n * k)
    return dense(data, weight, out_dtype=out_dtype)


def schedule_dense_small_batch(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                               epilogue: te.Tensor | None = None) -> Schedule:
    """The module docstring's schedule."""
    (C,) = outs
    s = create_group_schedule(outs, epilogue)
    _, kf = cfg["tile_k"].apply(s, C, C.op.reduce_axis[0])
    CF = s.rfactor(C, kf)
    s[CF].set_scope("shared")
    CFL = s.cache_write(CF, "local")
    out, acc = output_and_accumulator(s, C, epilogue)
    i, j = s[out].op.axis
    s[out].bind(i, te.thread_axis("blockIdx.y"))
    s[out].bind(j, te.thread_axis("blockIdx.x"))
    s[acc].compute_at(s[out], j)
    s[CF].compute_at(s[out], j)
    tx = s[CF].op.axis[0]
    s[CF].bind(tx, te.thread_axis("threadIdx.x"))
    s[CFL].compute_at(s[CF], tx)
    return s


DENSE_SMALL_BATCH_GPU = Strategy(
    op="dense", target_key="gpu", name="dense_small_batch.gpu", declare=declare_dense_gpu,
    compute=dense_small_batch_compute, schedule=schedule_dense_small_batch, reference=ref.dense_python,
    outputs=("out",), summary="TVM's small-batch GPU dense (knobs and arguments as in TVM's cuda logs)",
    baseline=baseline.DENSE)
