"""The measure section of a job becomes a builder and a runner of its kind, timed as the job says."""

from __future__ import annotations

from pathlib import Path

from tunecli.engine.job.measure_setup import close_measure_option, make_measure_option
from tunecli.engine.job.spec import load_job
from tunecli.engine.measure import LocalRunner, TimingOptions
from tunecli.engine.rpc.rpc_runner import RPCRunner


def test_the_job_timing_reaches_the_runner_whole(tmp_path: Path) -> None:
    job_text = """\
name: t
tasks: [{template: dense.x86, args: {M: 8, N: 8, K: 8}}]
tuner: {kind: random, n_trial: 1}
measure:
  runner: {kind: KIND, number: 2, repeat: 5, min_repeat_ms: 1.5, timeout: 3, warmup_ms: 7,
           cooldown_interval: 0.25, enable_cpu_cache_flush: true, check_correctness: true EXTRA}
"""
    expected = TimingOptions(number=2, repeat=5, min_repeat_ms=1.5, timeout=3, warmup_ms=7,
                             cooldown_interval=0.25, enable_cpu_cache_flush=True, check_correctness=True)
    for kind, extra, cls in (("local", "", LocalRunner),
                             ("rpc", ", key: k, tracker: '127.0.0.1:9190', priority: 3", RPCRunner)):
        path = tmp_path / f"{kind}.yaml"
        path.write_text(job_text.replace("KIND", kind).replace(" EXTRA", extra))
        job = load_job(path)
        option = make_measure_option(job)
        runner = option["runner"]
        assert type(runner) is cls and job.runner.timing == expected and runner.timing is job.runner.timing
        close_measure_option(option)
    assert (runner.key, runner.host, runner.port, runner.priority) == ("k", "127.0.0.1", 9190, 3)


def test_runner_options_not_given_take_their_declared_default(tmp_path: Path) -> None:
    path = tmp_path / "rpc.yaml"
    path.write_text("name: t\ntasks: [{template: dense.x86, args: [8, 8, 8]}]\n"
                    "tuner: {kind: random, n_trial: 1}\n"
                    "measure: {runner: {kind: rpc, key: k, tracker: 'h:9190'}}\n")
    job = load_job(path)
    assert job.runner.options == {"key": "k", "tracker": ("h", 9190)} and job.runner.timing == TimingOptions()
    option = make_measure_option(job)
    assert option["runner"].priority == 1
    close_measure_option(option)
