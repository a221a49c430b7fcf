"""``python -m tunecli.exec.rpc_tracker``: TVM's
``python -m tvm.exec.rpc_tracker``, an RPC tracker (``tunecli tracker``)
with TVM's options (see :mod:`tunecli.exec.tvm_options`)."""

from tunecli.exec.tvm_options import run_as

if __name__ == "__main__":
    run_as("tracker", "rpc_tracker")
