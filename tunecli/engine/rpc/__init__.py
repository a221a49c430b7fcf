"""Distributed measurement and remote execution: TVM-compatible tracker, device servers, clients,
the RPCRunner and TVM's remote session API.

Modules: ``protocol`` (constants, framing, limits, token), ``scheduler`` (priority matching),
``tracker``, ``session`` (measurement frames), ``server`` (kernels run in a
``tunecli.engine.measure.worker.Worker``), ``client``, ``rpc_runner``; the remote session API:
``session_ops`` + ``session_files`` + ``remote_worker`` (server side), ``remote_api`` +
``remote_objects`` (client side); ``device_session`` (a tracker's device that can run a target,
``request_remote``).
"""
