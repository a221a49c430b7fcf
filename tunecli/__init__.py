"""tunecli: an auto-tuner for tensor kernels in the style of TVM's AutoTVM.

The public names mirror TVM's: ``tunecli.te`` (tensor expressions and schedules),
``tunecli.build`` / ``tunecli.lower``, ``tunecli.topi`` (operators), ``tunecli.autotvm``
(tuning), ``tunecli.rpc`` (distributed measurement), ``tunecli.target.Target``,
``tunecli.nd`` (``nd.array``/``nd.empty``), ``tunecli.cpu()`` / ``tunecli.cuda()`` /
``tunecli.device()`` and ``tunecli.testing``, ``tunecli.relay`` (networks) and
``tunecli.IRModule``, so ``import tunecli as tvm`` runs TVM user programs; the AutoTVM era's
names (``tvm.context``, ``tvm.placeholder``, ``tvm.compute``, ``tvm.create_schedule``,
``tvm.sum``, ``tvm.ndarray``) are there too.  The heavier faces
(``autotvm``, ``topi``, ``rpc``, ``target``, ``nd``, ``runtime``, ``testing``, ``relay``) are
imported on first attribute access, so ``import tunecli`` stays cheap for the command line.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tunecli import te
from tunecli.engine import build as _engine
from tunecli.engine.lower.prim_module import PrimModule
from tunecli.engine.target import Target
from tunecli.runtime import Device, cpu, cuda, device, gpu

if TYPE_CHECKING:
    from tunecli.engine.ir.stmt import PrimFunc
    from tunecli.engine.runtime.module import Module
    from tunecli.engine.schedule import Schedule

__version__ = "0.1.0"


def lower(sch: Schedule, args: Sequence[te.Tensor] | None = None, name: str = "main",
          binds: dict | None = None, simple_mode: bool = False) -> PrimModule:
    """TVM's ``tvm.lower``: the lowered module of schedule ``sch`` over ``args``; ``mod[name]`` is
    its loop nest (``engine.build.lower``) and ``str(mod)`` prints it."""
    return PrimModule({name: _engine.lower(sch, list(args or ()), name, simple_mode)})


def build(sch: Schedule | PrimFunc | PrimModule, args: Sequence[te.Tensor] | None = None,
          target: str | Target | None = None, target_host: str | Target | None = None,
          name: str = "default_function") -> Module:
    """TVM's ``tvm.build``: compile a schedule with its arguments, a lowered function, or the
    module ``lower`` returned (``engine.build.build``); ``target_host`` (TVM's older argument)
    becomes the target's host."""
    if isinstance(sch, PrimModule):
        sch = sch.only
    if target_host is not None:
        target = Target(target if target is not None else "llvm", host=target_host)
    return _engine.build(sch, args, target, name)

def context(dev_type: str | int | Target, dev_id: int = 0) -> Device:
    """TVM's older name of :func:`device` (``tvm.context("llvm", 0)``, ``tvm.context(2, 0)``)."""
    return device(dev_type, dev_id)


_LAZY_FACES = ("autotvm", "topi", "rpc", "target", "nd", "runtime", "testing", "tir", "relay", "transform",
               "contrib")
# top-level names TVM users reach as ``tvm.<name>``, defined in a lazy face
_LAZY_NAMES = {"IRModule": "relay"}
# TVM's older top-level names (before ``te`` and ``tir`` were split out): ``tvm.placeholder``,
# ``tvm.compute``, ``tvm.create_schedule``, ``tvm.sum``, ``tvm.exp``, ``tvm.floordiv`` ...
_TE_NAMES = ("placeholder", "compute", "create_schedule", "var", "const", "reduce_axis", "thread_axis",
             "comm_reducer", "sum", "max", "min", "max_value", "min_value", "exp", "log", "sqrt", "rsqrt",
             "sigmoid", "tanh", "floor", "ceil", "round", "trunc", "abs", "power", "if_then_else", "all",
             "any", "erf", "cos", "sin", "log2", "log10", "exp2")
_TIR_NAMES = ("floordiv", "floormod", "indexdiv", "indexmod", "truncdiv", "truncmod")
_RUNTIME_NAMES = ("convert",)
# older names of whole faces: ``tvm.ndarray.array`` is ``tvm.nd.array``, ``tvm.module.load``
# ``tvm.runtime.load``
_FACE_ALIASES = {"ndarray": "nd", "module": "runtime"}


def __getattr__(name: str) -> Any:  # a lazily imported face, or a name from one
    """Import a TVM-style face (``tunecli.autotvm``, ``tunecli.target``, ...) on first access."""
    if name in _LAZY_FACES:
        return importlib.import_module(f"tunecli.{name}")
    if name in _LAZY_NAMES:
        return getattr(importlib.import_module(f"tunecli.{_LAZY_NAMES[name]}"), name)
    if name in _TE_NAMES:
        return getattr(te, name)
    if name in _TIR_NAMES:
        return getattr(importlib.import_module("tunecli.tir"), name)
    if name in _RUNTIME_NAMES:
        return getattr(importlib.import_module("tunecli.runtime"), name)
    if name in _FACE_ALIASES:
        return importlib.import_module(f"tunecli.{_FACE_ALIASES[name]}")
    raise AttributeError(f"module 'tunecli' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_FACES) | set(_LAZY_NAMES) | set(_TE_NAMES) | set(_TIR_NAMES)
                  | set(_RUNTIME_NAMES) | set(_FACE_ALIASES))


__all__ = ["te", "build", "lower", "Target", "Device", "context", "cpu", "cuda", "device", "gpu",
           "__version__",
           *_LAZY_FACES, *_LAZY_NAMES]
