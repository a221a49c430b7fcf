"""The stages of ``scripts/gpu_check.py``: the checks a session with an NVIDIA GPU runs in one call.

Each stage adds rows (stage, check, status, numbers, seconds) to a :class:`table.Table`, which is
written to the output folder after every stage, so a run cut short still reports what it did.
With ``--dry-run`` (no GPU) every stage runs up to the launch: kernels built, PTX assembled by
``ptxas``, launch shapes, arguments and shared-memory totals checked, small twins of the kernels
run in the test suite's grid simulator; those rows say ``dry-run``.
"""
