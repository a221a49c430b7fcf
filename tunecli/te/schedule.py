"""TVM's ``tvm.te.schedule`` namespace: ``create_schedule``, ``Schedule``, ``Stage``, the relations
``Split``/``Fuse`` (``s[T].relations``) and the automatic inlining of elementwise, broadcast and
injective stages (``AutoInlineElemWise(s)``, ``AutoInlineBroadcast(s)``, ``AutoInlineInjective(s)``)."""

from tunecli.engine.schedule import Fuse, Schedule, Split, Stage, create_schedule
from tunecli.engine.schedule.auto_inline import auto_inline_broadcast as AutoInlineBroadcast
from tunecli.engine.schedule.auto_inline import auto_inline_elemwise as AutoInlineElemWise
from tunecli.engine.schedule.auto_inline import auto_inline_injective as AutoInlineInjective

__all__ = ["AutoInlineBroadcast", "AutoInlineElemWise", "AutoInlineInjective", "Fuse", "Schedule", "Split",
           "Stage", "create_schedule"]
