"""What apply says about its own times: robust statistics of rounds and the notes that doubt them."""

from __future__ import annotations

import resource
import time

import pytest

from tests.engine.measure.measure_helpers import spin_elsewhere, spin_here
from tunecli.engine.measure.time_stats import (
    BUSY_OTHERS,
    LoadWindow,
    MachineLoad,
    compare_with_log,
    median_uncertain,
    rounds_note,
    significant_digits,
    slower_than_untuned,
    time_stats,
)
from tunecli.engine.measure.timing import MeasureReply
from tunecli.engine.measure.worker import Worker


def test_the_median_is_the_time_and_one_slow_round_does_not_move_it() -> None:
    stats = time_stats([0.0435e-3, 0.399e-3, 0.0437e-3])
    assert stats is not None
    assert stats.median == pytest.approx(0.0437e-3)
    assert (stats.low, stats.high, stats.rounds) == (0.0435e-3, 0.399e-3, 3)


def test_rounds_that_agree_give_no_note() -> None:
    stats = time_stats([1.00e-3, 1.02e-3, 0.99e-3, 1.01e-3])
    assert stats is not None and not stats.disagree
    assert rounds_note("task 0", {"tuned": stats, "numpy": None}) is None


def test_the_contenders_whose_rounds_disagree_are_named_in_one_line() -> None:
    wild = time_stats([0.0435e-3, 0.399e-3, 0.0437e-3, 0.288e-3])
    calm = time_stats([1.00e-3, 1.02e-3, 0.99e-3])
    assert wild is not None and wild.disagree
    assert rounds_note("task 0", {"tuned": wild, "default config": calm, "numpy": None}) == (
        "task 0: the timing rounds disagree (tuned 0.0435..0.399 ms (164%)): its times are uncertain")


def test_a_failed_or_untimed_contender_has_no_statistics() -> None:
    assert time_stats(None) is None
    assert time_stats(MeasureReply((), 4, "crashed")) is None
    assert time_stats(MeasureReply((2e-3, 4e-3))).median == pytest.approx(3e-3)
    single = time_stats([2e-3])
    assert single is not None and single.spread == 0 and not single.disagree


def test_a_kernel_far_slower_than_the_log_says_so() -> None:
    assert compare_with_log("task 1", 2.27e-3, 0.045e-3) == (
        "task 1: timed 2.27 ms, 50.4x the log's 0.045 ms for the same config: the machine may be busier "
        "than when it was tuned")
    assert compare_with_log("task 1", 0.06e-3, 0.045e-3) is None  # within 1.5x
    assert compare_with_log("task 1", 2e-3, None) is None  # the config is not the log's


def test_a_tuned_build_slower_than_the_untuned_one_is_one_line() -> None:
    untuned = time_stats([27.3e-3, 26.7e-3, 27.9e-3])
    line = slower_than_untuned("1 thread", time_stats([43.1e-3, 54.2e-3, 42.0e-3]), untuned)
    assert line == ("1 thread: the tuned build is slower than the untuned one (43.1 ms vs 27.3 ms, 0.63x): "
                    "tune longer, or keep the untuned build")
    assert slower_than_untuned("1 thread", time_stats([27.5e-3] * 3), untuned) is None  # within 5%
    assert slower_than_untuned("1 thread", None, untuned) is None


def test_rounds_that_overlap_are_too_close_to_call_slower() -> None:
    """A median 30% above, but the rounds of both reach the same times: noise, not a regression."""
    untuned = time_stats([1.0e-3, 1.4e-3, 2.0e-3, 1.1e-3])
    assert slower_than_untuned("task 0", time_stats([1.3e-3, 1.9e-3, 1.2e-3, 2.2e-3]), untuned) is None


def test_the_machine_is_busy_when_other_work_ran_on_every_sample() -> None:
    quiet = MachineLoad((1.1, 1.2), cores=2)
    assert not quiet.busy and quiet.note() is None
    busy = MachineLoad((2.3, 2.1), cores=2)
    assert busy.busy
    assert busy.note() == ("the machine was busy while timing: load average 2.30, 2.10 on 2 cores (about 1.1 "
                           "other processes running beside apply's): times may be inflated")
    assert not MachineLoad((2.5, 1.0), cores=2).busy  # a build before timing, not other work during it


def test_work_that_starts_mid_timing_makes_the_machine_busy() -> None:
    """The load average lags a minute behind; the window counts the CPU time other work takes in it."""
    window = LoadWindow()
    time.sleep(0.3)
    spin_elsewhere(1.5, 2)
    time.sleep(1.7)
    load = window.finish()
    assert load.measured is not None and load.seconds >= 1.9
    assert load.others > 1.0 and load.busy
    assert load.note() is not None and f"of {load.cores} cores busy beside apply's" in load.note()


def test_apply_own_processes_are_not_other_work() -> None:
    """Workers on every core are apply's own: their CPU time is subtracted, whatever their threads."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    window = LoadWindow()
    spinners = [spin_here(1.5) for _ in range(2)]
    for spinner in spinners:
        spinner.wait()
    load = window.finish()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    assert load.measured is not None
    assert load.own_cpu >= spent - 0.05
    assert load.others <= load.cores - (spent - 0.05) / load.seconds + 0.05


def test_a_measurement_worker_running_through_the_window_is_apply_own() -> None:
    """The worker apply times kernels in lives before and after the window: its CPU time is apply's."""
    worker = Worker(name="tunecli-test-spin")
    try:
        worker.call("tests.engine.measure.measure_helpers:pid", None, timeout=60)  # started and ready
        window = LoadWindow()
        outcome = worker.call("tests.engine.measure.measure_helpers:spin", 1.0, timeout=30)
        load = window.finish()
    finally:
        worker.close()
    assert load.own_cpu >= outcome.value - 0.05, (load, outcome.value)


def test_a_measured_window_decides_busy_whatever_the_load_average() -> None:
    lagging = MachineLoad((3.5, 3.4), cores=2, measured=0.1, seconds=12.0)
    assert not lagging.busy and lagging.note() is None  # load that stopped before the timing
    busy = MachineLoad((0.2, 0.9), cores=2, measured=BUSY_OTHERS + 0.6, seconds=12.0)
    assert busy.busy
    assert busy.note() == ("the machine was busy while timing: other work kept about 1.1 of 2 cores busy "
                           "beside apply's over 12 s (load average 0.20, 0.90): times may be inflated")


def test_a_median_has_the_digits_down_to_its_rounds_spread() -> None:
    """Quartiles 0.2004 and 0.2731 ms (36%) support one digit past the leading one; 0.3% supports four."""
    assert significant_digits(time_stats([0.2002e-3, 0.2005e-3, 0.3457e-3])) == 2
    assert significant_digits(time_stats([0.1790e-3, 0.1794e-3, 0.1801e-3])) == 4
    assert significant_digits(time_stats([1.00e-3, 1.02e-3, 1.05e-3, 1.07e-3])) == 3
    assert significant_digits(time_stats([0.45e-3, 7.36e-3, 20.0e-3])) == 1
    assert significant_digits(time_stats([0.1794e-3])) == 4  # one round: no spread to go by
    assert significant_digits(None, most=8) == 8


def test_a_median_is_uncertain_on_a_busy_machine_or_when_its_rounds_disagree() -> None:
    calm, wild = time_stats([1.0, 1.01, 1.02]), time_stats([0.54, 0.65, 0.69, 0.88, 0.90])
    quiet = MachineLoad((0.2, 0.3), cores=2, measured=0.1, seconds=10.0)
    busy = MachineLoad((6.0, 6.2), cores=2, measured=1.9, seconds=10.0)
    assert not median_uncertain(quiet, calm, None) and not median_uncertain(None, calm)
    assert median_uncertain(busy, calm) and median_uncertain(quiet, calm, wild)
    assert not median_uncertain(busy, None, None)  # nothing timed


def test_other_work_during_the_timing_makes_its_medians_uncertain() -> None:
    """Two processes that are not this one's keep the cores busy while a contender is timed."""
    window = LoadWindow()
    spin_elsewhere(1.2, 2)
    time.sleep(1.4)
    assert median_uncertain(window.finish(), time_stats([1.0, 1.01, 1.02]))
