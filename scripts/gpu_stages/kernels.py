"""Building a GPU kernel, checking it up to the launch (dry run) and running it on the GPU."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import tunecli as tvm
from tunecli.engine import lower as lowering
from tunecli.engine.build import build
from tunecli.engine.codegen.nvptx_backend import ptxas_path
from tunecli.engine.ir import Allocate
from tunecli.engine.ir.dtype import parse_dtype
from tunecli.engine.ir.visitor import post_order
from tunecli.engine.lower.thread_scope import launch_extents
from tunecli.engine.lower.verify_gpu import GPULimits
from tunecli.engine.target import as_target

from .context import CheckFailed

ROOT = Path(__file__).resolve().parents[2]
LIMITS = GPULimits()


@dataclass(frozen=True)
class Built:
    """A kernel lowered and compiled for a CUDA target."""

    func: Any  #: the lowered PrimFunc
    module: Any  #: the runtime Module (PTX, arguments, launch shape)


def build_kernel(sch: Any, bufs: list[Any], name: str, target: str) -> Built:
    """Lower and compile ``sch``; InstantiationError when the kernel exceeds the target's limits."""
    t = as_target(target)
    func = lowering.lower(sch, list(bufs), re.sub(r"\W", "_", name), t)
    return Built(func, build(func, target=t))


def random_inputs(bufs: list[Any], rng: np.random.Generator) -> list[np.ndarray]:
    """Uniform(-1, 1) arrays for every argument but the last (the output)."""
    return [rng.uniform(-1, 1, tuple(int(d) for d in b.shape)).astype(b.dtype) for b in bufs[:-1]]


def shared_bytes(func: Any) -> int:
    """Bytes of the ``shared`` allocations of ``func``."""
    found: list[Any] = []
    post_order(func.body, lambda n: found.append(n.buffer) if isinstance(n, Allocate) else None)
    return sum(b.size * parse_dtype(b.dtype).bits // 8 for b in found if b.scope == "shared")


def ptxas(ptx: bytes, arch: str) -> dict[str, int]:
    """Assemble ``ptx`` with ``ptxas -v``: registers, smem, spill bytes (CheckFailed if refused)."""
    tool = ptxas_path()
    if tool is None:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_bytes(ptx)
        command = [str(tool), f"-arch={arch}", "-v", str(src), "-o", str(src.with_suffix(".cubin"))]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise CheckFailed(f"ptxas -arch={arch} refused the PTX: {proc.stderr.strip()[-300:]}")

    def number(pattern: str) -> int:
        found = re.search(pattern, proc.stderr)
        return int(found.group(1)) if found else 0

    return {"registers": number(r"Used (\d+) registers"), "smem": number(r"(\d+) bytes smem"),
            "spill": number(r"(\d+) bytes spill stores")}


def inspect(built: Built, inputs: list[np.ndarray], output: tuple[tuple[int, ...], str], arch: str) -> dict:
    """Everything up to the launch: the arguments the kernel takes are the arrays given (count,
    shapes, dtypes), its launch shape is the loops' (as the simulator reads them) and within the
    limits, its shared memory is what ptxas reserves and within 48 KiB, and its registers times
    its threads fit a block.  Returns the figures; CheckFailed names the first mismatch."""
    module = built.module
    specs = module.arg_specs
    given = [(tuple(a.shape), str(a.dtype)) for a in inputs] + [(tuple(output[0]), output[1])]
    want = [(tuple(s.shape), str(s.dtype)) for s in specs]
    if given != want:
        raise CheckFailed(f"{module.entry_name} takes {want}, the check passes {given}")
    extents = launch_extents(built.func.body)
    grid = tuple(extents.get(f"blockIdx.{a}", 1) for a in "xyz")
    block = tuple(extents.get(f"threadIdx.{a}", 1) for a in "xyz")
    launch = module.launch
    if launch is None or (tuple(launch.grid), tuple(launch.block)) != (grid, block):
        raise CheckFailed(f"{module.entry_name}: launch {launch} but its loops say grid {grid} block {block}")
    threads = launch.threads_per_block
    if threads > LIMITS.max_threads_per_block or max(launch.grid) >= 2**31 or launch.grid[1] > 65535:
        raise CheckFailed(f"{module.entry_name}: grid {launch.grid} block {launch.block} beyond the limits")
    shared = shared_bytes(built.func)
    if shared > LIMITS.max_shared_memory_per_block:
        raise CheckFailed(f"{module.entry_name}: {shared} bytes of shared memory, more than 48 KiB")
    figures = {"grid": launch.grid, "block": launch.block, "shared": shared}
    report = ptxas(module.object_bytes(), arch)
    if report:
        if not shared <= report["smem"] <= shared + 16 * 8:
            raise CheckFailed(f"{module.entry_name}: ptxas reserves {report['smem']} bytes of shared memory, "
                              f"the kernel's allocations {shared}")
        if report["registers"] * threads > LIMITS.registers_per_block:
            raise CheckFailed(f"{module.entry_name}: {report['registers']} registers x {threads} threads "
                              f"> {LIMITS.registers_per_block}: the launch would fail (out of resources)")
        figures.update(registers=report["registers"], spill=report["spill"])
    return figures


def simulate(func: Any, inputs: list[np.ndarray], expected: np.ndarray, reverse: bool = False) -> float:
    """Run ``func`` in the test suite's grid simulator; the largest error against ``expected``."""
    engine_tests = str(ROOT / "tests" / "engine")
    if engine_tests not in sys.path:
        sys.path.insert(0, engine_tests)
    from lower.gpu_simulator import run_grid

    out = np.full(expected.shape, np.nan, expected.dtype)
    run_grid(func, *inputs, out, reverse=reverse)
    return max_error(out, expected)


def run_on_gpu(built: Built, dev: Any, inputs: list[np.ndarray], expected: np.ndarray) -> float:
    """Launch the kernel once on fresh device copies of ``inputs``; the largest error."""
    args = [tvm.nd.array(a, device=dev) for a in inputs]
    args.append(tvm.nd.empty(expected.shape, str(expected.dtype), dev))
    built.module(*args)
    dev.sync()
    return max_error(args[-1].numpy(), expected)


def max_error(got: np.ndarray, want: np.ndarray) -> float:
    """The largest |got - want| relative to max(1, |want|) (inf when anything is NaN)."""
    if np.isnan(got).any():
        return float("inf")
    return float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want)))) if want.size else 0.0


def describe(figures: dict) -> str:
    keys = ("grid", "block", "shared", "registers", "spill")
    return ", ".join(f"{k} {figures[k]}" for k in keys if k in figures)
