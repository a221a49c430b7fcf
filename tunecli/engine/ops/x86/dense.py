"""``dense.x86``: dense layer with a packed weight and register-tiled accumulators.

Template arguments, in order: ``M`` (batch rows), ``N`` (output features), ``K`` (input
features), ``dtype`` ("float32", or "int8" which accumulates and outputs int32). Kernel
arguments: ``data [M, K]``, ``weight [N, K]``, output ``[M, N]``. Knobs: see ``x86.gemm``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tunecli.engine import te
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.nn.dense import dense_pack
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.gemm import define_gemm_space, schedule_gemm
from tunecli.engine.schedule import Schedule


def out_dtype_for(dtype: str) -> str:
    """Accumulation/output dtype of an input dtype: int32 for 8/16-bit ints, else the same."""
    return "int32" if dtype in ("int8", "uint8", "int16") else dtype


def declare_dense(M: int, N: int, K: int, dtype: str = "float32") -> OpCall:
    """``data [M, K]`` and ``weight [N, K]`` placeholders; the output type of ``dtype``."""
    data = te.placeholder((M, K), dtype=dtype, name="data")
    weight = te.placeholder((N, K), dtype=dtype, name="weight")
    return OpCall((data, weight), {"out_dtype": out_dtype_for(dtype)})


def dense_pack_compute(cfg: Any, data: te.Tensor, weight: te.Tensor, out_dtype: str) -> te.Tensor:
    """``data @ weight.T`` through weight panels as wide as ``cfg["tile_x"]``'s inner factor."""
    (m, k), n = data.shape, weight.shape[0]
    define_gemm_space(cfg, m, n, k)
    cfg.add_flop(2 * m * n * k)
    return dense_pack(data, weight, cfg["tile_x"].size[-1], out_dtype)


def schedule_dense_pack(cfg: Any, outs: Sequence[te.Tensor], epilogue: te.Tensor | None = None) -> Schedule:
    """The register-tiled GEMM schedule of ``x86.gemm``."""
    return schedule_gemm(cfg, outs, epilogue)


DENSE_PACK = Strategy(
    op="dense", target_key="cpu", name="dense.x86", declare=declare_dense, compute=dense_pack_compute,
    schedule=schedule_dense_pack, reference=ref.dense_python, outputs=("out",),
    summary="`out[M, N] = data[M, K] · weight[N, K]ᵀ`")
