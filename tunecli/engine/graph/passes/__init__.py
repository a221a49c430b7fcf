"""Graph passes (TVM's ``relay.transform``) and their infrastructure (``tvm.transform``).

``pass_infra``: Pass, Sequential, PassContext.  Passes: ``SimplifyInference``, ``FoldConstant``
(and ``bind_params``), ``FoldScaleAxis``, ``AlterOpLayout`` (with its ``layout_propagation``
rules), ``FuseOps``, ``DeadCodeElimination``; ``InferType`` is
``type_infer``'s.  ``optimize(mod, params)`` is the sequence ``relay.build`` runs.
"""

from ..type_infer import InferType
from .alter_op_layout import AlterOpLayout
from .dce import DeadCodeElimination
from .fold_constant import FoldConstant, bind_params
from .fold_scale_axis import FoldScaleAxis
from .fuse_ops import FuseOps, find_groups
from .pass_infra import Pass, PassContext, Sequential, function_pass
from .simplify_inference import SimplifyInference

__all__ = [
    "AlterOpLayout",
    "DeadCodeElimination",
    "FoldConstant",
    "FoldScaleAxis",
    "FuseOps",
    "InferType",
    "Pass",
    "PassContext",
    "Sequential",
    "SimplifyInference",
    "bind_params",
    "find_groups",
    "function_pass",
]
