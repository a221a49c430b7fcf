"""TVM's ``tvm.transform`` face: ``PassContext``, ``Pass``, ``Sequential``."""

from tunecli.engine.graph.passes.pass_infra import Pass, PassContext, Sequential

__all__ = ["Pass", "PassContext", "Sequential"]
