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
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np

from tunecli.engine.codegen import CompiledKernel
from tunecli.engine.log.history_best import ApplyHistoryBest
from tunecli.engine.runtime import Module
from tunecli.engine.runtime.graph_executor import GraphPlan
from tunecli.engine.runtime.graph_library import CompiledGraph
from tunecli.engine.runtime.linker import CompileFunc
from tunecli.engine.target import Target, as_target
from tunecli.engine.task.dispatcher import DispatchContext, FallbackContext
from tunecli.engine.task.scope import fallback_warnings_silenced
from tunecli.engine.task.workload_args import Workload
from tunecli.errors import GraphError

from .graph_codegen import graph_program
from .graph_expr import ArrayData, Function
from .group_compiler import GroupCompiler
from .ir_module import IRModule
from .library_export import export_graph
from .lower_group import AnchorConfig
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
from .passes.patch_dense import PatchConvToDense

logger = logging.getLogger("autotvm")

#: The target a network is built for: a Target or its string, TVM's ``{"llvm": target}`` (the first
#: value is taken), or None for the current target.
TargetLike: TypeAlias = "str | Target | Mapping[str, str | Target] | None"


def optimize(mod: IRModule | Function, params: Mapping[str, ArrayData] | None = None,
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
            PatchConvToDense(),
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
    nearest : tuple of AnchorConfig
        Those configured from the nearest record of their template (``log.nearest_record``).
    """

    tuned: tuple[AnchorConfig, ...]
    fallback: tuple[AnchorConfig, ...]
    nearest: tuple[AnchorConfig, ...] = ()

    def line(self) -> str:
        """``"10 of 12 tasks tuned; 1 chosen from the nearest records; 1 fell back: conv2d_nchw.x86
        (1, 3, 224, 224, ...)"``."""
        total = len(self.tuned) + len(self.nearest) + len(self.fallback)
        text = f"{len(self.tuned)} of {total} tasks tuned"
        if self.nearest:
            text += f"; {len(self.nearest)} chosen from the nearest records"
        if self.fallback:
            shown = ", ".join(f"{a.task_name} {a.workload[1:]}" for a in self.fallback[:3])
            more = f" and {len(self.fallback) - 3} more" if len(self.fallback) > 3 else ""
            text += f"; {len(self.fallback)} fell back: {shown}{more}"
        return text


class BuiltGraph(CompiledGraph):
    """What ``relay.build`` returns (TVM's ``GraphExecutorFactoryModule``).

    ``lib["default"](dev)`` → ``GraphModule`` (kernels for another processor: one TargetError);
    ``get_graph_json()``, ``get_params()``, ``get_lib()`` (the kernels by name),
    ``export_library(path)``; ``summary`` (which tasks were tuned), ``plan`` (entries and memory plan).
    """

    def __init__(
        self,
        graph_json: str,
        kernels: dict[str, CompiledKernel],
        params: Mapping[str, np.ndarray],
        target: Target,
        summary: TuningSummary,
        libmod_name: str = "default",
    ):
        super().__init__(graph_json, kernels, params, target, libmod_name)
        self.summary = summary
        self.plan = GraphPlan.parse(graph_json)

    @property
    def graph(self) -> str:
        """TVM's ``lib.graph_json``."""
        return self.graph_json

    def get_lib(self) -> dict[str, Module]:
        """The kernels as runtime modules, by function name."""
        return {name: Module(k) for name, k in self.kernels.items()}

    def export_library(self, file_name: str | os.PathLike, fcompile: str | CompileFunc | None = None,
                       addons: Sequence[object] | None = None, workspace_dir: str | None = None, *,
                       cc: str | CompileFunc | None = None, options: list[str] | None = None,
                       **kwargs: object) -> None:
        """Write the network for a device (TVM's ``export_library``, see ``graph.library_export``).

        Parameters
        ----------
        file_name : str or PathLike
            ``net.so``: one shared library that ``tunecli.runtime.load_module`` opens (kernels, graph
            and parameters); ``net.tar``: the objects, graph and parameters, which a device server
            loads itself (any target, ``cuda`` included).
        fcompile, cc : str or callable, optional
            The C compiler driver (``"aarch64-linux-gnu-gcc"``) or a compile function
            (``contrib.cc.cross_compiler(...)``, ``contrib.ndk.create_shared``); default: a driver
            for the target found on the PATH.
        options : list of str, optional
            Extra link options.
        """
        if addons:
            raise GraphError("export_library: addons (extra modules to link) are not supported")
        export_graph(self, file_name, fcompile if fcompile is not None else cc, options)


def build(
    mod: IRModule | Function,
    target: TargetLike = None,
    target_host: str | Target | None = None,
    params: Mapping[str, ArrayData] | None = None,
    mod_name: str = "default",
    **kwargs: object,
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
    with fallback_warnings_silenced(), pretuned:
        fused = optimize(mod, params, t)
        program = graph_program(fused["main"], GroupCompiler(t))
    anchors: dict[Workload, AnchorConfig] = {}
    for lowered in program.lowered:
        if lowered.anchor is not None:
            anchors.setdefault(lowered.anchor.workload, lowered.anchor)
    summary = TuningSummary(
        tuple(a for a in anchors.values() if a.tuned),
        tuple(a for a in anchors.values() if not a.tuned and a.source.kind != "nearest"),
        tuple(a for a in anchors.values() if a.source.kind == "nearest"),
    )
    if anchors:
        (logger.warning if summary.fallback else logger.info)(summary.line())
    return BuiltGraph(program.graph_json, program.kernels, program.params, t, summary, mod_name)
