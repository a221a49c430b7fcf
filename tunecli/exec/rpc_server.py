"""``python -m tunecli.exec.rpc_server``: TVM's
``python -m tvm.exec.rpc_server``, a device server (``tunecli server``)
with TVM's options (see :mod:`tunecli.exec.tvm_options`)."""

from tunecli.exec.tvm_options import run_as

if __name__ == "__main__":
    run_as("server", "rpc_server")
