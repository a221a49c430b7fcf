"""Port of TVM's tutorial ``gallery/how_to/compile_models/relay_quick_start.py`` ("Quick Start
Tutorial for Compiling Deep Learning Models") with ``import tvm`` changed to ``import tunecli``.

Edits other than imports are marked ``# EDIT:``: the image is 3x32x32 instead of 3x224x224 (a
shorter test), the library goes to pytest's temporary directory, and the tutorial's prints
become assertions.
"""

from __future__ import annotations

import numpy as np
import pytest

import tunecli as tvm
from tunecli import relay
from tunecli.contrib import graph_executor


@pytest.mark.slow
def test_relay_quick_start(tmp_path) -> None:
    batch_size = 1
    num_class = 1000
    image_shape = (3, 32, 32)  # EDIT: (3, 224, 224) in the tutorial
    data_shape = (batch_size,) + image_shape
    out_shape = (batch_size, num_class)

    mod, params = relay.testing.resnet.get_workload(
        num_layers=18, batch_size=batch_size, image_shape=image_shape
    )

    # set show_meta_data=True if you want to show meta data
    print(mod.astext(show_meta_data=False))

    opt_level = 3
    target = tvm.target.Target("llvm")  # EDIT: tvm.target.cuda() in the tutorial
    with tvm.transform.PassContext(opt_level=opt_level):
        lib = relay.build(mod, target, params=params)

    # create random input
    dev = tvm.cpu()
    data = np.random.uniform(-1, 1, size=data_shape).astype("float32")
    # create module
    module = graph_executor.GraphModule(lib["default"](dev))
    # set input and parameters
    module.set_input("data", data)
    # run
    module.run()
    # get output
    out = module.get_output(0, tvm.nd.empty(out_shape)).numpy()

    # Print first 10 elements of output
    print(out.flatten()[0:10])
    expected = relay.create_executor("debug", mod=mod, params=params).evaluate()(data)  # EDIT: checked
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-6)

    # save the graph, lib and params into separate files
    temp = tmp_path  # EDIT: utils.tempdir()
    path_lib = str(temp / "deploy_lib.tar").replace(".tar", ".so")  # EDIT: a shared library, not a tar
    lib.export_library(path_lib)

    # load the module back.
    loaded_lib = tvm.runtime.load_module(path_lib)
    input_data = tvm.nd.array(data)

    module = graph_executor.GraphModule(loaded_lib["default"](dev))
    module.run(data=input_data)
    out_deploy = module.get_output(0).numpy()

    # Print first 10 elements of output
    print(out_deploy.flatten()[0:10])

    # check whether the output from deployed module is consistent with original one
    tvm.testing.assert_allclose(out_deploy, out, atol=1e-5)
