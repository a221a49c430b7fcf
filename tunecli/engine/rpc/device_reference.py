"""Reference outputs for the correctness check of remote measurement (``check_correctness``).

As for the local runner (:mod:`tunecli.engine.measure.expected_outputs`): a task's numpy
``reference`` is called here, on the tuner side; a task without one has its first valid config
built here (in a worker process of this machine) and run once on a device of the runner's key,
which sends the outputs back. Either way the expected outputs travel to the devices inside each
:class:`MeasureRequest` (``ref_outputs``), where the candidate's outputs are compared.
"""

from __future__ import annotations

import logging

from tunecli.engine.measure import expected_outputs as reference
from tunecli.engine.measure.arrays import ArgSpecT
from tunecli.engine.measure.runner import SEED, RefOutputs
from tunecli.engine.measure.worker import Worker
from tunecli.engine.rpc.device_session import request_device
from tunecli.engine.task.task import Task
from tunecli.errors import RPCError, TuneError

logger = logging.getLogger("tunecli.rpc.runner")


class DeviceReference:
    """The reference outputs of the tasks one RPC runner measures, made once per task and
    argument layout.

    Parameters
    ----------
    key : str
        Device key the reference config runs on.
    host, port : str, int
        The tracker's address.
    priority : int
    token : str or None
    timeout : float
        Seconds the reference build and its run may take each.
    """

    def __init__(self, key: str, host: str, port: int, priority: int, token: str | None,
                 timeout: float) -> None:
        self.key, self.host, self.port, self.priority, self.token = key, host, port, priority, token
        self.timeout = timeout
        self._refs: dict[tuple, RefOutputs | None] = {}
        self._worker: Worker | None = None

    def outputs(self, task: Task, specs: tuple[ArgSpecT, ...], outputs: tuple[int, ...]) -> RefOutputs:
        """Expected outputs of ``task``'s kernels with this argument layout; empty (with a warning)
        when the task has none: its reference fails, or its reference config does not build or run.
        A device lost while running the reference config leaves it to be made again next time."""
        key = (task.name, task.args, str(task.target), specs, outputs)
        if key not in self._refs:
            try:
                self._refs[key] = self._make(task, specs, outputs)
            except RPCError as err:
                logger.warning("RPCRunner: no reference outputs (%s); this batch is not checked", err)
                return ()
            except TuneError as err:
                logger.warning("RPCRunner: %s; correctness is not checked for this task", err)
                self._refs[key] = None
        return self._refs[key] or ()

    def _make(self, task: Task, specs: tuple[ArgSpecT, ...], outputs: tuple[int, ...]) -> RefOutputs:
        if task.reference is not None:
            return reference.numpy_reference(task.reference, specs, outputs, SEED)
        if self._worker is None:
            self._worker = Worker(name="tunecli-rpc-reference")
        request = reference.reference_request(self._worker, task, specs, outputs, SEED, self.timeout)
        session = request_device(self.host, self.port, self.key, task.target, self.priority, self.token,
                                 wait_timeout=4 * self.timeout + 10, where="RPCRunner")
        with session:
            return reference.reference_from_reply(task, session.measure(request))

    def clear(self) -> None:
        """Forget the outputs made so far (a new task is set)."""
        self._refs.clear()

    def close(self) -> None:
        """Stop the build worker (started again when a reference config is built)."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None
