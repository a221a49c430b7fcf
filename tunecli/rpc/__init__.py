"""Distributed measurement, TVM-style: ``tunecli.rpc`` mirrors ``tvm.rpc`` (re-exports only)."""

from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.rpc.client import (
    RemoteSession,
    TrackerSession,
    connect,
    connect_tracker,
    format_summary,
    query_tracker,
)
from tunecli.engine.rpc.rpc_runner import RPCRunner
from tunecli.engine.rpc.server import Server, run_server
from tunecli.engine.rpc.session import MeasureReply, MeasureRequest
from tunecli.engine.rpc.tracker import Tracker, run_tracker

__all__ = [
    "MeasureReply", "MeasureRequest", "RPCRunner", "RemoteSession", "Server", "TimingOptions", "Tracker",
    "TrackerSession", "connect", "connect_tracker", "format_summary", "query_tracker", "run_server",
    "run_tracker",
]
