"""A session with a device of a key, checked against the target its kernels are built for.

The one path from a tracker to a device that can run a target: :func:`request_device` asks the
tracker for a device of the key, connects and, given a target, :func:`check_device` asks the
server what it runs on and refuses (TargetError, session closed) a device that cannot run it.
RPCRunner, its reference outputs, ``apply`` and TVM's ``request_remote`` go through it.
"""

from __future__ import annotations

import os

from tunecli.engine.rpc.client import connect_tracker, missing_key_hint, registered_keys, registered_servers
from tunecli.engine.rpc.device_info import DeviceInfo
from tunecli.engine.rpc.remote import RemoteSession
from tunecli.engine.target import Target
from tunecli.errors import RPCError, TargetError

#: TVM's environment variables naming the tracker (``request_remote`` without host/port).
TRACKER_HOST_ENV, TRACKER_PORT_ENV = "TVM_TRACKER_HOST", "TVM_TRACKER_PORT"


def check_device(session: RemoteSession, target: Target | str, where: str) -> DeviceInfo:
    """What the session's server runs on, when it can run kernels built for ``target``.

    Raises
    ------
    TargetError
        Naming ``where`` and why, when it cannot (the session is closed).
    RPCError
        When the server does not answer (the session is closed).
    """
    info = session.describe()
    problem = info.mismatch(target)
    if problem:
        session.close()
        raise TargetError(f"{where}: {problem}")
    return info


def request_device(host: str, port: int, key: str, target: Target | str | None = None, priority: int = 1,
                   token: str | None = None, session_timeout: float = 0, wait_timeout: float | None = None,
                   max_retry: int = 2, where: str = "rpc") -> RemoteSession:
    """A session with a free device of ``key`` from the tracker at ``host:port`` (see the module
    docstring); with a ``target``, one that can run it.

    Raises
    ------
    RPCError
        When the tracker or no device of the key can be had (within ``wait_timeout`` seconds; at
        once, naming the keys it has, when a bounded wait is for a key no server has).
    TargetError
        When the device cannot run ``target``.
    """
    if wait_timeout is not None:
        keys = registered_keys(registered_servers(host, port, token))
        if key not in keys:
            raise RPCError(f"{where}: {missing_key_hint(f'{host}:{port}', key, keys)}; start one with "
                           f"`tunecli server --tracker {host}:{port} --key {key}`")
    with connect_tracker(host, port, token, timeout=10.0) as tracker:
        session = tracker.request(key, priority, session_timeout, max_retry=max_retry,
                                  wait_timeout=wait_timeout)
    if target is not None:
        try:
            check_device(session, target, where)
        except (RPCError, TargetError):
            session.close()
            raise
    return session


def request_remote(device_key: str, host: str | None = None, port: int | None = None, priority: int = 1,
                   timeout: float = 60, token: str | None = None) -> RemoteSession:
    """A session with a device of ``device_key`` from a tracker (TVM's ``autotvm.measure.request_remote``):
    ``timeout`` is the session's time limit on the server (TVM's ``session_timeout``; 0: none).

    ``host``/``port`` default to ``TVM_TRACKER_HOST``/``TVM_TRACKER_PORT``.

    Raises
    ------
    RPCError
        When no tracker is named, or no device of the key can be had.
    """
    host = host or os.environ.get(TRACKER_HOST_ENV)
    env_port = os.environ.get(TRACKER_PORT_ENV, "")
    port = port or (int(env_port) if env_port.isdigit() else None)
    if not host or not port:
        raise RPCError(f"request_remote: give the tracker's host and port, or set {TRACKER_HOST_ENV} and "
                       f"{TRACKER_PORT_ENV}")
    return request_device(host, port, device_key, priority=priority, token=token, session_timeout=timeout,
                          max_retry=5, where="request_remote")
