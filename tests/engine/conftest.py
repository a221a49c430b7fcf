"""Shared by the engine tests.

The test folders below share helper modules by their package names:
``from tests.engine.kernels_ir import VADD, compile_ir``.
"""
