"""apply_job's timing: contenders take turns, one round each, and a failure stops only its owner."""

from __future__ import annotations

from tunecli.engine.job import apply_job
from tunecli.engine.job.apply_job import _interleaved, kernel_stem
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
