"""The checks a session with an NVIDIA GPU runs, in one call (about 8 minutes on an H200).

1. ``tunecli.cuda(0)`` exists (cuda-bindings, driver, GPU) and reports its compute capability;
2. a vector add built for ``cuda`` runs and matches numpy, and is timed with CUDA events;
3. a user's GPU conv2d template file (``tests/faces/tutorials/gpu_conv_template.py``, the kind of
   template TVM's ``tune_conv2d_cuda.py`` tunes; resnet's last layer: 1x512x7x7, 512 3x3 filters)
   is built for ``--configs`` random configs of its space; each one that builds
   runs on fresh random inputs and must match ``conv2d_nchw_python`` (configs beyond the GPU's
   limits must be refused when built, never fail at launch);
4. the conv2d is tuned for ``--trials`` trials (LocalBuilder / LocalRunner with
   ``check_correctness``; every measured config is checked against numpy), the best config is
   built under ``apply_history_best``, checked and timed, and compared with PyTorch's cuDNN
   conv2d (fp32, TF32 off) when torch is importable;
5. each built-in GPU template (``conv2d_nchw.cuda``, ``depthwise_conv2d_nchw.cuda``,
   ``dense_small_batch.gpu``) on a real layer: ``--configs`` random configs built and checked
   against its numpy reference on fresh inputs, then ``--template-trials`` trials tuned with
   ``check_correctness`` (no wrong answer allowed) and the best one's speed;
6. a device server on this machine (``run_server``, key ``gpu``) says it has the GPU, and an
   ``RPCRunner`` measures ``conv2d_nchw.cuda`` configs on it (checked against numpy);
7. ResNet-18 (1x3x224x224) built with ``relay.build`` for ``cuda`` (fallback configs) runs on the
   GPU through the graph executor, its output matches the CPU (``llvm``) build's on the same input,
   and one run is timed (``GraphModule.benchmark``);
8. a short table last; exit status 1 when any check failed.

Usage (from the repository root; see the README's CUDA section for the device call)::

    python3 scripts/gpu_check.py [--trials 200] [--configs 24] [--template-trials 24] [--out DIR]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tunecli as tvm  # noqa: E402
import tunecli.contrib.graph_executor as runtime  # noqa: E402
from tunecli import autotvm, relay, te  # noqa: E402
from tunecli.engine.rpc.tracker import Tracker  # noqa: E402
from tunecli.engine.task.fallback_config import FallbackConfigEntity  # noqa: E402
from tunecli.engine.task.template_file import load_template_file  # noqa: E402
from tunecli.errors import InstantiationError  # noqa: E402
from tunecli.topi.testing import conv2d_nchw_python  # noqa: E402

TEMPLATE_FILE = ROOT / "tests" / "faces" / "tutorials" / "gpu_conv_template.py"
SEED = (1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1))
ROWS: list[tuple[str, str, str]] = []
F32 = "float32"
#: The built-in GPU templates on real layers (resnet's last conv, a mobilenet depthwise, a classifier).
TEMPLATES = {
    "conv2d_nchw.cuda": (("TENSOR", (1, 512, 7, 7), F32), ("TENSOR", (512, 512, 3, 3), F32), (1, 1),
                         (1, 1, 1, 1), (1, 1), F32),
    "depthwise_conv2d_nchw.cuda": (("TENSOR", (1, 256, 56, 56), F32), ("TENSOR", (256, 1, 3, 3), F32), (1, 1),
                                   (1, 1, 1, 1), (1, 1), F32),
    "dense_small_batch.gpu": (("TENSOR", (1, 4096), F32), ("TENSOR", (1000, 4096), F32), None, F32),
}
SERVER_CODE = """
import sys
from tunecli.engine.rpc.server import run_server
run_server(("127.0.0.1", int(sys.argv[1])), "gpu", host="127.0.0.1", port=9300, port_end=9400, token="",
           on_ready=lambda h, p: print(p, flush=True), on_device=lambda d: print(d.describe(), flush=True))
"""


def row(check: str, ok: bool | None, detail: str) -> None:
    status = "ok" if ok else ("skip" if ok is None else "FAIL")
    ROWS.append((check, status, detail))
    print(f"[{status}] {check}: {detail}", flush=True)


def vector_add(dev: tvm.Device) -> None:
    n = 1 << 20
    A, B = te.placeholder((n,), name="A"), te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    bo, ti = s[C].split(C.op.axis[0], factor=256)
    s[C].bind(bo, te.thread_axis("blockIdx.x"))
    s[C].bind(ti, te.thread_axis("threadIdx.x"))
    func = tvm.build(s, [A, B, C], target="cuda", name="vadd")
    rng = np.random.default_rng()
    a, b = (rng.uniform(size=n).astype("float32") for _ in range(2))
    args = [tvm.nd.array(a, device=dev), tvm.nd.array(b, device=dev), tvm.nd.empty((n,), "float32", dev)]
    func(*args)
    dev.sync()
    ok = np.allclose(args[2].numpy(), a + b, rtol=1e-6)
    t = func.time_evaluator(func.entry_name, dev, number=100, repeat=3)(*args).mean
    row("vector add", ok, f"{n} floats, {t * 1e6:.1f} us, {3 * 4 * n / t / 1e9:.0f} GB/s")


def conv_inputs(seed: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    N, H, W, CO, CI, KH, KW, strides, padding = SEED
    rng = np.random.default_rng(seed)
    a = rng.uniform(size=(N, CI, H, W)).astype(np.float32)
    w = rng.uniform(size=(CO, CI, KH, KW)).astype(np.float32)
    return a, w, conv2d_nchw_python(a, w, strides, padding)


def run_conv(func: tvm.runtime.Module, dev: tvm.Device, number: int = 0) -> tuple[bool, float]:
    a, w, c = conv_inputs()
    args = [tvm.nd.array(a, device=dev), tvm.nd.array(w, device=dev), tvm.nd.empty(c.shape, "float32", dev)]
    func(*args)
    dev.sync()
    ok = np.allclose(args[2].numpy(), c, rtol=1e-3, atol=1e-3)
    t = func.time_evaluator(func.entry_name, dev, number=number, repeat=3)(*args).mean if number else 0.0
    return ok, t


def conv_configs(dev: tvm.Device, template: object, count: int) -> None:
    task = autotvm.task.create("faces/gpu_direct_conv", args=SEED, target="cuda")
    rng = random.Random()
    built = refused = wrong = 0
    for _ in range(count):
        config = task.config_space.get(rng.randrange(len(task.config_space)))
        try:
            with tvm.target.Target("cuda"):
                with autotvm.ApplyConfig(config):
                    s, bufs = template(*SEED)
                func = tvm.build(s, bufs)
        except InstantiationError:
            refused += 1
            continue
        built += 1
        ok, _ = run_conv(func, dev)
        if not ok:
            wrong += 1
            print(f"  wrong answer: config {config.index} {config}", flush=True)
    row("conv2d random configs", wrong == 0 and built > 0,
        f"{built} built and ran ({wrong} wrong), {refused} refused by GPU verification")


def tune_conv(dev: tvm.Device, template: object, trials: int, out: Path) -> float | None:
    task = autotvm.task.create("faces/gpu_direct_conv", args=SEED, target="cuda")
    log = out / "conv2d_cuda.log"
    log.unlink(missing_ok=True)
    option = autotvm.measure_option(
        builder=autotvm.LocalBuilder(timeout=20),
        runner=autotvm.LocalRunner(number=20, repeat=3, min_repeat_ms=50, timeout=10, check_correctness=True))
    start = time.time()
    autotvm.tuner.GATuner(task).tune(n_trial=trials, measure_option=option,
                                     callbacks=[autotvm.callback.log_to_file(str(log))])
    records = list(autotvm.record.load_from_file(str(log)))
    errors: dict[int, int] = {}
    for _, result in records:
        errors[int(result.error_no)] = errors.get(int(result.error_no), 0) + 1
    wrong = errors.get(int(autotvm.MeasureErrorNo.WRONG_ANSWER), 0)
    row("tuning", wrong == 0 and errors.get(0, 0) > 0,
        f"{len(records)} trials in {time.time() - start:.0f} s; error counts {dict(sorted(errors.items()))}")
    if not errors.get(0):
        return None
    with autotvm.apply_history_best(str(log)):
        with tvm.target.Target("cuda"):
            s, bufs = template(*SEED)
            func = tvm.build(s, bufs)
    ok, t = run_conv(func, dev, number=400)
    flop = 2 * 512 * 7 * 7 * 512 * 3 * 3
    row("best tuned conv2d", ok, f"{t * 1e6:.1f} us, {flop / t / 1e9:.0f} GFLOPS")
    return t


def cudnn_time() -> float | None:
    try:
        import torch
    except ImportError:
        row("cuDNN conv2d (PyTorch)", None, "torch is not installed")
        return None
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    a, w, c = conv_inputs()
    x, k = torch.from_numpy(a).cuda(), torch.from_numpy(w).cuda()
    for _ in range(20):
        y = torch.nn.functional.conv2d(x, k, padding=1)
    torch.cuda.synchronize()
    ok = np.allclose(y.cpu().numpy(), c, rtol=1e-3, atol=1e-3)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(400):
        torch.nn.functional.conv2d(x, k, padding=1)
    end.record()
    torch.cuda.synchronize()
    t = start.elapsed_time(end) / 1e3 / 400
    row("cuDNN conv2d (PyTorch)", ok, f"{t * 1e6:.1f} us (fp32, TF32 off)")
    return t


def template_arrays(task: autotvm.task.Task, bufs: list, seed: int | None = None) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, tuple(int(d) for d in b.shape)).astype(b.dtype) for b in bufs[:-1]]


def template_configs(dev: tvm.Device, name: str, count: int) -> None:
    """Fallback + ``count`` random configs of template ``name``: built, run on fresh inputs, checked."""
    task = autotvm.task.create(name, args=TEMPLATES[name], target="cuda")
    rng = random.Random()
    configs = [FallbackConfigEntity()] + [task.config_space.get(rng.randrange(len(task.config_space)))
                                          for _ in range(count)]
    built = refused = wrong = 0
    for config in configs:
        try:
            s, bufs = task.instantiate(config)
            func = tvm.build(s, bufs, target="cuda")
        except InstantiationError:
            refused += 1
            continue
        built += 1
        inputs = template_arrays(task, bufs)
        expected = task.reference(*inputs)
        args = [tvm.nd.array(a, device=dev) for a in inputs]
        args.append(tvm.nd.empty(expected.shape, str(expected.dtype), dev))
        func(*args)
        dev.sync()
        if not np.allclose(args[-1].numpy(), expected, rtol=1e-3, atol=1e-3):
            wrong += 1
            print(f"  {name}: wrong answer: config {config}", flush=True)
    row(f"{name} random configs", wrong == 0 and built > 0,
        f"{built} built and ran ({wrong} wrong), {refused} refused by GPU verification")


def template_tuning(name: str, trials: int, out: Path) -> None:
    """Tune template ``name`` for ``trials`` trials with every measurement checked against numpy."""
    task = autotvm.task.create(name, args=TEMPLATES[name], target="cuda")
    log = out / f"{name}.log"
    log.unlink(missing_ok=True)
    option = autotvm.measure_option(
        builder=autotvm.LocalBuilder(timeout=20),
        runner=autotvm.LocalRunner(number=20, repeat=3, min_repeat_ms=20, timeout=10, check_correctness=True))
    autotvm.tuner.XGBTuner(task).tune(n_trial=min(trials, len(task.config_space)), measure_option=option,
                                      callbacks=[autotvm.callback.log_to_file(str(log))])
    results = [r for _, r in autotvm.record.load_from_file(str(log))]
    wrong = sum(int(r.error_no) == int(autotvm.MeasureErrorNo.WRONG_ANSWER) for r in results)
    good = [r for r in results if int(r.error_no) == 0]
    best = min((float(np.mean(r.costs)) for r in good), default=None)
    detail = f"{len(results)} trials, {len(good)} ok, {wrong} wrong"
    if best:
        detail += f"; best {best * 1e6:.1f} us, {task.flop / best / 1e9:.0f} GFLOPS"
    row(f"{name} tuning", wrong == 0 and bool(good), detail)


def rpc_measure(trials: int) -> None:
    """A device server of this machine reports its GPU; RPCRunner measures conv2d_nchw.cuda on it."""
    tracker = Tracker("127.0.0.1", 0, 0, token="")
    server = subprocess.Popen([sys.executable, "-c", SERVER_CODE, str(tracker.port)], stdout=subprocess.PIPE,
                              text=True, cwd=ROOT)
    try:
        assert server.stdout is not None
        server.stdout.readline()
        described = server.stdout.readline().strip()
        if "CUDA GPU" not in described:
            row("RPC server GPU", False, f"the server describes itself as {described!r}")
            return
        task = autotvm.task.create("conv2d_nchw.cuda", args=TEMPLATES["conv2d_nchw.cuda"], target="cuda")
        option = autotvm.measure_option(
            builder=autotvm.LocalBuilder(timeout=20),
            runner=autotvm.RPCRunner("gpu", "127.0.0.1", tracker.port, number=20, repeat=3, timeout=10,
                                     check_correctness=True))
        results: list = []
        autotvm.tuner.RandomTuner(task).tune(
            n_trial=trials, measure_option=option,
            callbacks=[lambda _tuner, _inputs, res: results.extend(res)])
        good = [r for r in results if int(r.error_no) == 0]
        errors = sorted({int(r.error_no) for r in results})
        row("RPC server GPU", bool(good) and int(autotvm.MeasureErrorNo.WRONG_ANSWER) not in errors,
            f"{described}; {len(good)} of {len(results)} configs measured there (error kinds {errors})")
    finally:
        server.terminate()
        server.wait(10)
        tracker.stop()


def resnet18_network(dev: tvm.Device) -> None:
    """ResNet-18 at 224x224 built for cuda and for the CPU: same output, and the GPU's time per run."""
    mod, params = relay.testing.resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 224, 224))
    data = np.random.default_rng(0).uniform(-1, 1, (1, 3, 224, 224)).astype(F32)
    outputs, seconds = {}, {}
    for target, device in (("cuda", dev), ("llvm", tvm.cpu(0))):
        start = time.perf_counter()
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target=target, params=params)
        seconds[target] = time.perf_counter() - start
        module = runtime.GraphModule(lib["default"](device))
        module.set_input("data", data)
        module.run()
        outputs[target] = module.get_output(0).numpy()
        if target == "cuda":
            kernels = len(lib.kernels)
            ms = module.benchmark(device, number=10, repeat=5).median * 1e3
    error = float(np.max(np.abs(outputs["cuda"] - outputs["llvm"])))
    ok = bool(np.allclose(outputs["cuda"], outputs["llvm"], rtol=1e-3, atol=1e-5))
    row("ResNet-18 224 on the GPU", ok,
        f"{kernels} kernels built in {seconds['cuda']:.1f} s; {ms:.2f} ms per run (fallback configs); "
        f"max |GPU - CPU| = {error:.2e}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200, help="tuning trials of the conv2d template")
    parser.add_argument("--configs", type=int, default=24, help="random conv2d configs to build and check")
    parser.add_argument("--template-trials", type=int, default=24, help="tuning trials per GPU template")
    parser.add_argument("--out", type=Path, default=Path("."), help="where the tuning logs go")
    opts = parser.parse_args()
    opts.out.mkdir(parents=True, exist_ok=True)
    dev = tvm.cuda(0)
    if not dev.exist:
        try:
            tvm.nd.empty((1,), "float32", dev)
        except Exception as err:  # noqa: BLE001 - report why there is no GPU
            row("CUDA device", False, str(err))
        return 1
    row("CUDA device", True, f"cuda(0), compute capability {dev.compute_version}")
    template = load_template_file(TEMPLATE_FILE).gpu_direct_conv
    ours = theirs = None
    for name, step in (("vector add", lambda: vector_add(dev)),
                       ("conv2d random configs", lambda: conv_configs(dev, template, opts.configs))):
        try:
            step()
        except Exception:  # noqa: BLE001 - one failed check must not hide the others
            row(name, False, traceback.format_exc(limit=3).strip().splitlines()[-1])
    try:
        ours = tune_conv(dev, template, opts.trials, opts.out)
    except Exception:  # noqa: BLE001
        row("tuning", False, traceback.format_exc(limit=3).strip().splitlines()[-1])
    try:
        theirs = cudnn_time()
    except Exception:  # noqa: BLE001
        row("cuDNN conv2d (PyTorch)", False, traceback.format_exc(limit=3).strip().splitlines()[-1])
    steps = [(f"{name} random configs", lambda name=name: template_configs(dev, name, opts.configs // 2))
             for name in TEMPLATES]
    steps += [(f"{name} tuning", lambda name=name: template_tuning(name, opts.template_trials, opts.out))
              for name in TEMPLATES]
    steps.append(("ResNet-18 224 on the GPU", lambda: resnet18_network(dev)))
    steps.append(("RPC server GPU", lambda: rpc_measure(8)))
    for name, step in steps:
        try:
            step()
        except Exception:  # noqa: BLE001 - one failed check must not hide the others
            row(name, False, traceback.format_exc(limit=3).strip().splitlines()[-1])
    if ours and theirs:
        row("tuned / cuDNN speed", ours <= theirs / 0.8, f"{theirs / ours:.2f}x cuDNN (goal >= 0.8x)")
    print("\n| check | status | detail |\n| --- | --- | --- |")
    for check, status, detail in ROWS:
        print(f"| {check} | {status} | {detail} |")
    failed = [check for check, status, _ in ROWS if status == "FAIL" and check != "tuned / cuDNN speed"]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
