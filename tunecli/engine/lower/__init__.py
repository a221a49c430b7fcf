"""Lowering: bound inference, schedule → loop nest, inlining, flattening."""

from .lower import lower

__all__ = ["lower"]
