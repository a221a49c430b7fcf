"""Stage ``prerequisites``: what the checks need on this machine, before any GPU work.

Python and the pinned llvmlite, the Python packages tunecli imports, NVIDIA's bindings, the
driver and the GPU (its compute capability decides the ``-arch`` of every build), libdevice and
ptxas where tunecli looks for them (``nvptx_backend.libdevice_path`` / ``ptxas_path``), PyTorch
with CUDA and cuDNN for the comparisons.  A missing package names the wheel to carry
(``scripts/gpu_wheels.sh``).
"""

from __future__ import annotations

import importlib
import platform
import re
import sys
from importlib import metadata

from tunecli.engine.codegen.nvptx_backend import libdevice_path, ptxas_path

from .context import CheckFailed, Context
from .kernels import ROOT
from .table import SKIPPED

STAGE = "prerequisites"
#: import name -> distribution; what ``import tunecli`` and the stages need.
PACKAGES = {"numpy": "numpy", "yaml": "pyyaml", "click": "click", "rich": "rich",
            "cloudpickle": "cloudpickle"}


def pinned_llvmlite() -> str:
    """The llvmlite version pyproject.toml pins."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'"llvmlite==([\w.]+)"', text)
    return found.group(1) if found else "?"


def run(ctx: Context) -> None:
    with ctx.check(STAGE, "python and llvmlite") as r:
        want = pinned_llvmlite()
        have = metadata.version("llvmlite")
        r.numbers = f"Python {platform.python_version()}, llvmlite {have} (pinned {want})"
        if have != want:
            raise CheckFailed(r.numbers + ": carry the pinned wheel (scripts/gpu_wheels.sh)")
    with ctx.check(STAGE, "python packages") as r:
        missing, found = [], []
        for module, dist in PACKAGES.items():
            try:
                importlib.import_module(module)
                found.append(f"{dist} {metadata.version(dist)}")
            except ImportError:
                missing.append(dist)
        try:
            found.append(f"xgboost {metadata.version('xgboost-cpu')}")
        except metadata.PackageNotFoundError:
            found.append("xgboost absent (GA tuner instead of XGB)")
        r.numbers = ", ".join(found)
        if missing:
            raise CheckFailed(f"missing {missing}: carry their wheels (scripts/gpu_wheels.sh)")
    with ctx.check(STAGE, "libdevice and ptxas") as r:
        lib, asm = libdevice_path(), ptxas_path()
        r.numbers = f"libdevice {lib}, ptxas {asm}"
        if lib is None:
            raise CheckFailed("no libdevice.10.bc ($CUDA_HOME, /usr/local/cuda, nvidia-cuda-nvcc): kernels "
                              "calling math functions (exp, tanh ...) cannot be built")
        if asm is None:
            r.numbers += " (PTX is checked by the driver's JIT only)"
    gpu(ctx)
    with ctx.check(STAGE, "PyTorch and cuDNN") as r:
        try:
            import torch
        except ImportError:
            r.status, r.numbers = SKIPPED, "torch is not installed: no cuDNN or eager comparison"
            return
        cuda = torch.cuda.is_available()
        cudnn = torch.backends.cudnn.version() if cuda else None
        state = "available" if cuda else "not available"
        r.numbers = f"torch {torch.__version__}, CUDA {state}, cuDNN {cudnn}"
        if not cuda and not ctx.dry_run:
            raise CheckFailed(r.numbers)


def gpu(ctx: Context) -> None:
    """The bindings, the driver and the GPU; sets ``ctx.device`` and ``ctx.arch`` when usable."""
    with ctx.check(STAGE, "cuda-bindings, driver and GPU") as r:
        try:
            version = metadata.version("cuda-bindings")
        except metadata.PackageNotFoundError:
            version = None
        import tunecli as tvm
        from tunecli.engine.runtime.cuda import call, driver

        dev = tvm.cuda(0)
        if version is None or not dev.exist:
            why = "cuda-bindings are not installed" if version is None else _why_not(dev)
            r.numbers = f"no GPU: {why}"
            if ctx.dry_run:
                r.status = SKIPPED
                r.numbers += f"; dry run for {ctx.arch}"
                return
            raise CheckFailed(r.numbers)
        cu = driver()
        major, minor = dev.compute_version.split(".")
        ctx.arch = f"sm_{major}{minor}"
        handle = call("cuDeviceGet", cu.cuDeviceGet(0))
        name = call("cuDeviceGetName", cu.cuDeviceGetName(64, handle)).split(b"\0")[0].decode()
        driver_version = call("cuDriverGetVersion", cu.cuDriverGetVersion())
        r.numbers = (f"{name}, compute capability {dev.compute_version} ({ctx.arch}), driver API "
                     f"{driver_version}, cuda-bindings {version}, Python at {sys.executable}")
        ctx.device = None if ctx.dry_run else dev


def _why_not(dev: object) -> str:
    import tunecli as tvm

    try:
        tvm.nd.empty((1,), "float32", dev)
    except Exception as err:  # noqa: BLE001 - the reason is the row's text
        return str(err)
    return "unknown"
