"""The register-tiled GEMM schedule of ``dense.x86``.

The weight is packed into ``[ceil(N / NR), K, NR]`` panels (by a stage of the kernel, or given
packed: ``dense.x86``'s tuning kernel); the output is tiled into ``MR x NR`` blocks
whose accumulators live in a ``cache_write(C, "local")`` stage computed at the tile loop, with
the reduction outermost, MR unrolled and NR vectorized (so the accumulators are ``MR * NR / lanes``
vector registers).  Knobs (first defined varies fastest in the flat index):

``tile_y``  split of M into ``[-1, tiles per task, MR]`` (MR <= 16)
``tile_x``  split of N into ``[-1, tiles per task, NR]`` (NR a multiple of 16 up to 64 when N allows)
``tile_k``  split of K into ``[-1, kk]`` (kk <= 16, the unroll factor of the reduction)
``parallel``  0/1: run the fused outer tile loop (and the packing) on all cores; a choice only
            for a product of fewer than ``PARALLEL_MIN_MACS`` multiply-adds, where waking the
            threads may cost more than they save; a larger one has the single value 1 and runs
            its tiles in parallel whenever there are several (``parallel_choices``, ``runs_parallel``)
``unroll_k``  0/1: unroll the inner ``kk`` reduction loop

One iteration of the parallel loop (a task: ``tile_y``'s and ``tile_x``'s middle factors of tiles)
runs its row tiles over at most ``TASK_PANEL_BYTES`` of weight panels at a time (``task_panels``):
a task that spans more panels is run as several iterations, each over all of its rows, so its
panels stay in the core's L2 cache from one row tile to the next.

A ragged M (``ragged_rows``: a prime sequence length such as 197, whose divisors give one-row
tiles) splits into ``[-1, tiles, MR]`` for every ``MR`` up to 16; a ragged N (``ragged_columns``:
a vocabulary of 50257) also gets panels of ``RAGGED_PANELS``.  The product is then computed over
whole tiles (``padded``: extra rows read the last row of the data, extra panels repeat the last
weight row) and its first M x N are the result (an ``unpad`` stage): the accumulation has no
guards, only the stores of the last tiles.

A fallback config (no record) is a register tile chosen for the target's vector width: as many
independent accumulator vectors as fit the registers (``fallback_register_tile``), panels a whole
number of vectors wide where ``N`` allows, one tile per parallel task over all the panels, and the
reduction unrolled by up to 16.  For one row (a GEMV, memory bound) this streams each packed
panel once with several accumulators per ``k``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from tunecli.engine import te
from tunecli.engine.ir.dtype import parse_dtype
from tunecli.engine.ops.epilogue import create_group_schedule, inline_between, output_and_accumulator
from tunecli.engine.ops.nn.dense import UNPAD_TAG
from tunecli.engine.ops.x86.conv2d_nchwc import fallback_register_tile, fp32_lanes
from tunecli.engine.schedule import Schedule
from tunecli.engine.target import Target
from tunecli.engine.task.factors import get_factors
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.space_entities import OtherOptionEntity, SplitEntity

PANEL_LANES = 16
MAX_PANEL = 64
MAX_MR = 16
MAX_KK = 16
#: M is ragged when it is above ``MAX_MR`` and no divisor reaches this many rows (a prime sequence
#: length such as 197): its splits may then leave a tail of rows.
MIN_RAGGED_ROWS = 4
#: N is ragged when no divisor up to the widest panel is a whole number of this many lanes (one
#: AVX2 vector of float32; e.g. a vocabulary of 50257): its panels may then be wider than the tail.
RAGGED_LANES = 8
#: Panel widths a ragged N is also offered (the last panel is padded).
RAGGED_PANELS = (8, 16, 32, 48, 64)
#: Tiles per task of a ragged split's candidates.
RAGGED_TASK_TILES = (1, 2, 4, 8)
#: Most bytes of weight panels one iteration of the parallel loop runs its rows over (half of a
#: 1 MiB L2 cache): a config whose task spans more panels runs them as several iterations, each
#: over all of the task's rows, so that its panels stay in the core's L2 from one row tile to the next
#: instead of streaming from the shared cache (or memory) once per row tile.
TASK_PANEL_BYTES = 512 * 1024
#: Fewest multiply-adds (``M * N * K``) for which a product always runs its tiles in parallel
#: (below, a fallback config runs serial and a tuned one as its ``parallel`` knob says).
PARALLEL_MIN_MACS = 1 << 18


def panel_filter(n: int) -> Callable[[SplitEntity], bool]:
    """Filter for the innermost ``tile_x`` factor: vector-friendly panel widths for ``n``."""
    aligned = any(n % w == 0 for w in range(PANEL_LANES, MAX_PANEL + 1, PANEL_LANES))
    if aligned:
        return lambda e: e.size[-1] % PANEL_LANES == 0 and e.size[-1] <= MAX_PANEL
    return lambda e: e.size[-1] <= MAX_PANEL


def define_gemm_space(cfg: ConfigSpace, m: int, n: int, k: int) -> None:
    """Define the knobs of the packed GEMM schedule on ``cfg`` (see the module docstring); a
    fallback config gets ``fallback_gemm_tile``'s register tile."""
    panel_ok = panel_filter(n)
    row_ok = lambda e: e.size[-1] <= MAX_MR  # noqa: E731
    if ragged_rows(m):
        cfg.define_split("tile_y", m, policy="candidate", num_outputs=3,
                         candidate=ragged_candidates(m, tile_rows(m)), filter=row_ok)
    else:
        cfg.define_split("tile_y", m, num_outputs=3, filter=row_ok)
    if ragged_columns(n, MAX_PANEL):
        cfg.define_split("tile_x", n, policy="candidate", num_outputs=3,
                         candidate=ragged_candidates(n, panel_widths(n, MAX_PANEL)), filter=panel_ok)
    else:
        cfg.define_split("tile_x", n, num_outputs=3, filter=panel_ok)
    cfg.define_split("tile_k", k, num_outputs=2, filter=lambda e: e.size[-1] <= MAX_KK)
    cfg.define_knob("parallel", parallel_choices(m, n, k))
    cfg.define_knob("unroll_k", [0, 1])
    if cfg.is_fallback:
        panels = [w for w in panel_widths(n, MAX_PANEL) if panel_ok(SplitEntity([-1, 1, w]))]
        # two registers stay free for the loaded panel vector and the broadcast row value
        mr, nr = fallback_gemm_tile(m, panels, fp32_lanes(), fallback_register_tile() - 2,
                                    vector_register_count())
        kk = max(f for f in get_factors(k) if f <= MAX_KK)
        cfg["tile_y"] = SplitEntity([-(-m // mr), 1, mr])
        cfg["tile_x"] = SplitEntity([-(-n // nr), 1, nr])
        cfg["tile_k"] = SplitEntity([k // kk, kk])
        cfg["parallel"] = OtherOptionEntity(parallel_choices(m, n, k)[0])  # serial when small
        cfg["unroll_k"] = OtherOptionEntity(1)


def padded(extent: int, split: SplitEntity) -> int:
    """``extent`` rounded up to a whole number of ``split``'s inner tiles (the product of its
    inner factors): what a product is computed over so that no tile of it is partial."""
    return padded_extent(extent, math.prod(split.size[1:]))


def padded_extent(extent: int, step: int) -> int:
    """``extent`` rounded up to a multiple of ``step``."""
    return -(-extent // step) * step


def ragged_rows(m: int) -> bool:
    """Whether ``m`` rows have no divisor from ``MIN_RAGGED_ROWS`` to ``MAX_MR`` (and are more than
    ``MAX_MR``): their register tiles may then leave a guarded tail of rows."""
    return m > MAX_MR and not any(MIN_RAGGED_ROWS <= f <= MAX_MR for f in get_factors(m))


def ragged_columns(n: int, widest: int) -> bool:
    """Whether no divisor of ``n`` up to ``widest`` is a whole number of ``RAGGED_LANES`` (and ``n``
    is wider): its panels may then be padded past ``n``."""
    return n > widest and not any(f % RAGGED_LANES == 0 for f in get_factors(n) if f <= widest)


def tile_rows(m: int) -> list[int]:
    """Register-tile row counts for ``m`` rows: its divisors up to ``MAX_MR``, or every count up
    to ``MAX_MR`` when ``m`` is ``ragged_rows``."""
    if ragged_rows(m):
        return list(range(1, MAX_MR + 1))
    return [f for f in get_factors(m) if f <= MAX_MR]


def panel_widths(n: int, widest: int) -> list[int]:
    """Panel widths for ``n`` columns: its divisors up to ``widest``, and the ``RAGGED_PANELS`` up
    to ``widest`` when ``n`` is ``ragged_columns``."""
    widths = [f for f in get_factors(n) if f <= widest]
    if ragged_columns(n, widest):
        widths += [w for w in RAGGED_PANELS if w <= widest and w not in widths]
    return widths


def ragged_candidates(extent: int, inner: Sequence[int]) -> list[list[int]]:
    """The three-way splits ``[-1, tiles, inner]`` of a ragged axis (``RAGGED_TASK_TILES`` tiles of
    each inner factor, within ``extent``)."""
    return [[-1, t, i] for i in sorted(inner) for t in RAGGED_TASK_TILES if t * i <= extent]


def fallback_gemm_tile(m: int, panels: Sequence[int], lanes: int, registers: int,
                       vector_registers: int | None = None) -> tuple[int, int]:
    """The register tile ``(MR, NR)`` of a fallback config.

    Parameters
    ----------
    m : int
        Rows of the output; ``MR`` is one of its ``tile_rows`` (a divisor at most ``MAX_MR``, any
        count when ``m`` is ``ragged_rows``).
    panels : sequence of int
        The legal panel widths ``NR`` (``panel_widths``).
    lanes : int
        Accumulator lanes per vector register.
    registers : int
        Most accumulator vectors (``MR * ceil(NR / lanes)``) the tile may hold.
    vector_registers : int, optional
        The target's vector registers (default ``registers + 3``): a tile of several rows also
        holds its panel's vectors, loaded once per step of the reduction for all its rows, and
        a broadcast row value; a tile that needs more spills.

    Returns
    -------
    tuple of int
        Preferring panels a whole number of vectors wide, then tiles that fit (``registers`` and
        ``vector_registers``), among them the fewest loads and broadcasts per multiply-add (else
        the fewest accumulators), then wider panels.
    """
    total = registers + 3 if vector_registers is None else vector_registers

    def score(tile: tuple[int, int]) -> tuple[bool, bool, float, int]:
        mr, nr = tile
        vectors = -(-nr // lanes)
        acc = mr * vectors
        fits = acc <= registers and acc + (vectors if mr > 1 else 1) + 1 <= total
        return (nr % lanes == 0, fits, -(mr + vectors) / acc if fits else -acc, nr)

    return max(((mr, nr) for mr in tile_rows(m) for nr in panels), key=score)


def vector_register_count() -> int:
    """Vector registers of the current target: 32 with AVX-512, else 16."""
    target = Target.current() or Target("llvm")
    return 32 if target.vector_bits >= 512 else 16


def panel_output_and_accumulator(s: Schedule, outs: Sequence[te.Tensor],
                                 epilogue: te.Tensor | None) -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    """``(output, accumulator, product)`` of a GEMM group (``epilogue.output_and_accumulator``).

    A product computed over padded rows or panels (its result a ``UNPAD_TAG`` stage) is itself
    the accumulator, computed per tile of the output (the unpadding and any epilogue inlined):
    its tiles stay within the padded extents, so only the output's stores of the last tiles are
    guarded, not the accumulation.
    """
    (out,) = outs
    if UNPAD_TAG not in out.op.tag:
        return (*output_and_accumulator(s, out, epilogue), out)
    (product,) = out.op.input_tensors
    if epilogue is not None:
        inline_between(s, outs, epilogue)
        s[out].compute_inline()
    s[product].set_scope("local")
    return (out if epilogue is None else epilogue), product, product


def parallel_choices(m: int, n: int, k: int) -> list[int]:
    """The values of the ``parallel`` knob of an ``m x n x k`` product: ``[0, 1]`` below
    ``PARALLEL_MIN_MACS`` multiply-adds, else ``[1]``.

    A large product's tiles always gain from more cores, so serial is no choice there; and at one
    thread a parallel loop runs whole on its caller, so a tune at one thread would measure both
    values alike and pick either at random for a deployment on more.
    """
    return [0, 1] if m * n * k < PARALLEL_MIN_MACS else [1]


def runs_parallel(cfg: ConfigSpace, m: int, n: int, k: int) -> bool:
    """Whether the fused outer tile loop of an ``m x n x k`` product runs on all cores: when it has
    more than one tile and the ``parallel`` knob says so (read only where ``parallel_choices``
    offers a choice: a record of a large product with 0, from a space that offered it, runs in
    parallel too)."""
    tiles = -(-m // math.prod(cfg["tile_y"].size[1:])) * -(-n // math.prod(cfg["tile_x"].size[1:]))
    choices = parallel_choices(m, n, k)
    return tiles > 1 and bool(cfg["parallel"].val if len(choices) > 1 else choices[0])


def task_panels(panels: int, panel_bytes: int) -> int:
    """Weight panels one iteration of the parallel loop computes: ``panels`` (``tile_x``'s middle
    factor), or its largest divisor whose panels of ``panel_bytes`` fit in ``TASK_PANEL_BYTES``
    (at least one)."""
    return max(f for f in get_factors(panels) if f == 1 or f * panel_bytes <= TASK_PANEL_BYTES)


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
    s = create_group_schedule(outs, epilogue)
    O, CC, C = panel_output_and_accumulator(s, outs, epilogue)
    packing = [t for t in C.op.input_tensors if "layout_transform" in getattr(t.op, "tag", "")]
    y, x = s[O].op.axis
    (kaxis,) = s[CC].op.reduce_axis
    parallel = runs_parallel(cfg, int(y.dom.extent), int(x.dom.extent), int(kaxis.dom.extent))
    yt, yo, yi = cfg["tile_y"].apply(s, O, y)
    xt, xo, xi = cfg["tile_x"].apply(s, O, x)
    element_bits = parse_dtype(C.op.input_tensors[0].dtype).bits
    panel_bits = cfg["tile_x"].size[-1] * int(kaxis.dom.extent) * element_bits
    per_task = task_panels(cfg["tile_x"].size[1], panel_bits // 8)
    if per_task < cfg["tile_x"].size[1]:  # the task's panels in fewer at a time, each for all its rows
        xg, xo = s[O].split(xo, factor=per_task)
        s[O].reorder(xt, xg, yt, yo, xo, yi, xi)
        outer = s[O].fuse(xt, xg, yt)
    else:
        s[O].reorder(xt, yt, yo, xo, yi, xi)
        outer = s[O].fuse(xt, yt)
    if parallel:
        s[O].parallel(outer)
    tile = s[O].fuse(yo, xo)
    s[O].unroll(yi)
    s[O].vectorize(xi)

    s[CC].compute_at(s[O], tile)
    cy, cx = s[CC].op.axis
    ko, ki = cfg["tile_k"].apply(s, CC, kaxis)
    s[CC].reorder(ko, ki, cy, cx)
    if cfg["unroll_k"].val:
        s[CC].unroll(ki)
    s[CC].unroll(cy)
    s[CC].vectorize(cx)

    for packed in packing:  # none when the kernel takes the weight packed
        pouter, _, pinner = s[packed].op.axis
        if parallel:
            s[packed].parallel(pouter)
        s[packed].vectorize(pinner)  # contiguous panel stores, strided (gathered) weight loads
    return s
