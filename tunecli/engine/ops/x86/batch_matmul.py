"""``batch_matmul.x86``: batched ``x @ y^T`` with packed ``y`` panels and register tiles.

Template arguments, in order: ``B`` (batch), ``M``, ``N``, ``K``, ``dtype`` ("float32" or
"int8" -> int32). Kernel arguments: ``x [B, M, K]``, ``y [B, N, K]``, output ``[B, M, N]``.
Knobs: see ``x86.gemm`` (the batch axis is fused into the parallel tile loop).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tunecli.engine import te
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.nn.batch_matmul import batch_matmul_pack
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.dense import out_dtype_for
from tunecli.engine.ops.x86.gemm import define_gemm_space, schedule_gemm
from tunecli.engine.schedule import Schedule


def declare_batch_matmul(B: int, M: int, N: int, K: int, dtype: str = "float32") -> OpCall:
    """``x [B, M, K]`` and ``y [B, N, K]`` placeholders; the output type of ``dtype``."""
    x = te.placeholder((B, M, K), dtype=dtype, name="x")
    y = te.placeholder((B, N, K), dtype=dtype, name="y")
    return OpCall((x, y), {"out_dtype": out_dtype_for(dtype)})


def batch_matmul_pack_compute(cfg: Any, x: te.Tensor, y: te.Tensor, out_dtype: str) -> te.Tensor:
    """``x @ y^T`` per batch through ``y`` panels as wide as ``cfg["tile_x"]``'s inner factor."""
    b, m, k = x.shape
    n = y.shape[1]
    define_gemm_space(cfg, m, n, k, batch=b)
    cfg.add_flop(2 * b * m * n * k)
    return batch_matmul_pack(x, y, cfg["tile_x"].size[-1], out_dtype)


def schedule_batch_matmul_pack(cfg: Any, outs: Sequence[te.Tensor],
                               epilogue: te.Tensor | None = None) -> Schedule:
    """The register-tiled GEMM schedule of ``x86.gemm`` with the batch in the parallel loop."""
    return schedule_gemm(cfg, outs, epilogue, batch=True)


BATCH_MATMUL_PACK = Strategy(
    op="batch_matmul", target_key="cpu", name="batch_matmul.x86", declare=declare_batch_matmul,
    compute=batch_matmul_pack_compute, schedule=schedule_batch_matmul_pack, reference=ref.batch_matmul,
    outputs=("out",))
