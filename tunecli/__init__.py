"""tunecli: an auto-tuner for tensor kernels in the style of TVM's AutoTVM.

The public names mirror TVM's: ``tunecli.te`` (tensor expressions and schedules),
``tunecli.build`` / ``tunecli.lower``, ``tunecli.topi`` (operators), ``tunecli.autotvm``
(tuning), ``tunecli.rpc`` (distributed measurement), ``tunecli.target.Target``.
"""

from tunecli import te
from tunecli.engine.build import build, lower
from tunecli.engine.target import Target

__version__ = "0.1.0"

__all__ = ["te", "build", "lower", "Target", "__version__"]
