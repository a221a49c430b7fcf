"""TVM's ``topi`` face: operator compute definitions (``topi.nn``) and numpy references
(``topi.testing``)."""

from tunecli.engine.ops.nn import add

from . import nn, testing

__all__ = ["add", "nn", "testing"]
