"""apply_network's check of a network against its reference, and what its report says of its times."""

from __future__ import annotations

import statistics

import numpy as np

from tunecli.engine.actions.apply_network import NetworkApplyReport, NetworkLatency, _nearly_constant
from tunecli.engine.measure.time_stats import MachineLoad, time_stats


def test_a_nearly_constant_reference_makes_the_check_uninformative() -> None:
    uniform = np.full((1, 1000), 1e-3, dtype="float32")
    uniform[0, 0] += 1e-12  # a uniform softmax, as relay.testing's MobileNet gives
    assert _nearly_constant(uniform)
    varied = np.random.default_rng(0).uniform(size=(1, 1000)).astype("float32")
    assert not _nearly_constant(varied / varied.sum())
    assert _nearly_constant(np.zeros((0,), dtype="float32"))


def report_with(tuned: list[float], untuned: list[float], threads: int = 1) -> NetworkApplyReport:
    report = NetworkApplyReport("net", "net.log", "tiny", "llvm")
    report.latencies.append(NetworkLatency(threads, statistics.median(tuned), statistics.median(untuned),
                                           None, time_stats(tuned), time_stats(untuned), None))
    return report


def test_a_tuned_network_slower_than_the_untuned_one_is_one_warning_in_the_report() -> None:
    """The numbers of issue 27's short tune (43.1 and 54.2 ms against 27.3 and 26.7 ms)."""
    report = report_with([43.1e-3, 54.2e-3, 44.0e-3], [27.3e-3, 26.7e-3, 27.5e-3])
    assert report.slower == ["1 thread: the tuned build is slower than the untuned one (44 ms vs 27.3 ms, "
                             "0.62x): tune longer, or keep the untuned build"]
    data = report.as_dict()
    assert data["slower"] == report.slower and data["ok"]  # a warning, not a failure
    assert data["latencies"][0]["tuned_stats"]["rounds"] == 3


def test_a_tuned_network_as_fast_as_the_untuned_one_gives_no_warning() -> None:
    assert report_with([27.4e-3, 27.0e-3, 27.9e-3], [27.3e-3, 26.7e-3, 27.5e-3]).slower == []
    assert report_with([20.0e-3] * 3, [27.3e-3] * 3, threads=2).slower == []


def test_rounds_that_disagree_and_a_busy_machine_are_notes_of_the_report() -> None:
    report = report_with([4.7e-3, 35.8e-3, 5.0e-3], [5.1e-3, 5.2e-3, 5.0e-3], threads=2)
    report.load = MachineLoad((2.4, 2.2), cores=2)
    assert report.notes[0].startswith("the machine was busy while timing: load average 2.40, 2.20 on 2 cores")
    assert report.notes[1].startswith("2 threads: the timing rounds disagree (tuned 4.7..35.8 ms")
    assert len(report.notes) == 2 and report.as_dict()["notes"] == report.notes
