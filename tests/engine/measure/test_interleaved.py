"""Contenders timed in turn: one round each, a failure stops only its owner, each time a median."""

from __future__ import annotations

from tunecli.engine.measure import interleaved
from tunecli.engine.measure.interleaved import median_seconds, time_interleaved
from tunecli.engine.measure.result import MeasureErrorNo
from tunecli.engine.measure.timing import MeasureReply
from tunecli.engine.measure.timing_options import TimingOptions


def test_rounds_are_interleaved_and_a_failure_stops_only_its_contender(monkeypatch) -> None:
    monkeypatch.setattr(interleaved, "SETTLE_S", 0.0)
    calls: list[tuple[str, int]] = []

    def contender(name: str, cost: float, fails_at: int | None = None):
        def measure(timing: TimingOptions) -> MeasureReply:
            assert timing.repeat == 1  # one round per turn
            calls.append((name, timing.number))
            if fails_at is not None and sum(1 for n, _ in calls if n == name) == fails_at:
                return MeasureReply((), int(MeasureErrorNo.RUNTIME_DEVICE), "crashed")
            return MeasureReply((cost,))
        return measure

    replies = time_interleaved({"tuned": contender("tuned", 1.0), "default": contender("default", 2.0, 2),
                            "numpy": contender("numpy", 3.0)}, TimingOptions(number=5, repeat=3))
    assert [name for name, _ in calls] == ["tuned", "default", "numpy", "tuned", "default", "numpy",
                                           "tuned", "numpy"]
    assert all(number == 5 for _, number in calls)
    assert replies["tuned"].costs == (1.0, 1.0, 1.0) and replies["numpy"].costs == (3.0, 3.0, 3.0)
    assert replies["default"].error_no == MeasureErrorNo.RUNTIME_DEVICE


def test_a_contenders_time_is_the_median_of_its_rounds() -> None:
    assert median_seconds(MeasureReply((3.0, 1.0, 100.0))) == 3.0  # one slow round does not move it
    assert median_seconds(MeasureReply((1.0, 2.0))) == 1.5
    assert median_seconds(MeasureReply((), int(MeasureErrorNo.RUNTIME_DEVICE), "crashed")) is None
    assert median_seconds(None) is None
