"""The code generation backend of each target kind."""

from __future__ import annotations

from tunecli.engine.target import Target
from tunecli.errors import TargetError

from .backend import Backend
from .cpu_backend import CPUBackend
from .nvptx_backend import NVPTXBackend

BACKENDS: dict[str, Backend] = {"llvm": CPUBackend(), "cuda": NVPTXBackend(), "nvptx": NVPTXBackend()}


def backend_for(target: Target) -> Backend:
    """The backend that compiles for ``target``'s kind; TargetError for a kind without one."""
    backend = BACKENDS.get(target.kind)
    if backend is None:
        raise TargetError(f"codegen: no backend compiles for target {str(target)!r}; "
                          f"target kinds with one: {sorted(BACKENDS)}")
    return backend
