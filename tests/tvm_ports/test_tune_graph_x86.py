"""Port of the graph-tuner step of TVM's tutorial ``tune_relay_x86.py`` (``tune_graph`` and
``autotvm.apply_graph_best``) with ``import tvm`` changed to ``import tunecli`` (and
``from tunecli.autotvm.graph_tuner import DPTuner, PBQPTuner``).

``tune_graph`` is the tutorial's text.  It runs on ResNet-18 with the kernel records of the
pre-tuned x86 package (``llvm_v0.04.log`` holds a record of each of its twelve convolutions),
so no kernel is tuned here; the layout transforms are measured as in the tutorial.  The whole
flow (tuned kernels, ``relay.build`` under ``apply_graph_best``) needs ``relay.build``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import tunecli as tvm
from tunecli import autotvm, relay
from tunecli.autotvm.graph_tuner import DPTuner, PBQPTuner
from tunecli.relay import testing

TOPHUB_X86 = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "tophub" / "llvm_v0.04.log"
needs_tophub = pytest.mark.skipif(not TOPHUB_X86.is_file(), reason=f"real TVM logs not found at {TOPHUB_X86}")

target = "llvm"
input_name = "data"
dtype = "float32"


# Use graph tuner to achieve graph level optimal schedules
# Set use_DP=False if it takes too long to finish.
def tune_graph(graph, dshape, records, opt_sch_file, use_DP=True):
    target_op = [
        relay.op.get("nn.conv2d"),
    ]
    Tuner = DPTuner if use_DP else PBQPTuner
    executor = Tuner(graph, {input_name: dshape}, records, target_op, target)
    executor.benchmark_layout_transform(min_exec_num=2000)
    executor.run()
    executor.write_opt_sch2record_file(opt_sch_file)


@needs_tophub
@pytest.mark.parametrize("use_DP", [True, False])
def test_tune_graph_on_resnet18_with_pretuned_records(tmp_path, use_DP) -> None:
    mod, params = testing.resnet.get_workload(num_layers=18, batch_size=1, dtype=dtype)
    opt_sch_file = str(tmp_path / "resnet-18_graph_opt.log")
    tune_graph(mod["main"], (1, 3, 224, 224), str(TOPHUB_X86), opt_sch_file, use_DP=use_DP)
    chosen = list(autotvm.record.load_from_file(opt_sch_file))
    assert len(chosen) == 21  # one record per convolution, in graph order
    assert {inp.task.name for inp, _ in chosen} == {"conv2d_NCHWc.x86"}
    with autotvm.apply_graph_best(opt_sch_file), tvm.target.Target(target):
        first = autotvm.DispatchContext.current.query(tvm.target.Target.current(), chosen[0][0].task.workload)
    assert first.index == chosen[0][0].config.index


def tune_kernels(tasks, log_filename):
    """The tutorial's ``tune_kernels`` with the random tuner and two trials per task."""
    for task in tasks:
        tuner_obj = autotvm.tuner.RandomTuner(task)
        n_trial = min(len(task.config_space), 2)
        tuner_obj.tune(
            n_trial=n_trial,
            measure_option=autotvm.measure_option(
                builder=autotvm.LocalBuilder(), runner=autotvm.LocalRunner(number=1, repeat=3)
            ),
            callbacks=[autotvm.callback.log_to_file(log_filename)],
        )


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(relay, "build"), reason="needs relay.build (the netbuild branch)")
def test_graph_tuned_network_equals_the_untuned_build(tmp_path, monkeypatch) -> None:
    """The tutorial's flow on ResNet-18 (3x32x32): kernels tuned a little, the graph tuner, and the
    network built under apply_graph_best computes what the untuned build computes."""
    import tunecli.contrib.graph_executor as runtime

    monkeypatch.chdir(tmp_path)
    input_shape = (1, 3, 32, 32)
    mod, params = testing.resnet.get_workload(num_layers=18, batch_size=1, image_shape=input_shape[1:])
    tasks = autotvm.task.extract_from_program(mod["main"], target=target, params=params,
                                              ops=(relay.op.get("nn.conv2d"),))
    log_file, graph_opt_sch_file = "resnet-18.log", "resnet-18_graph_opt.log"
    tune_kernels(tasks, log_file)
    tune_graph(mod["main"], input_shape, log_file, graph_opt_sch_file)
    data = tvm.nd.array(np.random.uniform(size=input_shape).astype(dtype))
    outputs = []
    for context in (autotvm.apply_graph_best(graph_opt_sch_file), autotvm.FallbackContext()):
        with context, tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target=target, params=params)
        module = runtime.GraphModule(lib["default"](tvm.cpu()))
        module.set_input(input_name, data)
        module.run()
        outputs.append(module.get_output(0).numpy())
    np.testing.assert_allclose(outputs[0], outputs[1], rtol=1e-4, atol=1e-5)
    assert os.path.getsize(graph_opt_sch_file) > 0
