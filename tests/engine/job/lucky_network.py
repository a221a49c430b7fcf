"""A network whose log holds a record that makes it slower than untuned (issue 27), for the tests
of ``job.network_revert`` and ``apply_network``.

The network: a 1x1 convolution (32 -> 64 channels at 28x28), relu and a global pool (no dense
layer: its two implementations compete by their records' timings, which no test can fix).
Its log holds what a short tune writes (each task's untuned config, measured first) and one record
of the convolution's slowest config (one channel and one column per block: no vectors) whose cost
is half the untuned record's, as a record timed in a lucky moment reads (issue 27: config #174 of
a Winograd task logged 3.5x faster than any later timing).  In the network that config is several
times slower than the untuned one: a real, deterministic slowdown.
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import numpy as np

from tunecli.engine.actions.job_file import tune_job
from tunecli.engine.job.network import job_tasks
from tunecli.engine.job.spec import Job, load_job
from tunecli.engine.log.record import encode, load_from_file
from tunecli.engine.measure.result import MeasureInput, MeasureResult
from tunecli.engine.task.task import Task

SHAPE = (1, 32, 28, 28)


def write_network_job(folder: Path, target: str | None = None,
                      runner: str = "{number: 3, repeat: 3}") -> Job:
    """The job of the module docstring's network, its log tuned one trial per task (the untuned
    configs); for ``target`` (default: this machine's) with the job's ``runner``."""
    from onnx import helper

    from tests.engine.graph.frontend.onnx_models import make_model

    rng = np.random.default_rng(0)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype("float32")

    nodes = [helper.make_node("Conv", ["image", "w1"], ["c1"], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("GlobalAveragePool", ["r1"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["y"], name="flatten")]
    model = make_model(nodes, {"image": (SHAPE, "float32")}, {"y": "float32"},
                       {"w1": w(64, 32, 1, 1)})
    (folder / "net.onnx").write_bytes(model.SerializeToString())
    (folder / "net.yaml").write_text(textwrap.dedent(f"""\
        name: net
        log: {folder / "net.log"}
        model: {{onnx: {folder / "net.onnx"}, input: {{image: [{', '.join(map(str, SHAPE))}]}}}}
        tuner: {{kind: random, n_trial: 1, seed: 0}}
        measure:
          runner: {runner}
        """) + (f"target: {target}\n" if target else ""))
    tune_job(str(folder / "net.yaml"))
    return load_job(str(folder / "net.yaml"))


def conv_task(job: Job) -> Task:
    """The network's convolution task (``conv2d_NCHWc.x86``; on an ARM target its arm_cpu template)."""
    tasks, _ = job_tasks(job)
    return next(t for t in tasks if t.name.startswith("conv2d"))


def slowest_config(conv: Task) -> int:
    """The convolution's config of one input channel, one output channel and one column per block."""
    space = conv.config_space
    return next(i for i in range(len(space)) if space.is_index_valid(i) and all(
        space.get(i)[knob].size[-1] == 1 for knob in ("tile_ic", "tile_oc", "tile_ow")))


def add_lucky_slow_record(log: Path, conv: Task) -> int:
    """Append the convolution's slowest config with half the untuned record's cost; its index."""
    space, slow = conv.config_space, slowest_config(conv)
    [untuned] = [res for inp, res in load_from_file(log) if inp.task.workload == conv.workload]
    lucky = MeasureResult((untuned.mean_cost / 2,), 0, 0.5, time.time())
    with open(log, "a") as f:
        f.write(encode(MeasureInput(conv.target, conv, space.get(slow)), lucky) + "\n")
    return slow


def add_slow_graph_choice(job: Job, conv: Task) -> tuple[Job, int]:
    """The job with a graph tuner stage (``graph_tuner: dp``) whose output (``net.graph.log``, as
    ``tune`` writes it beside the log) chose the convolution's slowest config, as a graph tuner's
    choice from records timed in a lucky moment reads; the job reloaded and that config's index."""
    from tunecli.engine.job.model_spec import graph_log_path

    path = Path(job.path)
    path.write_text(path.read_text() + "graph_tuner: dp\n")
    slow = slowest_config(conv)
    [untuned] = [res for inp, res in load_from_file(job.log) if inp.task.workload == conv.workload]
    chosen = MeasureResult((untuned.mean_cost / 2,), 0, 0.5, time.time())
    graph_log_path(job.log).write_text(
        encode(MeasureInput(conv.target, conv, conv.config_space.get(slow)), chosen) + "\n")
    return load_job(str(path)), slow
