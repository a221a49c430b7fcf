"""tunecli.autotvm.measure.measure_methods: the builders and runners by TVM's module path
(``from tvm.autotvm.measure.measure_methods import LocalBuilder, LocalRunner``)."""

from tunecli.engine.measure import LocalBuilder, LocalRunner
from tunecli.engine.rpc.device_session import request_remote
from tunecli.engine.rpc.rpc_runner import RPCRunner

__all__ = ["LocalBuilder", "LocalRunner", "RPCRunner", "request_remote"]
