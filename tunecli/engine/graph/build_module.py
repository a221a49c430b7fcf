"""``relay.build``: a network → a :class:`BuiltGraph` (graph JSON, one kernel per fused group,
parameters), runnable with ``lib["default"](dev)`` and exportable as one shared library.

The pipeline: bind the parameters as constants, then under the current ``PassContext``
``SimplifyInference → FoldConstant → FoldScaleAxis → FoldConstant → AlterOpLayout → FoldConstant
→ DeadCodeElimination → FuseOps`` (weights are transformed once here, never per call; at
opt_level 3 an x86 convolution computes in the blocked layouts its config chooses, each with its
own config, see ``passes.alter_op_layout``), the graph program and memory
plan (``graph_codegen``), and each distinct group compiled by ``lower_group`` with the config
``DispatchContext.current`` gives (``apply_history_best`` installs the tuned records; without a
context of the user's, the pre-tuned packages of the target answer, as in TVM).  Instead of
a warning per untuned operator the build logs one summary line (``"11 of 12 tasks tuned; 1 fell
back: ..."``).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from tunecli.engine.codegen import CompiledKernel
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.runtime import Device, Module, device_for_target
from tunecli.engine.runtime.cuda import CUDADevice
from tunecli.engine.runtime.cuda_graph_executor import CUDAGraphExecutor
from tunecli.engine.runtime.graph_executor import GraphModule, GraphPlan
from tunecli.engine.runtime.graph_library import BLOB_SIZE_SYMBOL, BLOB_SYMBOL, GraphLibrary, pack_blob
from tunecli.engine.target import Target, as_target
from tunecli.engine.task.dispatcher import DispatchContext, FallbackContext
from tunecli.engine.task.scope import GLOBAL_SCOPE
from tunecli.errors import ArgumentError, GraphError

from .graph_codegen import graph_program
from .graph_expr import Function
from .ir_module import IRModule
from .lower_group import AnchorConfig, lower_group
from .passes import (
    AlterOpLayout,
    DeadCodeElimination,
    FoldConstant,
    FoldScaleAxis,
    FuseOps,
    InferType,
    Sequential,
    SimplifyInference,
    bind_params,
)

logger = logging.getLogger("autotvm")


def optimize(mod: IRModule | Function, params: Mapping[str, Any] | None = None,
             target: Target | None = None) -> IRModule:
    """The build's graph passes on ``mod`` with ``params`` bound (under the current PassContext).

    With a ``target``, ``AlterOpLayout`` (opt_level 3) gives its convolutions the layouts their
    configs choose, then ``FoldConstant`` transforms the weights; without one (task extraction)
    the graph keeps its layouts."""
    fn = mod["main"] if isinstance(mod, IRModule) else mod
    if not isinstance(fn, Function):
        raise GraphError(f"relay.build: expected an IRModule or a Function, got {type(mod).__name__}")
    if params:
        fn = bind_params(fn, params)
    seq = Sequential(
        [
            InferType(),
            SimplifyInference(),
            FoldConstant(),
            FoldScaleAxis(),
            FoldConstant(),
            *([AlterOpLayout(target), FoldConstant()] if target is not None else []),
            DeadCodeElimination(),
            FuseOps(),
        ]
    )
    return seq(InferType()(IRModule({"main": fn})))


@dataclass(frozen=True)
class TuningSummary:
    """Which tasks of a build used tuned configs.

    Attributes
    ----------
    tuned, fallback : tuple of AnchorConfig
        Distinct tasks (by workload) with a tuned record, and those that used the fallback config.
    """

    tuned: tuple[AnchorConfig, ...]
    fallback: tuple[AnchorConfig, ...]

    def line(self) -> str:
        """``"11 of 12 tasks tuned; 1 fell back: conv2d_nchw.x86 (1, 3, 224, 224, ...)"``."""
        total = len(self.tuned) + len(self.fallback)
        text = f"{len(self.tuned)} of {total} tasks tuned"
        if self.fallback:
            shown = ", ".join(f"{a.task_name} {a.workload[1:]}" for a in self.fallback[:3])
            more = f" and {len(self.fallback) - 3} more" if len(self.fallback) > 3 else ""
            text += f"; {len(self.fallback)} fell back: {shown}{more}"
        return text


class BuiltGraph(GraphLibrary):
    """What ``relay.build`` returns (TVM's ``GraphExecutorFactoryModule``).

    ``lib["default"](dev)`` → ``GraphModule``; ``get_graph_json()``, ``get_params()``,
    ``get_lib()`` (the kernels by name), ``export_library(path)``; ``summary`` (which tasks were
    tuned), ``plan`` (entries and memory plan).
    """

    def __init__(
        self,
        graph_json: str,
        kernels: dict[str, CompiledKernel],
        params: Mapping[str, Any],
        target: Target,
        summary: TuningSummary,
        libmod_name: str = "default",
    ):
        self.kernels = kernels
        self.target = target
        self.summary = summary
        device = device_for_target(target)
        super().__init__(
            graph_json, lambda: {n: device.load(k) for n, k in kernels.items()}, params, libmod_name
        )
        self.plan = GraphPlan.parse(graph_json)

    def create(self, device: Device | None = None) -> GraphModule:
        """A new executor of the graph on ``device`` (a CUDA build: ``tunecli.cuda(n)``, the default
        ``cuda(0)``; its parameters are copied to the GPU)."""
        if not self.target.is_gpu:
            return super().create(device)
        dev = device_for_target(self.target) if device is None else device
        if not isinstance(dev, CUDADevice):
            raise ArgumentError(
                f"graph executor: this build's kernels are PTX for {str(self.target)!r}; run it on a GPU "
                f"with lib[{self.libmod_name!r}](tunecli.cuda(0)), not on {dev!r}"
            )
        return GraphModule(CUDAGraphExecutor(self.graph_json, self.kernels, self.params, dev))

    @property
    def graph(self) -> str:
        """TVM's ``lib.graph_json``."""
        return self.graph_json

    def get_lib(self) -> dict[str, Module]:
        """The kernels as runtime modules, by function name."""
        return {name: Module(k) for name, k in self.kernels.items()}

    def export_library(self, path: str | os.PathLike, cc: str | None = None) -> None:
        """Write one shared library (kernels, graph and parameters) that ``tunecli.runtime.load_module``
        opens in any process (see ``runtime.graph_library``).

        Parameters
        ----------
        path : str or PathLike
            The ``.so`` to write.
        cc : str, optional
            The C compiler driver that links it (default: ``cc``, else ``gcc``).
        """
        compiler = cc or shutil.which("cc") or shutil.which("gcc")
        if compiler is None:
            raise GraphError("export_library: no C compiler (cc or gcc) on PATH to link the library")
        if self.target.is_gpu:
            raise GraphError(
                f"export_library: the kernels are PTX for {str(self.target)!r}; an exported library holds "
                "host objects only (a CUDA one would need the PTX in the blob and a loader that loads it "
                "through the CUDA driver); run the build in this process with lib['default'](tunecli.cuda(0))"
            )
        if not self.target.is_host:
            raise GraphError(f"export_library: the kernels are for {self.target}, not this machine")
        blob = pack_blob(self.graph_json, {n: len(k.arg_specs) for n, k in self.kernels.items()}, self.params)
        with tempfile.TemporaryDirectory(prefix="tunecli_export_") as tmp:
            objects = []
            for k, kernel in enumerate(self.kernels.values()):
                obj = os.path.join(tmp, f"k{k}.o")
                with open(obj, "wb") as f:
                    f.write(kernel.obj)
                objects.append(obj)
            data = os.path.join(tmp, "graph.bin")
            with open(data, "wb") as f:
                f.write(blob)
            asm = os.path.join(tmp, "graph.S")
            with open(asm, "w") as f:
                f.write(_blob_assembly(data, len(blob)))
            gomp = any(b"GOMP_parallel" in k.obj for k in self.kernels.values())
            cmd = [compiler, "-shared", "-o", os.fspath(path), *objects, asm, "-lm"] + (
                ["-lgomp"] if gomp else []
            )
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise GraphError(f"export_library: linking {os.fspath(path)!r} failed: {done.stderr.strip()}")


def _blob_assembly(data_path: str, size: int) -> str:
    return (
        f".section .rodata\n.balign 64\n.globl {BLOB_SYMBOL}\n.type {BLOB_SYMBOL}, @object\n"
        f'{BLOB_SYMBOL}:\n.incbin "{data_path}"\n.balign 8\n.globl {BLOB_SIZE_SYMBOL}\n'
        f".type {BLOB_SIZE_SYMBOL}, @object\n{BLOB_SIZE_SYMBOL}:\n.quad {size}\n"
        '.section .note.GNU-stack,"",@progbits\n'
    )


def build(
    mod: IRModule | Function,
    target: Any = None,
    target_host: Any = None,
    params: Mapping[str, Any] | None = None,
    mod_name: str = "default",
    **kwargs: Any,
) -> BuiltGraph:
    """Compile a network for ``target`` (TVM's ``relay.build``).

    Parameters
    ----------
    mod : IRModule or Function
    target : str or Target, optional
        Default: the current target, else the host (``llvm``).
    target_host : ignored for CPU targets.
    params : mapping of str to array, optional
        Weights bound as constants (folded and transformed at build time).
    mod_name : str
        The key of ``lib[...]``.

    Returns
    -------
    BuiltGraph
    """
    t = as_target(target if not isinstance(target, Mapping) else next(iter(target.values())))
    # As TVM: without a dispatch context of the user's, the pre-tuned packages configure the build,
    # searched as apply_history_best searches them (in order, each file loaded once).
    pretuned = ApplyHistoryBest() if isinstance(DispatchContext.current, FallbackContext) else nullcontext()
    silent = GLOBAL_SCOPE.silent
    GLOBAL_SCOPE.silent = True
    try:
        with pretuned:
            fused = optimize(mod, params, t)
            program = graph_program(fused["main"],
                                    lambda fn, name, constant: lower_group(fn, t, name, constant))
    finally:
        GLOBAL_SCOPE.silent = silent
    anchors: dict[tuple, AnchorConfig] = {}
    for lowered in program.lowered:
        if lowered.anchor is not None:
            anchors.setdefault(lowered.anchor.workload, lowered.anchor)
    summary = TuningSummary(
        tuple(a for a in anchors.values() if a.tuned), tuple(a for a in anchors.values() if not a.tuned)
    )
    if anchors:
        (logger.warning if summary.fallback else logger.info)(summary.line())
    return BuiltGraph(program.graph_json, program.kernels, program.params, t, summary, mod_name)
