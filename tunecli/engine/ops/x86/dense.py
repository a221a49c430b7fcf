"""``dense.x86``: dense layer with a packed weight and register-tiled accumulators.

Template arguments, in order: ``M`` (batch rows), ``N`` (output features), ``K`` (input
features), ``dtype`` ("float32", or "int8" which accumulates and outputs int32). Knobs: see
``x86.gemm``.

The kernel a task measures takes the weight already packed in the config's panels: arguments
``data [M, K]``, ``packed_weight [N / NR, K, NR]`` (``NR``: ``tile_x``'s inner factor; for a
ragged N, ``gemm.padded`` panels: the last ones padded), output ``[M, N]`` (the strategy's
``pack`` hook, as ``conv2d_NCHWc.x86`` takes its kernel blocked).  A graph computes the same
row on its ``weight [N, K]``: the packing is then a stage of the kernel that ``relay.build``
evaluates once at build time when the weight is a constant (``graph.constant_stages``), so a
record's cost is the time of the kernel the network runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine import te
from tunecli.engine.ops import baseline
from tunecli.engine.ops import reference as ref
from tunecli.engine.ops.nn.dense import dense_pack, dense_packed
from tunecli.engine.ops.strategy import OpCall, Strategy
from tunecli.engine.ops.x86.gemm import define_gemm_space, padded, schedule_gemm
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.space import ConfigSpace
from tunecli.errors import InstantiationError


def out_dtype_for(dtype: str) -> str:
    """Accumulation/output dtype of an input dtype: int32 for 8/16-bit ints, else the same."""
    return "int32" if dtype in ("int8", "uint8", "int16") else dtype


def declare_dense(M: int, N: int, K: int, dtype: str = "float32") -> OpCall:
    """``data [M, K]`` and ``weight [N, K]`` placeholders; the output type of ``dtype``."""
    data = te.placeholder((M, K), dtype=dtype, name="data")
    weight = te.placeholder((N, K), dtype=dtype, name="weight")
    return OpCall((data, weight), {"out_dtype": out_dtype_for(dtype), "units": N})


def pack_dense_weight(cfg: ConfigSpace, call: OpCall) -> OpCall:
    """The kernel's inputs: ``data`` and the ``packed_weight [N / NR, K, NR]`` placeholder."""
    data, weight = call.inputs
    (m, k), n = data.shape, weight.shape[0]
    define_gemm_space(cfg, m, n, k)
    nr = cfg["tile_x"].size[-1]
    packed = te.placeholder((padded(n, cfg["tile_x"]) // nr, k, nr), dtype=weight.dtype, name="packed_weight")
    return OpCall((data, packed), call.attrs)


def dense_pack_compute(cfg: ConfigSpace, data: te.Tensor, weight: te.Tensor, out_dtype: str,
                       units: int | None = None) -> te.Tensor:
    """``data @ weight.T`` through weight panels as wide as ``cfg["tile_x"]``'s inner factor; a
    ``[N, K]`` weight is packed by a stage, a 3-D one is taken as those panels (``units``: N,
    when the last panel is padded)."""
    m, k = data.shape
    packed = len(weight.shape) == 3
    n = weight.shape[0] if not packed else units or weight.shape[0] * weight.shape[2]
    define_gemm_space(cfg, m, n, k)
    cfg.add_flop(2 * m * n * k)
    nr = cfg["tile_x"].size[-1]
    rows, panels = padded(m, cfg["tile_y"]), padded(n, cfg["tile_x"]) // nr
    if not packed:
        return dense_pack(data, weight, nr, out_dtype, rows=rows, panels=panels)
    if weight.shape[2] != nr or weight.shape[0] != panels:
        raise InstantiationError(f"dense.x86: the weight is packed in {weight.shape[0]} panels of "
                                 f"{weight.shape[2]}, the config's are {panels} of {nr}")
    return dense_packed(data, weight, out_dtype, units=n, rows=rows)


def schedule_dense_pack(cfg: ConfigSpace, outs: Sequence[te.Tensor],
                        epilogue: te.Tensor | None = None) -> Schedule:
    """The register-tiled GEMM schedule of ``x86.gemm``."""
    return schedule_gemm(cfg, outs, epilogue)


DENSE_PACK = Strategy(
    op="dense", target_key="cpu", name="dense.x86", declare=declare_dense, compute=dense_pack_compute,
    schedule=schedule_dense_pack, reference=ref.dense_packed_python, outputs=("out",), pack=pack_dense_weight,
    summary="`out[M, N] = data[M, K] · weight[N, K]ᵀ`; the kernel takes the weight packed `[N/NR, K, NR]`",
    baseline=baseline.DENSE_PACKED)
