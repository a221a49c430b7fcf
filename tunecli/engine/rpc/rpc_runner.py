"""RPCRunner: measure built kernels on every free device of a key registered with a tracker.

``run(inputs, build_results)`` starts one thread per device (or ``n_parallel``). Each thread
asks the tracker for a session and pulls configs from a shared queue until it is empty, so a
batch spreads over the devices. A device that dies mid-measurement costs one attempt: its
config goes back to the queue for another device (after ``max_attempts`` attempts it becomes a
RUNTIME_DEVICE / RUN_TIMEOUT result). An overall deadline and a check that devices of the key
are still registered bound the wait, so every input gets exactly one result. A tracker that
stops answering (restarted) is waited for, ``tracker_grace`` seconds, with its servers; when
no device can be had the configs are left unmeasured (an RPCError saying why), never logged.

Once a task is set, each session starts by asking the server what it runs on
(:class:`tunecli.engine.rpc.device_info.DeviceInfo`); a device that cannot run the task's
target stops ``run`` with a TargetError before anything is measured or logged.

``run(..., on_result=hook)`` calls ``hook(index, result)`` in the caller's thread as each
result is ready (the device threads queue finished indices; the waiting loop reports them).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from tunecli.engine.measure.arrays import ArgSpecT
from tunecli.engine.measure.builder import BuildResult
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput, MeasureResult
from tunecli.engine.measure.runner import OnResult, RefOutputs, Runner, result_from_reply
from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.rpc.client import (
    TrackerLostError,
    connect_tracker,
    missing_key_hint,
    registered_keys,
    registered_servers,
)
from tunecli.engine.rpc.device_reference import DeviceReference
from tunecli.engine.rpc.device_session import check_device
from tunecli.engine.rpc.protocol import AuthenticationError
from tunecli.engine.rpc.remote import RemoteSession
from tunecli.engine.rpc.rpc_batch import Batch, error_result, report_ready
from tunecli.engine.rpc.session import MeasureRequest
from tunecli.engine.task.task import Task
from tunecli.errors import RPCError

logger = logging.getLogger("tunecli.rpc.runner")
#: Default ``tracker_grace``: a restarted tracker's servers register again within their retry
#: period (5 s) and ping period (2 s), and more slowly on a busy or emulated board.
TRACKER_GRACE_S = 30.0


class RPCRunner(Runner):
    """Run measurements on remote devices found through a tracker (TVM's ``RPCRunner``).

    The timing keyword arguments are TVM's; each one given overrides the same setting of
    ``timing`` (see :class:`TimingOptions` for what they mean and their defaults).

    Parameters
    ----------
    key : str
        Device key the servers registered with.
    host, port : str, int
        The tracker's address.
    priority : int
        Priority of this runner's requests (higher is served first).
    timeout : float, optional
        Seconds one measurement may take on the device.
    n_parallel : int, optional
        Devices used at once (default: every registered device of the key).
    number, repeat, min_repeat_ms : int, int, float, optional
        Timing parameters (TVM's ``time_evaluator``).
    cooldown_interval : float, optional
        Seconds a device rests after each measurement.
    enable_cpu_cache_flush : bool, optional
        Flush the CPU caches before each repeat.
    token : str or None
        Shared token (None reads ``TUNECLI_RPC_TOKEN``).
    max_attempts : int
        Devices a config is tried on before a lost device is reported as its result.
    check_correctness : bool, optional
        Compare outputs on the seeded inputs with the task's numpy ``reference`` or, for a task
        without one, with those of its first config run on a device of the key; a mismatch
        gives WRONG_ANSWER.
    warmup_ms : float, optional
        Milliseconds the device runs each kernel untimed before timing it (not in TVM).
    timing : TimingOptions, optional
        All the timing settings in one record.
    tracker_grace : float
        Seconds a batch waits for a tracker that stopped answering mid-batch (restarted), and
        then for a server of the key to register with it again, before it stops with its
        configs unmeasured (not in TVM).
    """

    reports_each_result = True
    measures_one_at_a_time = False  # a batch is spread over the devices

    def __init__(self, key: str, host: str, port: int, priority: int = 1, timeout: float | None = None,
                 n_parallel: int | None = None, number: int | None = None, repeat: int | None = None,
                 min_repeat_ms: float | None = None, cooldown_interval: float | None = None,
                 enable_cpu_cache_flush: bool | None = None, token: str | None = None,
                 max_attempts: int = 2, check_correctness: bool | None = None,
                 warmup_ms: float | None = None, *, timing: TimingOptions | None = None,
                 tracker_grace: float = TRACKER_GRACE_S) -> None:
        timing = (timing or TimingOptions()).with_values(
            timeout=timeout, number=number, repeat=repeat, min_repeat_ms=min_repeat_ms,
            cooldown_interval=cooldown_interval, enable_cpu_cache_flush=enable_cpu_cache_flush,
            check_correctness=check_correctness, warmup_ms=warmup_ms)
        super().__init__(n_parallel=n_parallel, timing=timing)
        self.key, self.host, self.port = key, host, port
        self.priority = priority
        self.token = token
        self.max_attempts = max(1, max_attempts)
        self.tracker_grace = tracker_grace
        self._reference = DeviceReference(key, host, port, priority, token, self.timeout)
        self.last_devices: list[str | None] = []

    def set_task(self, task: Task) -> None:
        """Remember the task and check that the tracker has devices of the key.

        Raises
        ------
        RPCError
            When no server of the key is registered.
        """
        self.task = task
        self._reference.clear()
        try:
            keys = registered_keys(registered_servers(self.host, self.port, self.token))
        except AuthenticationError:
            raise
        except RPCError as err:
            raise RPCError(f"RPCRunner: no tracker answers at {self.host}:{self.port}: {err}") from None
        if self.key not in keys:
            where = f"{self.host}:{self.port}"
            raise RPCError(
                f"RPCRunner: Cannot get remote devices of key {self.key!r}: "
                f"{missing_key_hint(where, self.key, keys)}. Check the key, or start a server of it "
                f"(`tunecli server --tracker {where} --key {self.key}`); `tunecli query --tracker {where}` "
                "shows the tracker's servers and queues.")

    def get_build_kwargs(self) -> dict:
        """Return extra builder arguments (none are needed for CPU devices)."""
        return {}

    def _devices_or_none(self) -> int | None:
        """Number of servers registered with the key; None when the tracker cannot be reached."""
        try:
            servers = registered_servers(self.host, self.port, self.token)
            return registered_keys(servers, unique=False).count(self.key)
        except AuthenticationError:
            raise
        except RPCError:
            return None

    def run(self, measure_inputs: Sequence[MeasureInput],
            build_results: Sequence[BuildResult | MeasureResult],
            on_result: OnResult | None = None) -> list[MeasureResult]:
        """Measure every successful build on the devices; pass failed builds through.

        Parameters
        ----------
        measure_inputs : list of MeasureInput
            What was built (only the count is used here).
        build_results : list of BuildResult or MeasureResult
            ``BuildResult(obj, entry_name, arg_specs, time_cost)`` or a failed MeasureResult.
        on_result : callable, optional
            ``on_result(index, result)``, called in this thread as soon as each result is ready
            (failed builds first, then measurements in the order they finish).

        Returns
        -------
        list of MeasureResult
            One per input, in input order.
        """
        n = len(build_results)
        if len(measure_inputs) != n:
            raise RPCError(f"RPCRunner.run: {len(measure_inputs)} inputs but {n} build results")
        todo = [i for i, res in enumerate(build_results) if not isinstance(res, MeasureResult)]
        batch = Batch(todo, n)
        requests: dict[int, MeasureRequest] = {}
        for i, res in enumerate(build_results):
            if isinstance(res, MeasureResult):
                batch.results[i] = res
                batch.ready.append(i)
            else:
                requests[i] = self.request(measure_inputs[i], res)
        report_ready(batch, on_result)
        if todo:
            self._measure_all(batch, build_results, requests, on_result)
        self.last_devices = batch.devices
        return [res for res in batch.results if res is not None]

    def _measure_all(self, batch: Batch, build_results: Sequence, requests: dict[int, MeasureRequest],
                     on_result: OnResult | None = None) -> None:
        n_workers = min(len(batch.queue), self.n_parallel or max(1, self._devices_or_none() or 0))
        per_config = self.timeout + self.timing.cooldown_interval + 2.0
        batch.deadline = time.monotonic() + per_config * (len(batch.queue) + 2)
        threads = [threading.Thread(target=self._device_loop, args=(batch, build_results, requests),
                                    name=f"tunecli-rpcrunner-{i}", daemon=True) for i in range(n_workers)]
        for thread in threads:
            thread.start()
        reason, last_check = MeasureErrorNo.RUNTIME_DEVICE, time.monotonic()
        try:
            while any(t.is_alive() for t in threads):
                time.sleep(0.05)
                report_ready(batch, on_result)
                with batch.lock:
                    finished = not batch.queue and batch.busy == 0
                    idle = batch.busy == 0
                    lost_since, deadline = batch.tracker_lost_since, batch.deadline
                if finished or batch.failure is not None:
                    break
                now = time.monotonic()
                if lost_since is None and now > deadline:
                    reason = MeasureErrorNo.RUN_TIMEOUT
                    break
                if idle and now - last_check > 2.0:
                    last_check = now
                    if self._devices_gone(batch):
                        break
        finally:  # also when the hook raises (Ctrl-C while reporting): never leave threads measuring
            batch.abort_all()
            for thread in threads:
                thread.join(5.0)
        if batch.failure is not None:  # a bug, not a device failure: let it propagate
            raise batch.failure
        report_ready(batch, on_result)
        unmeasured = sum(1 for res in batch.results if res is None)
        if unmeasured and reason == MeasureErrorNo.RUNTIME_DEVICE:
            # Not the configs' fault: leave them unmeasured (a resumed tune measures them) rather
            # than logging errors that would count as trials.
            if self._devices_or_none() is None:
                raise RPCError(f"RPCRunner: the tracker {self.host}:{self.port} is gone (it does not "
                               f"answer): {unmeasured} config(s) of this batch were not measured; restart "
                               "the tracker and its device servers and run again to resume")
            raise RPCError(f"RPCRunner: no device of key {self.key!r} is available: {unmeasured} "
                           "config(s) of this batch were not measured; start a device server of "
                           "that key and run again to resume")
        message = "measurement deadline passed"
        with batch.lock:
            for i, res in enumerate(batch.results):
                if res is None:
                    batch.results[i] = error_result(reason, message, self.timeout)
                    batch.ready.append(i)
        report_ready(batch, on_result)

    def _devices_gone(self, batch: Batch) -> bool:
        """Whether the batch should stop waiting: no device of the key while the tracker answers
        steadily, or a tracker lost (or back without a server of the key) for ``tracker_grace``."""
        devices = self._devices_or_none()
        if devices is None:
            batch.tracker_lost(f"{self.host}:{self.port}", self.key, self.tracker_grace)
        elif devices:
            batch.tracker_back(f"{self.host}:{self.port}", self.key)
        with batch.lock:
            lost_since = batch.tracker_lost_since
        if lost_since is None:
            return devices == 0
        return time.monotonic() - lost_since > self.tracker_grace

    def _device_loop(self, batch: Batch, build_results: list, requests: dict[int, MeasureRequest]) -> None:
        """One device's worth of work; an unexpected exception is handed to :meth:`run`."""
        try:
            self._serve_queue(batch, build_results, requests)
        except Exception as err:  # noqa: BLE001 - re-raised in the caller's thread
            batch.failure = err
            batch.stop.set()

    def _serve_queue(self, batch: Batch, build_results: list, requests: dict[int, MeasureRequest]) -> None:
        """Get a session, measure queued configs until the queue is empty or the device fails, repeat.

        Five failures in a row end the loop; while the tracker is lost, only ``tracker_grace`` does."""
        failures = 0
        while not batch.stop.is_set():
            with batch.lock:
                if not batch.queue:
                    return
            session = self._request_session(batch)
            if session is None:
                with batch.lock:
                    lost_since = batch.tracker_lost_since
                if lost_since is None:
                    failures += 1
                    if failures >= 5:
                        return
                elif time.monotonic() - lost_since > self.tracker_grace:
                    return
                batch.stop.wait(0.2 if lost_since is None else 1.0)
                continue
            failures = 0
            batch.tracker_back(f"{self.host}:{self.port}", self.key)
            try:
                self._measure_on(session, batch, build_results, requests)
            finally:
                with batch.lock:
                    batch.connections.discard(session)
                session.close()

    def _request_session(self, batch: Batch) -> RemoteSession | None:
        """A session with a free device of the key; None (the tracker's loss noted) when none came."""
        try:
            tracker = connect_tracker(self.host, self.port, self.token, timeout=2.0)
        except AuthenticationError as err:
            logger.warning("RPCRunner: %s", err)
            return None
        except RPCError as err:
            logger.info("RPCRunner: %s", err)
            batch.tracker_lost(f"{self.host}:{self.port}", self.key, self.tracker_grace)
            return None
        with batch.lock:
            batch.connections.add(tracker)
        try:
            if batch.stop.is_set():
                return None
            session = tracker.request(self.key, self.priority, max_retry=1,
                                      wait_timeout=max(0.1, batch.deadline - time.monotonic()))
        except TrackerLostError as err:
            if not batch.stop.is_set():
                logger.info("RPCRunner: %s", err)
                batch.tracker_lost(f"{self.host}:{self.port}", self.key, self.tracker_grace)
            return None
        except RPCError as err:
            if not batch.stop.is_set():
                logger.info("RPCRunner: %s", err)
            return None
        finally:
            with batch.lock:
                batch.connections.discard(tracker)
            tracker.close()
        with batch.lock:
            batch.connections.add(session)
        if batch.stop.is_set():
            session.abort()
        return session

    def _measure_on(self, session: RemoteSession, batch: Batch, build_results: list,
                    requests: dict[int, MeasureRequest]) -> None:
        """Measure queued configs through ``session`` until the queue is empty or the device fails.

        Raises
        ------
        TargetError
            When the device cannot run the task's target.
        """
        device = f"{session.addr[0]}:{session.addr[1]}"
        target = getattr(self.task, "target", None)
        if target is not None:
            try:
                check_device(session, target, "RPCRunner")
            except RPCError as err:
                logger.warning("RPCRunner: device %s lost: %s", device, err)
                return
        while not batch.stop.is_set():
            with batch.lock:
                if not batch.queue:
                    return
                index = batch.queue.popleft()
                batch.attempts[index] += 1
                batch.busy += 1
            build = build_results[index]
            start = time.monotonic()
            try:
                reply = session.measure(requests[index])
            except RPCError as err:
                self._device_lost(batch, index, device, err, time.monotonic() - start)
                return
            result = result_from_reply(reply, float(build.time_cost), time.monotonic() - start, self.timeout)
            if result.error_no == MeasureErrorNo.WRONG_ANSWER:
                logger.warning("Wrong Answer! %s", reply.error)
            with batch.lock:
                batch.results[index] = result
                batch.devices[index] = device
                batch.ready.append(index)
                batch.busy -= 1
            if self.timing.cooldown_interval > 0:
                batch.stop.wait(self.timing.cooldown_interval)

    def _device_lost(self, batch: Batch, index: int, device: str, err: RPCError, elapsed: float) -> None:
        """Give a config whose device failed to another device, or record the failure."""
        logger.warning("RPCRunner: device %s lost: %s", device, err)
        with batch.lock:
            batch.busy -= 1
            if batch.attempts[index] < self.max_attempts and not batch.stop.is_set():
                batch.queue.appendleft(index)
                return
            code = MeasureErrorNo.RUN_TIMEOUT if elapsed >= self.timeout else MeasureErrorNo.RUNTIME_DEVICE
            batch.results[index] = error_result(code, f"device {device} failed: {err}", elapsed)
            batch.devices[index] = device
            batch.ready.append(index)

    def reference_outputs(self, task: Task, specs: tuple[ArgSpecT, ...],
                          outputs: tuple[int, ...]) -> RefOutputs:
        """Reference outputs of ``task`` (see :class:`DeviceReference`), made once per layout."""
        return self._reference.outputs(task, specs, outputs)

    def close(self) -> None:
        """Stop the worker that builds reference configs (started again when needed)."""
        self._reference.close()
