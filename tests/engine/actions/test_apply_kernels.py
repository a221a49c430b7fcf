"""apply_job's timing: contenders take turns, one round each, and a failure stops only its owner."""

from __future__ import annotations

import textwrap

import pytest

from tunecli.engine.job import apply_job
from tunecli.engine.job.apply_job import _interleaved, kernel_stem
from tunecli.engine.job.numpy_baseline import _BLAS_GETTERS, _blas_function, single_blas_thread
from tunecli.engine.job.tune_job import tune_job
from tunecli.engine.log.record import load_from_file
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.measure.timing import MeasureReply
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.task.task import create


def test_rounds_are_interleaved_and_a_failure_stops_only_its_contender(monkeypatch) -> None:
    monkeypatch.setattr(apply_job, "SETTLE_S", 0.0)
    calls: list[tuple[str, int]] = []

    def contender(name: str, cost: float, fails_at: int | None = None):
        def measure(timing: TimingOptions) -> MeasureReply:
            assert timing.repeat == 1  # one round per turn
            calls.append((name, timing.number))
            if fails_at is not None and sum(1 for n, _ in calls if n == name) == fails_at:
                return MeasureReply((), int(MeasureErrorNo.RUNTIME_DEVICE), "crashed")
            return MeasureReply((cost,))
        return measure

    replies = _interleaved({"tuned": contender("tuned", 1.0), "default": contender("default", 2.0, 2),
                            "numpy": contender("numpy", 3.0)}, TimingOptions(number=5, repeat=3))
    assert [name for name, _ in calls] == ["tuned", "default", "numpy", "tuned", "default", "numpy",
                                           "tuned", "numpy"]
    assert all(number == 5 for _, number in calls)
    assert replies["tuned"].costs == (1.0, 1.0, 1.0) and replies["numpy"].costs == (3.0, 3.0, 3.0)
    assert replies["default"].error_no == MeasureErrorNo.RUNTIME_DEVICE


def test_kernel_names_carry_the_job_and_the_workload() -> None:
    small = create("tutorial/matmul", (16, 16, 16, "float32"), "llvm")
    big = create("tutorial/matmul", (32, 32, 32, "float32"), "llvm")
    names = {kernel_stem(job, 0, task) for job in ("resnet", "bert") for task in (small, big)}
    assert len(names) == 4
    assert kernel_stem("resnet", 0, small).startswith("resnet_task0_tutorial_matmul_")
    assert kernel_stem("resnet", 0, small) == kernel_stem("resnet", 0, small)  # stable from run to run
    assert kernel_stem("3d-net", 1, small).startswith("k_3d_net_task1_")  # a C identifier


def test_apply_times_the_best_config_as_the_tuner_measured_it(tmp_path) -> None:
    """apply's tuned time agrees with the tuner's record of the same config.

    The two measure the same kernel with the same runner settings, so a large gap means apply
    timed it under different conditions (it was 3x when the threads of this process's BLAS,
    woken by the float64 reference, spun beside the kernel's threads).
    """
    job = tmp_path / "job.yaml"
    log = tmp_path / "dense.log"
    job.write_text(textwrap.dedent(f"""\
        name: agree
        log: {log}
        tasks:
          - template: dense.x86
            args: {{M: 256, N: 256, K: 256}}
        tuner: {{kind: random, n_trial: 6, seed: 0}}
        measure:
          builder: {{n_parallel: 2}}
          runner: {{number: 5, repeat: 3, min_repeat_ms: 20, check_correctness: true}}
        """))
    tune_job(str(job))
    best = min(res.mean_cost for _, res in load_from_file(str(log)) if res.ok)
    (applied,) = apply_job.apply_job(str(job), str(log)).tasks
    assert applied.correct and applied.tuned is not None
    assert applied.tuned < 2.0 * best, (applied.tuned, best)


def test_single_blas_thread_restores_the_thread_count() -> None:
    getter = _blas_function(_BLAS_GETTERS)
    if getter is None:
        pytest.skip("numpy's BLAS exposes no thread-count getter")
    before = int(getter())
    with single_blas_thread():
        assert int(getter()) == 1
    assert int(getter()) == before
