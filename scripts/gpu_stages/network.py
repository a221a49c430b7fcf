"""Stage ``network``: ResNet-18 (1x3x224x224) built for the GPU and run there.

``relay.build`` for the GPU (fallback configs, or the records of ``--history`` if given), run through
the graph executor on the GPU, its output compared with the CPU (``llvm``) build's on the same
input, its time per run beside PyTorch eager's torchvision ResNet-18 on the same GPU (fp32, TF32
off).  In a dry run the GPU build's kernels are each assembled by ptxas and their launches
checked against the limits (threads, registers x threads).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import tunecli as tvm
import tunecli.contrib.graph_executor as runtime
from tunecli import relay

from .context import CheckFailed, Context
from .kernels import LIMITS, max_error, ptxas
from .table import SKIPPED

STAGE = "network"
SHAPE = (1, 3, 224, 224)


def build(target: str) -> tuple[Any, float]:
    mod, params = relay.testing.resnet.get_workload(num_layers=18, batch_size=1, image_shape=SHAPE[1:])
    start = time.perf_counter()
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target=target, params=params)
    return lib, time.perf_counter() - start


def run(ctx: Context) -> None:
    data = np.random.default_rng(0).uniform(-1, 1, SHAPE).astype("float32")
    gpu_out = None
    with ctx.check(STAGE, "ResNet-18 built for the GPU") as r:
        lib, seconds = build(ctx.target)
        kernels = dict(lib.kernels)
        r.numbers = f"{len(kernels)} kernels in {seconds:.1f} s"
        if ctx.device is None:
            most = max(check_launch(k, ctx.arch) for k in kernels.values())
            r.numbers += f"; all pass ptxas, most registers x threads {most}"
        else:
            module = runtime.GraphModule(lib["default"](ctx.device))
            module.set_input("data", data)
            module.run()
            gpu_out = module.get_output(0).numpy()
            ms = module.benchmark(ctx.device, number=10, repeat=5).median * 1e3
            r.numbers += f"; {ms:.2f} ms per run on the GPU"
    if ctx.device is None:
        return
    with ctx.check(STAGE, "GPU output = CPU build's output") as r:
        cpu_lib, seconds = build("llvm")
        module = runtime.GraphModule(cpu_lib["default"](tvm.cpu(0)))
        module.set_input("data", data)
        module.run()
        err = max_error(gpu_out, module.get_output(0).numpy()) if gpu_out is not None else float("inf")
        r.numbers = f"largest error {err:.1e} (CPU build {seconds:.1f} s)"
        if not err <= 1e-4:
            raise CheckFailed(r.numbers)
    with ctx.check(STAGE, "PyTorch eager ResNet-18 on the GPU") as r:
        r.numbers = torch_eager_ms()
        if r.numbers.endswith("not installed"):
            r.status = SKIPPED


def check_launch(kernel: Any, arch: str) -> int:
    """ptxas accepts the kernel and its registers fit its block; registers x threads."""
    launch = kernel.launch
    threads = launch.threads_per_block
    if threads > LIMITS.max_threads_per_block:
        raise CheckFailed(f"{kernel.entry_name}: {threads} threads per block")
    report = ptxas(kernel.obj, arch)
    need = report.get("registers", 0) * threads
    if need > LIMITS.registers_per_block:
        raise CheckFailed(f"{kernel.entry_name}: {report['registers']} registers x {threads} threads > "
                          f"{LIMITS.registers_per_block}: its launch would fail (out of resources)")
    return need


def torch_eager_ms() -> str:
    try:
        import torch
        import torchvision
    except ImportError:
        return "torch/torchvision not installed"
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet18().eval().cuda()
    x = torch.randn(*SHAPE, device="cuda")
    with torch.no_grad():
        for _ in range(10):
            model(x)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(50):
            model(x)
        end.record()
        torch.cuda.synchronize()
    return f"{start.elapsed_time(end) / 50:.2f} ms per run (fp32, TF32 off, cuDNN benchmark mode)"
