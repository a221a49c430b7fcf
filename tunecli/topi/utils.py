"""``topi.utils``: constant integers out of shapes and expressions."""

from tunecli.engine.te.const_values import get_const_int, get_const_tuple

__all__ = ["get_const_int", "get_const_tuple"]
