"""``batch_matmul.x86``: batched ``x @ y^T`` with packed ``y`` panels and register tiles.

Template arguments, in order: ``B`` (batch), ``M``, ``N``, ``K``, ``dtype`` ("float32" or
"int8" -> int32). Kernel arguments: ``x [B, M, K]``, ``y [B, N, K]``, output ``[B, M, N]``.
Knobs: see ``x86.gemm`` (the batch axis is fused into the parallel tile loop).
"""

from __future__ import annotations

from typing import Any

from tunecli.engine import te
from tunecli.engine.ops.nn.batch_matmul import batch_matmul_pack
from tunecli.engine.ops.x86.dense import out_dtype_for
from tunecli.engine.ops.x86.gemm import define_gemm_space, schedule_gemm
from tunecli.engine.schedule import create_schedule
from tunecli.engine.task.task import get_config, template


@template("batch_matmul.x86")
def batch_matmul_x86(B: int, M: int, N: int, K: int, dtype: str = "float32") -> tuple[Any, list]:
    """Packed, register-tiled batch matmul (see the module docstring)."""
    x = te.placeholder((B, M, K), dtype=dtype, name="x")
    y = te.placeholder((B, N, K), dtype=dtype, name="y")
    cfg = get_config()
    define_gemm_space(cfg, M, N, K)
    cfg.add_flop(2 * B * M * N * K)
    C = batch_matmul_pack(x, y, cfg["tile_x"].size[-1], out_dtype_for(dtype))
    s = create_schedule(C.op)
    schedule_gemm(cfg, s, C, batch=True)
    return s, [x, y, C]
