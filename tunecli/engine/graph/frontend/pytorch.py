"""PyTorch import (TVM's ``relay.frontend.from_pytorch``): a traced (or plain) torch module as a
graph module and its parameters.

The module is exported in-process by torch's own ONNX exporter (the TorchScript one, opset 17; for a
plain module it cannot export, torch's dynamo exporter, opset 18) on example inputs of the given
shapes and dtypes, and the ONNX model is imported by
:func:`~.onnx.from_onnx`.  PyTorch is the optional extra ``tunecli[torch]``, imported when a module
is converted.
"""

from __future__ import annotations

import inspect
import io
import logging
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from tunecli.engine.runtime import NDArray
from tunecli.errors import ModelImportError

from ..ir_module import IRModule
from .onnx import from_onnx

if TYPE_CHECKING:
    import torch

#: One input of ``from_pytorch``: ``(name, shape)`` or ``(name, (shape, dtype))``.
InputInfo: TypeAlias = "tuple[str, Sequence[int] | tuple[Sequence[int], str]]"

#: The ONNX opset the module is exported as.
EXPORT_OPSET = 17
#: The opset of torch's dynamo exporter, used for a plain module the TorchScript exporter cannot export.
EXPORT_OPSET_DYNAMO = 18


def from_pytorch(
    script_module: torch.nn.Module,
    input_infos: Sequence[InputInfo],
    default_dtype: str = "float32",
    freeze_params: bool = False,
) -> tuple[IRModule, dict[str, NDArray]]:
    """Convert a PyTorch module into a graph module (TVM's ``relay.frontend.from_pytorch``).

    Parameters
    ----------
    script_module : torch.jit.ScriptModule or torch.nn.Module
        The module, traced with ``torch.jit.trace`` as TVM expects (a plain module works too);
        it is run in eval mode.
    input_infos : sequence of (name, shape) or (name, (shape, dtype))
        The inputs in the order ``forward`` takes them.
    default_dtype : str
        The dtype of inputs given without one.
    freeze_params : bool
        Embed the weights as constants; by default (as TVM's) they are parameters of
        ``mod["main"]``, returned in ``params``.

    Returns
    -------
    (IRModule, dict of str to NDArray)

    Raises
    ------
    ModelImportError
        PyTorch missing (naming the extra), malformed ``input_infos``, a module torch cannot export
        (torch's reason), or what :func:`from_onnx` refuses (every unsupported operator at once).
    """
    torch = _torch_package()
    if not isinstance(script_module, torch.nn.Module):
        raise ModelImportError(
            f"from_pytorch: expected a torch.jit.ScriptModule or torch.nn.Module, "
            f"got {type(script_module).__name__}"
        )
    names, shapes, dtypes = _input_infos(input_infos, default_dtype)
    _check_arity(torch, script_module, names)
    examples = tuple(torch.from_numpy(np.zeros(s, dtype=d)) for s, d in zip(shapes, dtypes, strict=True))
    script_module.eval()
    try:
        data = _export(torch, script_module, examples, names, dynamo=False)
    except Exception as err:  # torch raises its own exception kinds per unsupported construct
        data = None if isinstance(script_module, torch.jit.ScriptModule) else _export_or_none(
            torch, script_module, examples, names)
        if data is None:
            given = ", ".join(f"{n} {d}{list(s)}" for n, s, d in zip(names, shapes, dtypes, strict=True))
            hint = (" (torch cannot export some traced layers, nn.MultiheadAttention among them: pass the "
                    "nn.Module itself)" if isinstance(script_module, torch.jit.ScriptModule) else "")
            raise ModelImportError(
                f"from_pytorch: torch's ONNX exporter cannot export the module{hint} on inputs {given} "
                f"(a dtype other than {default_dtype!r} is given as (name, (shape, dtype))): "
                f"{type(err).__name__}: {err}"
            ) from None
    import onnx

    model = onnx.load_from_string(data)
    declared = {i.name for i in model.graph.input}
    used = {n: s for n, s in zip(names, shapes, strict=True) if n in declared}
    types = {n: d for n, d in zip(names, dtypes, strict=True) if n in declared}
    return from_onnx(model, shape=used, dtype=types, freeze_params=freeze_params)


def _export(torch: ModuleType, module: torch.nn.Module, examples: tuple, names: Sequence[str],
            dynamo: bool) -> bytes:
    """The module as a serialized ONNX model, by torch's TorchScript exporter or (``dynamo``) its
    torch.export-based one, which exports what the first cannot (nn.TransformerEncoderLayer)."""
    buffer = io.BytesIO()
    quiet = logging.getLogger("torch.onnx")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # the dynamo exporter's notes on packages it does not need
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            options = {"do_constant_folding": True} if not dynamo else {"verbose": False}
            torch.onnx.export(module, examples, buffer, input_names=list(names),
                              opset_version=EXPORT_OPSET_DYNAMO if dynamo else EXPORT_OPSET, dynamo=dynamo,
                              **options)
    finally:
        quiet.setLevel(level)
    return buffer.getvalue()


def _export_or_none(torch: ModuleType, module: torch.nn.Module, examples: tuple,
                    names: Sequence[str]) -> bytes | None:
    """:func:`_export` by the dynamo exporter, None when it cannot either."""
    try:
        return _export(torch, module, examples, names, dynamo=True)
    except Exception:  # the TorchScript exporter's error is the one reported
        return None


def _torch_package() -> ModuleType:
    try:
        import torch
    except ImportError:
        raise ModelImportError("from_pytorch needs PyTorch: pip install 'tunecli[torch]'") from None
    return torch


def _check_arity(torch: ModuleType, module: torch.nn.Module, names: Sequence[str]) -> None:
    """ModelImportError when ``forward`` cannot take as many inputs as ``input_infos`` names."""
    if isinstance(module, torch.jit.ScriptModule):
        try:
            arguments = list(module.forward.schema.arguments)[1:]  # after self
        except (AttributeError, RuntimeError):
            return
        params = [(a.name, a.has_default_value()) for a in arguments]
    else:
        try:
            signature = inspect.signature(module.forward)
        except (TypeError, ValueError):
            return
        if any(p.kind is p.VAR_POSITIONAL for p in signature.parameters.values()):
            return
        params = [(p.name, p.default is not p.empty) for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(not has_default for _, has_default in params)
    if not required <= len(names) <= len(params):
        takes = ", ".join(name for name, _ in params) or "nothing"
        count = str(required) if required == len(params) else f"{required} to {len(params)}"
        raise ModelImportError(
            f"from_pytorch: the module's forward takes {takes} ({count} input"
            f"{'' if count == '1' else 's'}); input_infos gives {len(names)}: {list(names)}"
        )


def _input_infos(
    input_infos: Sequence[InputInfo], default_dtype: str
) -> tuple[list[str], list[tuple[int, ...]], list[str]]:
    """Names, shapes and dtypes of ``input_infos`` (ModelImportError naming a malformed entry)."""
    names, shapes, dtypes = [], [], []
    if isinstance(input_infos, (str, bytes)) or not isinstance(input_infos, Sequence):
        raise ModelImportError(
            f"from_pytorch: input_infos must be a list of (name, shape), got {input_infos!r}"
        )
    for i, info in enumerate(input_infos):
        try:
            name, spec = info
            if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], str):
                shape, dtype = spec
            else:
                shape, dtype = spec, default_dtype
            shapes.append(tuple(int(s) for s in shape))
            dtypes.append(str(np.dtype(dtype)))
            names.append(str(name))
        except (TypeError, ValueError):
            raise ModelImportError(
                f"from_pytorch: input_infos[{i}] = {info!r}: expected (name, shape) or "
                f"(name, (shape, dtype)), the shape's dimensions integers (a dynamic dimension is given "
                f"the size to build for)"
            ) from None
    if len(set(names)) != len(names):
        raise ModelImportError(f"from_pytorch: input names {names} repeat a name")
    return names, shapes, dtypes
