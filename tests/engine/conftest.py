"""Shared by the engine tests.

pytest puts the folder of this ``conftest.py`` (``tests/engine``) on ``sys.path``, so the test
folders below share helper modules by name: ``from kernels_ir import VADD, compile_ir``.
"""
