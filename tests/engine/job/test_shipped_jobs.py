"""The job files shipped in jobs/ are valid and describe the workloads they claim."""

from __future__ import annotations

from pathlib import Path

import pytest

from tunecli.engine.job.spec import load_job
from tunecli.engine.job.tasks import create_tasks

ROOT = Path(__file__).resolve().parents[3]
JOBS = sorted((ROOT / "jobs").glob("*.yaml"))


def test_there_are_jobs() -> None:
    assert {p.name for p in JOBS} >= {"quickstart.yaml", "seed_conv2d.yaml", "resnet18_conv2d.yaml",
                                      "dense_layers.yaml", "mobilenet_depthwise.yaml"}


@pytest.mark.parametrize("path", JOBS, ids=[p.stem for p in JOBS])
def test_job_is_valid(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # template files are relative to the repository root
    job = load_job(path.relative_to(ROOT))
    tasks = create_tasks(job)
    assert job.log == f"logs/{job.name}.log"
    assert all(len(t.config_space) > 0 and t.flop > 0 for t in tasks)


# (H=W, CI, CO, K, stride, padding) of ResNet-18's distinct conv2d layers (224x224 input).
RESNET18 = [(224, 3, 64, 7, 2, 3), (56, 64, 64, 3, 1, 1), (56, 64, 64, 1, 1, 0), (56, 64, 128, 3, 2, 1),
            (56, 64, 128, 1, 2, 0), (28, 128, 128, 3, 1, 1), (28, 128, 256, 3, 2, 1), (28, 128, 256, 1, 2, 0),
            (14, 256, 256, 3, 1, 1), (14, 256, 512, 3, 2, 1), (14, 256, 512, 1, 2, 0), (7, 512, 512, 3, 1, 1)]


def test_resnet18_has_its_twelve_conv2d_layers() -> None:
    tasks = create_tasks(load_job(ROOT / "jobs" / "resnet18_conv2d.yaml"))
    expected = [(1, h, h, ci, co, k, k, s, p, 1, "float32") for h, ci, co, k, s, p in RESNET18]
    assert [t.args for t in tasks] == expected
    for task, (h, ci, co, k, s, p) in zip(tasks, RESNET18, strict=True):
        out = (h + 2 * p - k) // s + 1
        assert task.flop == 2 * co * out * out * ci * k * k
    if tasks[0].target.llvm_triple.startswith("x86_64"):  # run as relay.build runs them (job.tasks)
        gemm = tasks[0].target.vector_bits >= 512  # NCHW written as vectors of pixels
        assert [t.name for t in tasks] == [
            "conv2d_nchw_winograd.x86" if (k, s) == (3, 1) else
            "conv2d_nchw_1x1.x86" if (h, k) == (56, 1) and gemm else
            "conv2d_nchw_pixels.x86" if k == 7 and gemm else  # the stem, vectorized over pixels
            "conv2d_nchw_blocked.x86" for h, _, _, k, s, p in RESNET18]


def test_seed_conv2d_is_the_seed_workload() -> None:
    tutorial, x86 = create_tasks(load_job(ROOT / "jobs" / "seed_conv2d.yaml"))
    assert tutorial.args == (1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1))
    assert len(tutorial.config_space) == 10454400
    assert tutorial.flop == x86.flop == 2 * 512 * 7 * 7 * 512 * 3 * 3


def test_resnet18_nchwc_job_holds_tvms_workloads_of_the_same_layers() -> None:
    from tests.engine.autotvm_templates import tophub_dir
    from tunecli.engine.log.record import load_from_file
    from tunecli.engine.log.task_records import denotes

    tasks = create_tasks(load_job(ROOT / "jobs" / "resnet18_conv2d_nchwc.yaml"))
    expected = [(("TENSOR", (1, ci, h, h), "float32"), ("TENSOR", (co, ci, k, k), "float32"), (s, s),
                 (p,) * 4, (1, 1), "NCHW", "NCHW", "float32") for h, ci, co, k, s, p in RESNET18]
    assert [t.args for t in tasks] == expected
    tvm = {inp.task.workload: inp.config for inp, _ in load_from_file(tophub_dir() / "llvm_v0.04.log")}
    for task in tasks:  # TVM's pre-tuned package has a record of every layer, decoding in our space
        assert denotes(task.config_space, tvm[task.workload])


def test_mobilenet_nchwc_job_holds_the_layers_of_the_nchw_job() -> None:
    nchw = create_tasks(load_job(ROOT / "jobs" / "mobilenet_depthwise.yaml"))
    nchwc = create_tasks(load_job(ROOT / "jobs" / "mobilenet_depthwise_nchwc.yaml"))
    layers = [(n, c, h, w, (kh, kw), (s, s), (p,) * 4) for n, h, w, c, _, kh, kw, s, p, _, _ in
              (t.args for t in nchw)]
    assert [(*t.args[0][1], t.args[1][1][2:], t.args[2], t.args[3]) for t in nchwc] == layers
    assert [t.flop for t in nchwc] == [t.flop for t in nchw]


def test_seed_conv2d_cuda_is_the_seed_workload_on_its_own_target() -> None:
    job = load_job(ROOT / "jobs" / "seed_conv2d_cuda.yaml")
    tutorial, direct = create_tasks(job)
    assert str(job.target) == "cuda" and job.runner.timing.check_correctness
    assert tutorial.args == (1, 7, 7, 512, 512, 3, 3, (1, 1), (1, 1))
    assert len(tutorial.config_space) == 10454400
    assert direct.name == "conv2d_nchw.cuda"
    assert tutorial.flop == direct.flop == 2 * 512 * 7 * 7 * 512 * 3 * 3


@pytest.mark.parametrize(("name", "tasks", "calls"), [("resnet18", 18, 36), ("mobilenet", 21, 29)])
def test_model_jobs_tune_every_task_of_their_network(name: str, tasks: int, calls: int) -> None:
    from tunecli.engine.job.network import job_tasks

    job = load_job(ROOT / "jobs" / f"{name}.yaml")
    found, weights = job_tasks(job)
    assert (len(found), sum(weights)) == (tasks, calls)  # distinct tasks; calls of them in the network
    assert job.tuner.budget is not None and job.tuner.budget >= 50 * tasks
