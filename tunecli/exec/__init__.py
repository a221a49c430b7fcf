"""TVM's ``python -m tvm.exec.*`` entry points of the RPC tools, ported by changing the import:
``python -m tunecli.exec.rpc_tracker``, ``rpc_server`` and ``query_rpc_tracker`` run the
``tunecli tracker``, ``server`` and ``query`` commands with TVM's options (see
:mod:`tunecli.exec.tvm_options` for the few that differ)."""
