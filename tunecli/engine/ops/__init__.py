"""Operators: compute definitions (``nn``), numpy references and x86 autotvm templates."""
