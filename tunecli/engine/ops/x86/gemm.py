"""The register-tiled GEMM schedule of ``dense.x86``.

The weight is packed into ``[N / NR, K, NR]`` panels (by a stage of the kernel, or given packed:
``dense.x86``'s tuning kernel); the output is tiled into ``MR x NR`` blocks
whose accumulators live in a ``cache_write(C, "local")`` stage computed at the tile loop, with
the reduction outermost, MR unrolled and NR vectorized (so the accumulators are ``MR * NR / lanes``
vector registers).  Knobs (first defined varies fastest in the flat index):

``tile_y``  split of M into ``[-1, tiles per task, MR]`` (MR <= 16)
``tile_x``  split of N into ``[-1, tiles per task, NR]`` (NR a multiple of 16 up to 64 when N allows)
``tile_k``  split of K into ``[-1, kk]`` (kk <= 16, the unroll factor of the reduction)
``parallel``  0/1: run the fused outer tile loop (and the packing) on all cores
``unroll_k``  0/1: unroll the inner ``kk`` reduction loop

A fallback config (no record) is a register tile chosen for the target's vector width: as many
independent accumulator vectors as fit the registers (``fallback_register_tile``), panels a whole
number of vectors wide where ``N`` allows, one tile per parallel task over all the panels, and the
reduction unrolled by up to 16.  For one row (a GEMV, memory bound) this streams each packed
panel once with several accumulators per ``k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tunecli.engine import te
from tunecli.engine.ops.epilogue import create_group_schedule, output_and_accumulator
from tunecli.engine.ops.x86.conv2d_nchwc import fallback_register_tile, fp32_lanes
from tunecli.engine.schedule import Schedule
from tunecli.engine.task.factors import get_factors
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.space_entities import OtherOptionEntity, SplitEntity

PANEL_LANES = 16
MAX_PANEL = 64
MAX_MR = 16
MAX_KK = 16
#: Fewest multiply-adds (``M * N * K``) for which a fallback config runs in parallel.
PARALLEL_MIN_MACS = 1 << 18


def panel_filter(n: int) -> Any:
    """Filter for the innermost ``tile_x`` factor: vector-friendly panel widths for ``n``."""
    aligned = any(n % w == 0 for w in range(PANEL_LANES, MAX_PANEL + 1, PANEL_LANES))
    if aligned:
        return lambda e: e.size[-1] % PANEL_LANES == 0 and e.size[-1] <= MAX_PANEL
    return lambda e: e.size[-1] <= MAX_PANEL


def define_gemm_space(cfg: ConfigSpace, m: int, n: int, k: int) -> None:
    """Define the knobs of the packed GEMM schedule on ``cfg`` (see the module docstring); a
    fallback config gets ``fallback_gemm_tile``'s register tile."""
    panel_ok = panel_filter(n)
    cfg.define_split("tile_y", m, num_outputs=3, filter=lambda e: e.size[-1] <= MAX_MR)
    cfg.define_split("tile_x", n, num_outputs=3, filter=panel_ok)
    cfg.define_split("tile_k", k, num_outputs=2, filter=lambda e: e.size[-1] <= MAX_KK)
    cfg.define_knob("parallel", [0, 1])
    cfg.define_knob("unroll_k", [0, 1])
    if cfg.is_fallback:
        panels = [w for w in get_factors(n) if panel_ok(SplitEntity([n // w, 1, w]))]
        # two registers stay free for the loaded panel vector and the broadcast row value
        mr, nr = fallback_gemm_tile(m, panels, fp32_lanes(), fallback_register_tile() - 2)
        kk = max(f for f in get_factors(k) if f <= MAX_KK)
        cfg["tile_y"] = SplitEntity([m // mr, 1, mr])
        cfg["tile_x"] = SplitEntity([n // nr, 1, nr])
        cfg["tile_k"] = SplitEntity([k // kk, kk])
        tiles = (m // mr) * (n // nr)
        cfg["parallel"] = OtherOptionEntity(int(tiles > 1 and m * n * k >= PARALLEL_MIN_MACS))
        cfg["unroll_k"] = OtherOptionEntity(1)


def fallback_gemm_tile(m: int, panels: Sequence[int], lanes: int, registers: int) -> tuple[int, int]:
    """The register tile ``(MR, NR)`` of a fallback config.

    Parameters
    ----------
    m : int
        Rows of the output; ``MR`` divides it (at most ``MAX_MR``).
    panels : sequence of int
        The legal panel widths ``NR`` (divisors of N).
    lanes : int
        Accumulator lanes per vector register.
    registers : int
        Most accumulator vectors (``MR * ceil(NR / lanes)``) the tile may hold.

    Returns
    -------
    tuple of int
        Preferring panels a whole number of vectors wide, then the most accumulators within
        ``registers`` (else the fewest), then the fewest loads and broadcasts per multiply-add,
        then wider panels.
    """
    def score(tile: tuple[int, int]) -> tuple:
        mr, nr = tile
        vectors = -(-nr // lanes)
        acc = mr * vectors
        return (nr % lanes == 0, acc if acc <= registers else -acc, -(mr + vectors) / acc, nr)

    rows = [f for f in get_factors(m) if f <= MAX_MR]
    return max(((mr, nr) for mr in rows for nr in panels), key=score)


def schedule_gemm(cfg: ConfigSpace, outs: Sequence[te.Tensor], epilogue: te.Tensor | None = None) -> Schedule:
    """Schedule ``C[y, x] = sum_k A[y, k] * packed[x // NR, k, x % NR]``.

    Parameters
    ----------
    cfg : ConfigSpace
        Holds the knobs of ``define_gemm_space``.
    outs : sequence of te.Tensor
        ``[C]``, the GEMM output; it reads the panels from a packing stage or, when the kernel
        takes them packed, from a placeholder.
    epilogue : te.Tensor, optional
        An injective stage reading ``C`` (bias, relu): it is tiled as ``C`` would be and ``C``
        becomes its register accumulator.

    Returns
    -------
    Schedule
    """
    (C,) = outs
    s = create_group_schedule(outs, epilogue)
    packing = [t for t in C.op.input_tensors if "layout_transform" in getattr(t.op, "tag", "")]
    O, CC = output_and_accumulator(s, C, epilogue)
    y, x = s[O].op.axis
    yt, yo, yi = cfg["tile_y"].apply(s, O, y)
    xt, xo, xi = cfg["tile_x"].apply(s, O, x)
    s[O].reorder(xt, yt, yo, xo, yi, xi)
    outer = s[O].fuse(xt, yt)
    if cfg["parallel"].val:
        s[O].parallel(outer)
    tile = s[O].fuse(yo, xo)
    s[O].unroll(yi)
    s[O].vectorize(xi)

    s[CC].compute_at(s[O], tile)
    cy, cx = s[CC].op.axis
    (kaxis,) = s[CC].op.reduce_axis
    ko, ki = cfg["tile_k"].apply(s, CC, kaxis)
    s[CC].reorder(ko, ki, cy, cx)
    if cfg["unroll_k"].val:
        s[CC].unroll(ki)
    s[CC].unroll(cy)
    s[CC].vectorize(cx)

    for packed in packing:  # none when the kernel takes the weight packed
        pouter, _, pinner = s[packed].op.axis
        if cfg["parallel"].val:
            s[packed].parallel(pouter)
        s[packed].vectorize(pinner)  # contiguous panel stores, strided (gathered) weight loads
    return s
