"""tunecli.autotvm.env: process-wide switches (TVM's ``autotvm.env``)."""

from tunecli.engine.task.scope import GLOBAL_SCOPE, AutotvmGlobalScope

__all__ = ["GLOBAL_SCOPE", "AutotvmGlobalScope"]
