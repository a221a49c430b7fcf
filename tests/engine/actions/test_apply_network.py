"""apply_network's check of a network against its reference, and what its report says of its times."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from tunecli.engine.actions.apply_network import NetworkApplyReport, NetworkLatency
from tunecli.engine.job.network_report import nearly_constant
from tunecli.engine.measure.time_stats import MachineLoad, time_stats


def test_a_nearly_constant_reference_makes_the_check_uninformative() -> None:
    uniform = np.full((1, 1000), 1e-3, dtype="float32")
    uniform[0, 0] += 1e-12  # a uniform softmax, as relay.testing's MobileNet gives
    assert nearly_constant(uniform)
    varied = np.random.default_rng(0).uniform(size=(1, 1000)).astype("float32")
    assert not nearly_constant(varied / varied.sum())
    assert nearly_constant(np.zeros((0,), dtype="float32"))


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


@pytest.mark.slow
def test_a_record_that_makes_the_network_slower_is_set_back_and_the_faster_build_exported(
        tmp_path: Path) -> None:
    """A log with a record of a slow convolution config timed in a lucky moment
    (``tests.engine.job.lucky_network``): apply finds it, sets it back, says so and exports that build."""
    pytest.importorskip("onnx")
    from tests.engine.job.lucky_network import add_lucky_slow_record, conv_task, write_network_job
    from tunecli.engine.actions.apply_network import apply_network
    from tunecli.runtime import load_module

    job = write_network_job(tmp_path)
    log = tmp_path / "net.log"
    conv = conv_task(job)
    slow = add_lucky_slow_record(log, conv)

    report = apply_network(job, str(log), export=str(tmp_path / "out" / "net.so"))
    assert report.ok and report.correct
    assert report.slower  # the tuned build: several times slower than the untuned one
    assert report.kept in ("reverted", "untuned")
    [conv_back] = [t for t in report.reverted if t.workload == conv.workload]
    assert conv_back.config == slow and conv_back.untuned in ("package", "nearest", "default")
    assert conv_back.without < conv_back.with_record
    text = "\n".join(report.guard)
    assert f"set back: conv2d_NCHWc.x86 1x32x28x28 * 64x32x1x1: config {slow} of the log" in text
    assert "to make it permanent" in text
    times = report.guard_times
    assert times[report.kept].median < times["tuned"].median  # what is exported is faster than the tuned
    data = report.as_dict()
    assert data["kept"] == report.kept and slow in [t["config"] for t in data["reverted"]]
    assert data["guard"] == report.guard and json.loads(json.dumps(data))["kept"] == report.kept

    exported = load_module(str(tmp_path / "out" / "net.so"))  # the kept build, and it runs
    assert exported is not None


@pytest.mark.slow
def test_graph_tuner_choices_that_make_the_network_slower_are_set_back(tmp_path: Path) -> None:
    """A job with a graph tuner stage whose output chose a slow convolution config (the tuner's
    records timed in a lucky moment): apply builds under it, finds the network slower than untuned,
    and exports the build without the graph tuner's choices, saying so."""
    pytest.importorskip("onnx")
    from tests.engine.job.lucky_network import add_slow_graph_choice, conv_task, write_network_job
    from tunecli.engine.actions.apply_network import apply_network

    job = write_network_job(tmp_path)
    job, _ = add_slow_graph_choice(job, conv_task(job))
    assert job.graph_tuner is not None

    report = apply_network(job, job.log, export=str(tmp_path / "out" / "net.so"))
    assert report.ok and report.correct and report.graph_log == str(tmp_path / "net.graph.log")
    assert report.slower  # the graph tuner's choice: several times slower than the untuned build
    text = "\n".join(report.guard)
    assert report.graph_set_back and report.kept == "reverted" and report.reverted == [], text
    assert f"the graph tuner's choices ({report.graph_log}) made the network slower" in text
    assert "kept the tuned build without the graph tuner's choices" in text
    times = report.guard_times
    assert times["without graph"].median < times["tuned"].median
    assert report.as_dict()["graph_set_back"] is True
    assert (tmp_path / "out" / "net.so").is_file()
