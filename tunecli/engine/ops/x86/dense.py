"""``dense.x86``: dense layer with a packed weight and register-tiled accumulators.

Template arguments, in order: ``M`` (batch rows), ``N`` (output features), ``K`` (input
features), ``dtype`` ("float32", or "int8" which accumulates and outputs int32). Kernel
arguments: ``data [M, K]``, ``weight [N, K]``, output ``[M, N]``. Knobs: see ``x86.gemm``.
"""

from __future__ import annotations

from typing import Any

from tunecli.engine import te
from tunecli.engine.ops.nn.dense import dense_pack
from tunecli.engine.ops.x86.gemm import define_gemm_space, schedule_gemm
from tunecli.engine.schedule import create_schedule
from tunecli.engine.task.task import get_config, template


def out_dtype_for(dtype: str) -> str:
    """Accumulation/output dtype of an input dtype: int32 for 8/16-bit ints, else the same."""
    return "int32" if dtype in ("int8", "uint8", "int16") else dtype


@template("dense.x86")
def dense_x86(M: int, N: int, K: int, dtype: str = "float32") -> tuple[Any, list]:
    """Packed, register-tiled dense ``out = data @ weight.T`` (see the module docstring)."""
    data = te.placeholder((M, K), dtype=dtype, name="data")
    weight = te.placeholder((N, K), dtype=dtype, name="weight")
    cfg = get_config()
    define_gemm_space(cfg, M, N, K)
    cfg.add_flop(2 * M * N * K)
    C = dense_pack(data, weight, cfg["tile_x"].size[-1], out_dtype_for(dtype))
    s = create_schedule(C.op)
    schedule_gemm(cfg, s, C)
    return s, [data, weight, C]
