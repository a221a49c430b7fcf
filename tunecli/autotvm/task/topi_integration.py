"""tunecli.autotvm.task.topi_integration: the decorators that make TOPI functions tunable, by TVM's
module path (``from tvm.autotvm.task.topi_integration import register_topi_compute``)."""

from tunecli.engine.task.topi_integration import register_topi_compute, register_topi_schedule

__all__ = ["register_topi_compute", "register_topi_schedule"]
