"""Loop-nest passes that need no LLVM (IR → IR), shared by every code generator.

``flatten`` (multi-dimensional accesses → one row-major index), ``vectorize`` (``vectorized``
loops → Ramp/Broadcast vector code), ``unroll`` (``unrolled`` loops → copies of their body),
``auto_unroll`` (TVM's ``auto_unroll_max_step`` / ``unroll_explicit`` pragmas) and, for CPUs,
``unswitch`` (loop-invariant guards tested once, outside the loops).
"""
