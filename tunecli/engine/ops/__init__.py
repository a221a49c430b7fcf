"""Operators: compute definitions (``nn``), numpy references, and per-target strategies (``registry``)."""
