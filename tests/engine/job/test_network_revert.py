"""Which tasks make a tuned network differ from the untuned one, and the build with them set back.

The network and its log: ``tests.engine.job.lucky_network``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engine.job.lucky_network import add_lucky_slow_record, conv_task, slowest_config, write_network_job
from tunecli.engine.job.network import build_network, load_network
from tunecli.engine.job.network_revert import (
    RevertedHistory,
    differing_tasks,
    guard_network,
    stale_line,
    stale_untuned,
)
from tunecli.engine.log.history_best import ApplyHistoryBest, untuned_answer
from tunecli.engine.log.record import encode, load_from_file
from tunecli.engine.measure.result import MeasureInput

pytest.importorskip("onnx")


def test_a_log_of_the_untuned_configs_changes_no_convolution_and_a_lucky_record_changes_it(
        tmp_path: Path) -> None:
    job = write_network_job(tmp_path)
    network, log = load_network(job), tmp_path / "net.log"
    conv = conv_task(job)
    untuned = build_network(network, job.target)
    history = ApplyHistoryBest(str(log))
    assert differing_tasks(build_network(network, job.target, history), untuned, history, job.target) == []

    slow = add_lucky_slow_record(log, conv)
    history = ApplyHistoryBest(str(log))
    with job.target:
        assert int(history.query(job.target, conv.workload).index) == slow  # the lucky record answers
    tuned = build_network(network, job.target, history)
    differing = differing_tasks(tuned, untuned, history, job.target)
    assert conv.workload in differing

    # setting every differing task back gives the untuned build exactly: same graph, same kernels
    reverted = build_network(network, job.target, RevertedHistory(history, differing))
    assert json.loads(reverted.graph) == json.loads(untuned.graph)
    assert {n: k.obj for n, k in reverted.kernels.items()} == {n: k.obj for n, k in untuned.kernels.items()}
    with job.target:
        assert untuned_answer(job.target, conv.workload).index != slow


def test_a_tuned_build_with_the_untuned_configs_is_kept_without_timing_anything(tmp_path: Path) -> None:
    """A short tune whose records all keep the untuned configs builds the untuned network: a slower
    reading is the machine's noise, and no build is set back (nor timed)."""
    job = write_network_job(tmp_path)
    network = load_network(job)
    history = ApplyHistoryBest(str(tmp_path / "net.log"))
    tuned, untuned = build_network(network, job.target, history), build_network(network, job.target)

    def nothing_to_time(builds: object) -> dict:
        raise AssertionError(f"timed {builds}")

    guard = guard_network("1 thread", tuned, untuned, history, job.target,
                          lambda context: build_network(network, job.target, context), nothing_to_time)
    assert (guard.kept, guard.build, guard.reverted) == ("tuned", tuned, ())
    assert guard.lines == ("1 thread: the tuned build runs the untuned build's config in every kernel: the "
                           "difference is the machine's timing noise, not the log's records",)


def test_a_record_marked_untuned_that_the_untuned_build_no_longer_runs_is_named(tmp_path: Path) -> None:
    """The mark names the untuned config of the day of the tune: a log whose marked record is of
    another config (a package or a fallback rule changed since) is told apart from a current one."""
    job = write_network_job(tmp_path)
    network, log = load_network(job), tmp_path / "net.log"
    conv = conv_task(job)
    history = ApplyHistoryBest(str(log))
    assert stale_untuned(build_network(network, job.target, history), history) == []

    [(inp, res)] = [(i, r) for i, r in load_from_file(log) if i.task.workload == conv.workload]
    then = conv.config_space.get(slowest_config(conv))
    then.untuned = inp.config.untuned  # the untuned config of another day, marked as tune marks it
    old = tmp_path / "old.log"
    old.write_text(encode(MeasureInput(conv.target, conv, then), res) + "\n")
    history = ApplyHistoryBest(str(old))
    stale = stale_untuned(build_network(network, job.target, history), history)
    assert stale == [conv.workload]
    assert stale_line(stale).startswith("1 task(s) with a record marked untuned that the untuned "
                                        "build no longer runs")
    assert "ranked as an ordinary record" in stale_line(stale)
    assert stale_line(stale).endswith(": conv2d_NCHWc.x86 1x32x28x28 * 64x32x1x1")
