"""tunecli: an auto-tuner for tensor kernels in the style of TVM's AutoTVM.

The public names mirror TVM's: ``tunecli.te`` (tensor expressions and schedules),
``tunecli.build`` / ``tunecli.lower``, ``tunecli.topi`` (operators), ``tunecli.autotvm``
(tuning), ``tunecli.rpc`` (distributed measurement), ``tunecli.target.Target``,
``tunecli.nd`` (``nd.array``/``nd.empty``), ``tunecli.cpu()`` / ``tunecli.device()`` and
``tunecli.testing``, so ``import tunecli as tvm`` runs TVM user programs.  The heavier faces
(``autotvm``, ``topi``, ``rpc``, ``target``, ``nd``, ``runtime``, ``testing``) are imported on first
attribute access, so ``import tunecli`` stays cheap for the command line.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from tunecli import te
from tunecli.engine.build import build, lower
from tunecli.engine.target import Target
from tunecli.runtime import Device, cpu, device

__version__ = "0.1.0"

_LAZY_FACES = ("autotvm", "topi", "rpc", "target", "nd", "runtime", "testing", "tir")


def __getattr__(name: str) -> ModuleType:
    """Import a TVM-style face (``tunecli.autotvm``, ``tunecli.target``, ...) on first access."""
    if name in _LAZY_FACES:
        return importlib.import_module(f"tunecli.{name}")
    raise AttributeError(f"module 'tunecli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_FACES))


__all__ = ["te", "build", "lower", "Target", "Device", "cpu", "device", "__version__", *_LAZY_FACES]
