"""TVM's ``tvm.autotvm.utils`` face (``tvm.autotvm.util`` before TVM 0.8): the helpers scripts
import from it — constant shapes (``get_const_int``, ``get_const_tuple``), SI prefixes of FLOP
rates (``format_si_prefix``, ``SI_PREFIXES``) and ``EmptyContext``."""

from contextlib import nullcontext as EmptyContext

from tunecli.engine.te.const_values import get_const_int, get_const_tuple
from tunecli.engine.tuner.callback import SI_PREFIXES, format_si_prefix

__all__ = ["SI_PREFIXES", "EmptyContext", "format_si_prefix", "get_const_int", "get_const_tuple"]
