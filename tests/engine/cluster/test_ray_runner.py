"""RayRunner's accounting: every config sent out comes back once, a lost worker's configs are sent
again once and then recorded as errors, and the batch goes on."""

from __future__ import annotations

import threading
import time

import pytest

from tunecli.engine.cluster import RayBuilder, RayRunner
from tunecli.engine.cluster.local_cluster import LocalRayCluster
from tunecli.engine.measure import TimingOptions
from tunecli.engine.measure.result import MeasureErrorNo, MeasureInput
from tunecli.engine.ops import registry  # noqa: F401  (registers the built-in templates)
from tunecli.engine.target import Target
from tunecli.engine.task.task import create

from .conftest import HEAD_ONLY


@pytest.mark.slow
def test_a_worker_lost_twice_is_an_error_record_and_the_batch_goes_on(ray_head: LocalRayCluster) -> None:
    import ray

    runner = RayRunner(ray_head.address, {HEAD_ONLY: 1}, builders=1,  # one worker, on the head
                       timing=TimingOptions(number=1, repeat=1, warmup_ms=3000))
    task = create("tutorial/matmul", (16, 16, 16, "float32"), Target("llvm"))
    inputs = [MeasureInput(task.target, task, task.config_space.get(i)) for i in (3, 5)]
    reported: list[int] = []

    def kill_the_worker_measuring_twice() -> None:
        for lost in range(2):
            while len(runner.cluster.slots) < lost + 1:
                time.sleep(0.1)
            time.sleep(1.5)  # the chunk is being built or timed (3 s of warm-up)
            ray.kill(runner.cluster.slots[lost].actor)

    try:
        runner.set_task(task)
        builds = RayBuilder(runner).build(inputs)
        killer = threading.Thread(target=kill_the_worker_measuring_twice)
        killer.start()
        results = runner.run(inputs, builds, on_result=lambda index, _result: reported.append(index))
        killer.join()
    finally:
        runner.close()
    assert sorted(reported) == [0, 1]  # each config reported once
    assert results[0].error_no == MeasureErrorNo.RUNTIME_DEVICE
    message = results[0].error_message
    assert "the Ray worker on node" in message and "(sent 2 times)" in message
    assert results[1].ok  # measured by the third worker
    assert len(runner.cluster.slots) == 0  # closed
