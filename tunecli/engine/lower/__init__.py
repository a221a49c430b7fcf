"""Lowering: bound inference, schedule → loop nest, inlining, flattening, auto-unroll pragmas."""

from .lower import lower

__all__ = ["lower"]
