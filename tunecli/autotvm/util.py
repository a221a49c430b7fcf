"""TVM's older name of ``tvm.autotvm.utils`` (``from tvm.autotvm.util import get_const_tuple``,
TVM 0.6/0.7): the same helpers."""

from tunecli.autotvm.utils import SI_PREFIXES, EmptyContext, format_si_prefix, get_const_int, get_const_tuple

__all__ = ["SI_PREFIXES", "EmptyContext", "format_si_prefix", "get_const_int", "get_const_tuple"]
