"""Distributed measurement: TVM-compatible tracker, device servers, clients and the RPCRunner.

Modules: ``protocol`` (constants, framing, limits, token), ``scheduler`` (priority matching),
``tracker``, ``session`` (measurement frames), ``server`` (kernels run in a
``tunecli.engine.measure.worker.Worker``), ``client``, ``runner``.
"""
