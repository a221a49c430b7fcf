"""TVM's ``tvm.relay.transform`` face: the graph passes, and the AutoTVM era's ``build_config``
(also ``relay.build_config``)."""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine.graph.passes import (
    AlterOpLayout,
    DeadCodeElimination,
    FoldConstant,
    FoldScaleAxis,
    FuseOps,
    InferType,
    Sequential,
    SimplifyInference,
)
from tunecli.engine.graph.passes.convert_layout import ConvertLayout
from tunecli.engine.graph.passes.pass_infra import PassContext
from tunecli.engine.runtime import Device
from tunecli.errors import GraphError


def build_config(opt_level: int = 2, required_pass: Sequence[str] | None = None,
                 disabled_pass: Sequence[str] | None = None, fallback_device: Device | None = None,
                 trace: object = None) -> PassContext:
    """TVM's older ``relay.build_config(opt_level=3)``: the :class:`PassContext` of these settings,
    used as ``with relay.build_config(opt_level=3): relay.build(...)``.

    Raises
    ------
    GraphError
        For a ``fallback_device`` other than the CPU (a graph runs on one device here).
    """
    if fallback_device is not None and getattr(fallback_device, "device_type", None) != Device.kDLCPU:
        raise GraphError(f"build_config: fallback_device {fallback_device!r} is not supported; a graph runs "
                         "on one device, the target's")
    return PassContext(opt_level, required_pass, disabled_pass, trace=trace)


__all__ = ["AlterOpLayout", "ConvertLayout", "DeadCodeElimination", "FoldConstant", "FoldScaleAxis",
           "FuseOps", "InferType", "PassContext", "Sequential", "SimplifyInference", "build_config"]
