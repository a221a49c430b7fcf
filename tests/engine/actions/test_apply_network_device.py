"""apply's network guard on an RPC device: a network job measured through a tracker for a board
(an emulated AArch64 one, ``tests.arm_board``) is run and timed there, and a tuned build slower
than the untuned one there beyond the noise is guarded as on this machine, each candidate build
run and timed on the board.

The scenario is a user's: the job was tuned one trial per task (each task's untuned config, then
the template's fallback) before a package answered its convolution with a config several times
faster on the board (``TUNECLI_TOPHUB``); the log's record is no longer the untuned config, so
the tuned build runs the old config and the untuned build the package's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.arm_board import AARCH64_NEON
from tunecli.engine.log import tophub
from tunecli.engine.log.record import encode, load_from_file

pytestmark = pytest.mark.timeout(900)
EM_AARCH64 = 183


@pytest.mark.slow
def test_a_record_that_makes_the_network_slower_on_the_board_is_set_back_there(
        arm_board, arm_tracker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("onnx")
    from tests.engine.job.lucky_network import conv_task, write_network_job
    from tunecli.engine.actions.apply_network import apply_network
    from tunecli.engine.actions.job_file import tune_job

    runner = (f'{{kind: rpc, key: {arm_board.key}, tracker: "127.0.0.1:{arm_tracker.port}", number: 1, '
              "repeat: 5, min_repeat_ms: 0, warmup_ms: 0, timeout: 120}")
    job = write_network_job(tmp_path, AARCH64_NEON, runner)  # tuned: the untuned config, marked
    conv = conv_task(job)
    [(then, _)] = [(i, r) for i, r in load_from_file(job.log) if i.task.workload == conv.workload]
    assert then.config.untuned == "default"

    trials = tmp_path / "trials.log"  # the board's fastest of a few configs becomes a package record
    tune_job(job.path, n_trial=12, log=str(trials))
    timed = [(res.mean_cost, inp, res) for inp, res in load_from_file(trials)
             if res.ok and inp.task.workload == conv.workload]
    _, fast, fast_res = min(timed, key=lambda t: t[0])
    untuned_cost = min(cost for cost, inp, _ in timed if int(inp.config.index) == int(then.config.index))
    assert untuned_cost > 2 * fast_res.mean_cost  # vector code: several times faster on the board
    packages = tmp_path / "packages"
    packages.mkdir()
    name = tophub.package_files(conv.target)[0].name
    fast.config.untuned = None
    (packages / name).write_text(encode(fast, fast_res) + "\n")
    monkeypatch.setenv(tophub.ENV_VAR, str(packages))

    export = tmp_path / "out" / "net.so"
    report = apply_network(job, job.log, export=str(export))
    assert report.device is not None and "aarch64" in report.device
    assert report.ok and report.correct
    [latency] = report.latencies
    assert latency.threads == 0 and latency.tuned_stats is not None and latency.tuned_stats.rounds == 5
    assert report.slower and report.slower[0].startswith("the device: the tuned build is slower")
    assert report.kept in ("reverted", "untuned")
    [conv_back] = [t for t in report.reverted if t.workload == conv.workload]
    assert conv_back.config == int(then.config.index) and conv_back.untuned == "package"
    assert conv_back.without < conv_back.with_record
    text = "\n".join(report.guard)
    assert text.startswith("1 task(s) with a record marked untuned that the untuned build no longer runs")
    assert "the device: the tuned build ran slower than the untuned one" in text
    assert f"set back: conv2d_nchw_spatial_pack.arm_cpu 1x32x28x28 * 64x32x1x1: config {then.config.index}" \
        in text
    data = export.read_bytes()
    assert data[:4] == b"\x7fELF" and int.from_bytes(data[18:20], "little") == EM_AARCH64
