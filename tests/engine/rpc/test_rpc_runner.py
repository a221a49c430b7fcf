"""RPCRunner over a real tracker and real server processes: spreading, failures, priorities."""

from __future__ import annotations

import logging
import threading
import time
import types

import pytest

from tests.engine.kernels_ir import ARG_SPECS, CRASH, HANG, VADD, VSUB, compile_ir
from tests.engine.rpc import rpc_templates  # noqa: F401  (registers rpc_test/add_or_sub)
from tunecli.engine.measure import LocalBuilder, Runner, create_measure_batch, measure_option
from tunecli.engine.measure.batch import should_overlap
from tunecli.engine.measure.builder import BuildResult
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.rpc.client import connect_tracker
from tunecli.engine.rpc.rpc_runner import RPCRunner
from tunecli.engine.rpc.session import MeasureRequest
from tunecli.engine.rpc.tracker import Tracker
from tunecli.engine.task.task import create
from tunecli.errors import RPCError, TuneError

from .conftest import free_servers, wait_for


def built(ir: str, entry: str) -> BuildResult:
    return BuildResult(compile_ir(ir), entry, ARG_SPECS, 0.01, (2,))


def inputs(n: int) -> list[MeasureInput]:
    return [MeasureInput("llvm", None, i) for i in range(n)]


def start_servers(procs, tracker, key: str, count: int) -> list:
    servers = [procs(key, tracker_port=tracker.port) for _ in range(count)]
    wait_for(lambda: free_servers(tracker, key) == count, what=f"{count} servers registered")
    return servers


def test_batch_spreads_over_two_servers_and_passes_failed_builds_through(procs, tracker):
    servers = start_servers(procs, tracker, "cpu2", 2)
    runner = RPCRunner("cpu2", "127.0.0.1", tracker.port, timeout=5, number=1, repeat=4,
                       min_repeat_ms=25, cooldown_interval=0)
    runner.set_task(None)
    assert runner.get_build_kwargs() == {}
    failed = MeasureResult(("tb", RuntimeError("x")), MeasureErrorNo.COMPILE_HOST, 0.5, 1.0)
    builds = [built(VADD, "vadd") for _ in range(8)]
    builds.insert(3, failed)
    results = runner.run(inputs(9), builds)
    assert len(results) == 9 and results[3] is failed
    for i, res in enumerate(results):
        if i != 3:
            assert res.error_no == MeasureErrorNo.NO_ERROR, res
            assert len(res.costs) == 2 and 0 < res.costs[0] <= res.costs[1] < 1e-3  # min, max dropped
            assert res.all_cost >= 0.09 and res.timestamp <= time.time()
    used = {dev for i, dev in enumerate(runner.last_devices) if i != 3}
    assert used == {f"127.0.0.1:{s.port}" for s in servers}
    wait_for(lambda: free_servers(tracker, "cpu2") == 2, what="devices free after the batch")


def test_crash_and_hang_become_error_results(procs, tracker):
    start_servers(procs, tracker, "one", 1)
    runner = RPCRunner("one", "127.0.0.1", tracker.port, timeout=0.5, cooldown_interval=0)
    start = time.monotonic()
    results = runner.run(inputs(4), [built(VADD, "vadd"), built(CRASH, "crash"), built(HANG, "hang"),
                                     built(VADD, "vadd")])
    assert [int(r.error_no) for r in results] == [0, 4, 7, 0]
    assert isinstance(results[1].costs[1], TuneError) and "SIGSEGV" in results[1].costs[0]
    assert time.monotonic() - start < 10


def test_check_correctness_with_the_tasks_numpy_reference(procs, tracker):
    start_servers(procs, tracker, "chk", 1)
    task = types.SimpleNamespace(name="vadd", args=(), target="llvm", reference=lambda a, b: a + b)
    runner = RPCRunner("chk", "127.0.0.1", tracker.port, cooldown_interval=0, check_correctness=True)
    runner.set_task(task)
    results = runner.run([MeasureInput("llvm", task, i) for i in range(2)],
                         [built(VADD, "vadd"), built(VSUB, "vsub")])
    assert [int(r.error_no) for r in results] == [0, 5]


def test_check_correctness_against_the_first_config_run_on_a_device(procs, tracker):
    """A task without a numpy reference: its first config is built here, run on a device of the
    key, and its outputs are the reference the candidates are compared with on the devices."""
    start_servers(procs, tracker, "ref", 1)
    task = create("rpc_test/add_or_sub", (64,), "llvm")
    assert task.reference is None
    builder = LocalBuilder(n_parallel=1)
    runner = RPCRunner("ref", "127.0.0.1", tracker.port, cooldown_interval=0, check_correctness=True)
    try:
        measure_batch = create_measure_batch(task, measure_option(builder, runner))
        configs = [task.config_space.get(i) for i in (1, 0, 1)]
        results = measure_batch([MeasureInput(task.target, task, config) for config in configs])
    finally:
        builder.close()
        runner.close()
    assert [r.error_no for r in results] == [MeasureErrorNo.WRONG_ANSWER, MeasureErrorNo.NO_ERROR,
                                             MeasureErrorNo.WRONG_ANSWER]
    assert "differ from the reference" in results[0].costs[0]


def test_server_killed_mid_batch_loses_no_input(procs, tracker, caplog):
    caplog.set_level(logging.WARNING, logger="tunecli.rpc.runner")
    victim, survivor = start_servers(procs, tracker, "flaky", 2)
    runner = RPCRunner("flaky", "127.0.0.1", tracker.port, timeout=5, number=1, repeat=3,
                       min_repeat_ms=40, cooldown_interval=0)
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("res", runner.run(
        inputs(12), [built(VADD, "vadd") for _ in range(12)])))
    thread.start()
    wait_for(lambda: free_servers(tracker, "flaky") == 0, what="both devices busy")
    time.sleep(0.3)
    victim.kill()
    thread.join(60)
    assert not thread.is_alive()
    results = box["res"]
    assert len(results) == 12
    assert all(r.error_no == MeasureErrorNo.NO_ERROR for r in results), results
    assert f"device 127.0.0.1:{victim.port} lost" in caplog.text     # its config went elsewhere
    assert runner.last_devices.count(f"127.0.0.1:{survivor.port}") > 6
    wait_for(lambda: [s["addr"][1] for s in tracker.summary()["server_info"]] == [survivor.port],
             what="dead server dropped by the tracker")


def test_no_device_left_stops_quickly_and_leaves_the_configs_unmeasured(procs, tracker):
    """Losing every device is not the configs' fault: they get no error record (which would count
    as a trial) but an RPCError, after the results that are ready have been reported."""
    (server,) = start_servers(procs, tracker, "gone", 1)
    server.kill()
    wait_for(lambda: tracker.summary()["server_info"] == [], what="server dropped")
    runner = RPCRunner("gone", "127.0.0.1", tracker.port, timeout=2)
    with pytest.raises(RPCError, match="Cannot get remote devices"):
        runner.set_task(None)
    failed = MeasureResult(("tb", RuntimeError("x")), MeasureErrorNo.COMPILE_HOST, 0.5, 1.0)
    reported = []
    start = time.monotonic()
    with pytest.raises(RPCError, match="no device of key 'gone' is available: 3 config.s. of this batch"):
        runner.run(inputs(4), [failed] + [built(VADD, "vadd")] * 3,
                   on_result=lambda i, res: reported.append((i, res)))
    assert reported == [(0, failed)]
    assert time.monotonic() - start < 8


def test_a_mistyped_key_is_refused_naming_the_keys_the_tracker_has(procs, tracker):
    start_servers(procs, tracker, "rk3399", 1)
    runner = RPCRunner("rk3339", "127.0.0.1", tracker.port)
    where = f"127.0.0.1:{tracker.port}"
    with pytest.raises(RPCError) as err:
        runner.set_task(None)
    assert str(err.value) == (
        f"RPCRunner: Cannot get remote devices of key 'rk3339': the tracker {where} has no server of key "
        f"'rk3339' (its keys: 'rk3399'). Check the key, or start a server of it (`tunecli server --tracker "
        f"{where} --key rk3339`); `tunecli query --tracker {where}` shows the tracker's servers and queues.")
    RPCRunner("rk3399", "127.0.0.1", tracker.port).set_task(None)


def test_waiting_requests_get_a_freed_device_by_priority(procs, tracker):
    start_servers(procs, tracker, "busy", 1)
    holder = connect_tracker("127.0.0.1", tracker.port).request("busy")
    order = []

    def client(name: str, priority: int) -> None:
        with connect_tracker("127.0.0.1", tracker.port) as trk:
            session = trk.request("busy", priority=priority, wait_timeout=30)
            order.append(name)
            request = MeasureRequest(compile_ir(VADD), "vadd", ARG_SPECS, TimingOptions(min_repeat_ms=50))
            assert session.measure(request).error_no == 0
            session.close()

    threads = []
    for pending, (name, prio) in enumerate([("low", 1), ("high", 5)], start=1):
        threads.append(threading.Thread(target=client, args=(name, prio)))
        threads[-1].start()
        wait_for(lambda n=pending: tracker.summary()["queue_info"]["busy"].get("pending") == n)
    assert order == []
    holder.close()
    for thread in threads:
        thread.join(30)
    assert order == ["high", "low"]


def test_runner_with_token(procs):
    trk = Tracker("127.0.0.1", 0, 0, token="tok")
    try:
        procs("sec", tracker_port=trk.port, token="tok")
        wait_for(lambda: free_servers(trk, "sec") == 1, what="server registered with token")
        results = RPCRunner("sec", "127.0.0.1", trk.port, token="tok", cooldown_interval=0).run(
            inputs(2), [built(VADD, "vadd")] * 2)
        assert [r.error_no for r in results] == [0, 0]
        wrong = RPCRunner("sec", "127.0.0.1", trk.port, token="bad")
        with pytest.raises(RPCError, match="token refused"):
            wrong.set_task(None)
        missing = RPCRunner("sec", "127.0.0.1", trk.port, token="")
        with pytest.raises(RPCError, match="requires a token"):
            missing.set_task(None)
    finally:
        trk.stop()


def test_rpc_runner_is_a_runner_made_from_tvm_keywords_or_timing_options():
    base = TimingOptions(number=7, repeat=9)
    runner = RPCRunner("key", "127.0.0.1", 9190, 2, 3, None, 6, min_repeat_ms=5, timing=base)
    assert (runner.priority, runner.timeout) == (2, 3.0)
    assert runner.timing == TimingOptions(number=6, repeat=9, min_repeat_ms=5, timeout=3)
    assert isinstance(runner, Runner) and runner.reports_each_result and runner.get_build_kwargs() == {}
    assert not should_overlap(LocalBuilder(n_parallel=1), runner, True)  # it spreads batches over devices
    with pytest.raises(TuneError, match="timing option warmup_ms"):
        RPCRunner("key", "127.0.0.1", 9190, warmup_ms=-1)


@pytest.mark.slow
def test_a_tracker_that_died_is_named_as_gone_not_as_missing_devices(procs, tracker):
    start_servers(procs, tracker, "orphan", 1)
    runner = RPCRunner("orphan", "127.0.0.1", tracker.port, timeout=2, tracker_grace=1.0)
    runner.set_task(None)
    tracker.stop()  # dies between the check and the batch, as a tracker killed mid-tune
    with pytest.raises(RPCError, match=f"the tracker 127.0.0.1:{tracker.port} is gone .it does not answer.: "
                                       "2 config.s. of this batch were not measured; restart the tracker"):
        runner.run(inputs(2), [built(VADD, "vadd")] * 2)
    with pytest.raises(RPCError, match=f"no tracker answers at 127.0.0.1:{tracker.port}: .*is a tracker "
                                       "running there"):
        runner.set_task(None)


def test_a_server_port_given_as_the_tracker_is_named_as_such(procs):
    server = procs("dev")  # without tracker
    where = f"127.0.0.1:{server.port}"
    with pytest.raises(RPCError, match=f"no tracker answers at {where}: {where} is not RPC Tracker: .*a "
                                       "device server's port"):
        RPCRunner("dev", "127.0.0.1", server.port).set_task(None)


def test_a_tracker_restarted_mid_tune_costs_a_pause_not_the_tune(procs, caplog):
    """The tracker stops between two batches and comes back on its port a moment later: the batch
    waits for it and for the server to register again, then measures everything."""
    caplog.set_level(logging.INFO, logger="tunecli.rpc.runner")
    first = Tracker("127.0.0.1", 0, 0, token="")
    port = first.port
    procs("phoenix", tracker_port=port)
    wait_for(lambda: free_servers(first, "phoenix") == 1, what="server registered")
    runner = RPCRunner("phoenix", "127.0.0.1", port, timeout=5, cooldown_interval=0, tracker_grace=20)
    runner.set_task(None)
    assert [r.error_no for r in runner.run(inputs(2), [built(VADD, "vadd")] * 2)] == [0, 0]
    first.stop()
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("res", runner.run(
        inputs(3), [built(VADD, "vadd")] * 3)))
    thread.start()
    wait_for(lambda: "does not answer" in caplog.text, what="the runner noticing the lost tracker")
    second = Tracker("127.0.0.1", port, port + 1, token="")
    try:
        thread.join(30)
        assert not thread.is_alive()
        assert [r.error_no for r in box["res"]] == [0, 0, 0], box["res"]
        assert (f"the tracker 127.0.0.1:{port} does not answer (stopped or restarted?); waiting up to 20 s "
                "for it and a server of key 'phoenix' to come back") in caplog.text
        assert f"the tracker 127.0.0.1:{port} and a device of key 'phoenix' are back after" in caplog.text
    finally:
        second.stop()
