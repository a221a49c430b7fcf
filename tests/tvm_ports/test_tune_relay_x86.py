"""Port of TVM's tutorial ``gallery/how_to/tune_with_autotvm/tune_relay_x86.py`` with ``import tvm``
changed to ``import tunecli`` (and ``from tunecli import relay, autotvm``, ``import
tunecli.contrib.graph_executor as runtime``).

Edits other than imports are marked ``# EDIT:``: the graph tuner part (``tune_graph``,
``apply_graph_best``) belongs to the x86 performance work and is replaced by
``apply_history_best`` on the kernel log; the network is ResNet-18 on a 3x32x32 image and each
task gets a few trials, to keep the test short; the log goes to pytest's temporary directory;
the tutorial's prints become assertions.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import tunecli as tvm
import tunecli.contrib.graph_executor as runtime
from tunecli import autotvm, relay
from tunecli.autotvm.tuner import GATuner, GridSearchTuner, RandomTuner, XGBTuner
from tunecli.relay import testing


def get_network(name, batch_size):
    """Get the symbol definition and random weight of a network"""
    input_shape = (batch_size, 3, 32, 32)  # EDIT: 32x32 instead of 224x224
    output_shape = (batch_size, 1000)

    if "resnet" in name:
        n_layer = int(name.split("-")[1])
        mod, params = testing.resnet.get_workload(
            num_layers=n_layer, batch_size=batch_size, dtype=dtype,
            image_shape=input_shape[1:],  # EDIT: the small image
        )
    elif "vgg" in name:
        n_layer = int(name.split("-")[1])
        mod, params = testing.vgg.get_workload(num_layers=n_layer, batch_size=batch_size, dtype=dtype)
    elif name == "mobilenet":
        mod, params = testing.mobilenet.get_workload(batch_size=batch_size, dtype=dtype)
    elif name == "squeezenet_v1.1":
        mod, params = testing.squeezenet.get_workload(batch_size=batch_size, version="1.1", dtype=dtype)
    else:
        raise ValueError("Unsupported network: " + name)

    return mod, params, input_shape, output_shape


target = "llvm"

batch_size = 1
dtype = "float32"
model_name = "resnet-18"
log_file = "%s.log" % model_name  # noqa: UP031  (the tutorial's text)

input_name = "data"

num_threads = 1
os.environ["TVM_NUM_THREADS"] = str(num_threads)

tuning_option = {
    "log_filename": log_file,
    "tuner": "random",
    "early_stopping": None,
    "measure_option": autotvm.measure_option(
        builder=autotvm.LocalBuilder(),
        runner=autotvm.LocalRunner(
            number=1, repeat=10, min_repeat_ms=0, enable_cpu_cache_flush=True
        ),
    ),
}


def tune_kernels(
    tasks, measure_option, tuner="gridsearch", early_stopping=None, log_filename="tuning.log"
):
    for i, task in enumerate(tasks):
        prefix = "[Task %2d/%2d] " % (i + 1, len(tasks))  # noqa: UP031

        # create tuner
        if tuner == "xgb" or tuner == "xgb-rank":
            tuner_obj = XGBTuner(task, loss_type="rank")
        elif tuner == "ga":
            tuner_obj = GATuner(task, pop_size=50)
        elif tuner == "random":
            tuner_obj = RandomTuner(task)
        elif tuner == "gridsearch":
            tuner_obj = GridSearchTuner(task)
        else:
            raise ValueError("Invalid tuner: " + tuner)

        # do tuning
        n_trial = min(len(task.config_space), 2)  # EDIT: two trials per task
        tuner_obj.tune(
            n_trial=n_trial,
            early_stopping=early_stopping,
            measure_option=measure_option,
            callbacks=[
                autotvm.callback.progress_bar(n_trial, prefix=prefix),
                autotvm.callback.log_to_file(log_filename),
            ],
        )


def tune_and_evaluate(tuning_opt):
    # extract workloads from relay program
    print("Extract tasks...")
    mod, params, data_shape, out_shape = get_network(model_name, batch_size)
    tasks = autotvm.task.extract_from_program(
        mod["main"], target=target, params=params, ops=(relay.op.get("nn.conv2d"),)
    )

    # run tuning tasks
    tune_kernels(tasks, **tuning_opt)
    # EDIT: no tune_graph / apply_graph_best; the kernels' best records instead

    # compile kernels in default mode
    print("Evaluation of the network compiled in 'default' mode without auto tune:")
    with tvm.transform.PassContext(opt_level=3):
        print("Compile...")
        lib = relay.build(mod, target=target, params=params)
        evaluate_performance(lib, data_shape)

    # compile kernels in kernel tuned only mode
    print("\nEvaluation of the network been tuned on kernel level:")
    with autotvm.apply_history_best(tuning_opt["log_filename"]):  # EDIT: the kernel log
        print("Compile...")
        with tvm.transform.PassContext(opt_level=3):
            lib = relay.build(mod, target=target, params=params)
        return evaluate_performance(lib, data_shape), tasks, mod, params  # EDIT: results for the test


def evaluate_performance(lib, data_shape):
    # upload parameters to device
    dev = tvm.cpu()
    data_tvm = tvm.nd.array((np.random.uniform(size=data_shape)).astype(dtype))
    module = runtime.GraphModule(lib["default"](dev))
    module.set_input(input_name, data_tvm)

    # evaluate
    print("Evaluate inference time cost...")
    print(module.benchmark(dev, number=2, repeat=2))  # EDIT: number=100, repeat=3 in the tutorial
    return module, data_tvm  # EDIT: for the test's checks


@pytest.mark.slow
def test_tune_relay_x86_flow(tmp_path, monkeypatch, caplog) -> None:
    """The tutorial's flow: extract the conv2d tasks, tune each a little, build with the log."""
    monkeypatch.chdir(tmp_path)
    (module, data), tasks, mod, params = tune_and_evaluate(tuning_option)
    assert len(tasks) == 12  # ResNet-18's distinct convolutions (the dense layer is not requested)
    assert all(t.name.startswith("conv2d") for t in tasks)
    assert os.path.getsize(log_file) > 0
    assert "12 of 13 tasks tuned; 1 fell back: dense" in caplog.text
    module.run()
    expected = relay.create_executor("debug", mod, params=params).evaluate()(data)
    np.testing.assert_allclose(module.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-5)
