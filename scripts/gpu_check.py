"""The checks a session with an NVIDIA GPU runs, in one call of about 8 minutes, in stages.

prerequisites (Python, the pinned llvmlite, packages, cuda-bindings, driver and GPU, libdevice,
ptxas, PyTorch/cuDNN) → smoke (a vector add, 5 random configs of the seed's conv2d) → faults
(an illegal address and a launch beyond the limits become error records; the next measurement
works) → tuning (the seed's conv2d tuned with ``check_correctness``, its best against PyTorch's
cuDNN) → templates (random configs of every GPU template, checked against numpy) → network
(ResNet-18 on the GPU against the CPU build, beside PyTorch eager) → rpc (``tunecli server --key
h200`` measuring for ``RPCRunner`` on 127.0.0.1).

The table (``gpu_check.md``, ``gpu_check.json``) is written to ``--out`` (default ``$OUT``) after
every stage; ``--budget-s`` starts no stage that would not end in time; ``--dry-run`` runs every
stage up to the launch on a machine without a GPU.  Exit status 1 when a check failed.  The
wheels a machine without tunecli's dependencies needs: ``scripts/gpu_wheels.sh``; the device
call: "GPU session plan" in ``benchmarks/README.md``.

    python3 scripts/gpu_check.py [--dry-run] [--budget-s 450] [--stages smoke,tuning] [--out DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from gpu_stages.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
