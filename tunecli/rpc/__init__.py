"""Distributed measurement and remote execution, TVM-style: ``tunecli.rpc`` mirrors ``tvm.rpc``
(re-exports only).  A session (``connect``, ``connect_tracker(...).request(key)``) is TVM's
``RPCSession``: ``upload``, ``load_module``, ``cpu()``/``cuda()``, remote arrays and graph modules.

Unlike TVM's, trackers and servers bind ``127.0.0.1`` unless given another ``host``: a server
runs native code that its clients send, so serve other machines (``host="0.0.0.0"``) only
together with a token and a firewall. ``ConnectionLimits`` sets how long a silent connection
is kept and how many one address may hold.
"""

from tunecli.engine.measure.timing_options import TimingOptions
from tunecli.engine.rpc.client import (
    RemoteSession,
    TrackerSession,
    connect,
    connect_tracker,
    format_summary,
    query_tracker,
)
from tunecli.engine.rpc.connections import ConnectionLimits
from tunecli.engine.rpc.remote import RemoteSession as RPCSession
from tunecli.engine.rpc.rpc_runner import RPCRunner
from tunecli.engine.rpc.server import Server, run_server
from tunecli.engine.rpc.session import MeasureReply, MeasureRequest
from tunecli.engine.rpc.tracker import Tracker, run_tracker

__all__ = [
    "ConnectionLimits", "MeasureReply", "MeasureRequest", "RPCRunner", "RPCSession", "RemoteSession",
    "Server", "TimingOptions", "Tracker",
    "TrackerSession", "connect", "connect_tracker", "format_summary", "query_tracker", "run_server",
    "run_tracker",
]
