"""TVM's ``tvm.relay.op.reduce`` face: reductions over axes."""

from tunecli.engine.graph.ops.reduce import max, mean, min, sum  # noqa: A004 - TVM's names

__all__ = ["max", "mean", "min", "sum"]
