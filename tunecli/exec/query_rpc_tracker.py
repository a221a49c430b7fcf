"""``python -m tunecli.exec.query_rpc_tracker``: TVM's
``python -m tvm.exec.query_rpc_tracker``, what a tracker holds (``tunecli query``)
with TVM's options (see :mod:`tunecli.exec.tvm_options`)."""

from tunecli.exec.tvm_options import run_as

if __name__ == "__main__":
    run_as("query", "query_rpc_tracker")
