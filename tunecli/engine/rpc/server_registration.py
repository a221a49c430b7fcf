"""A device server's registration with a tracker (TVM's ``rpc/server.py``).

``UPDATE_INFO`` with ``{"key": "server:<key>", "addr": [custom_addr, port]}``, then ``PUT`` a
fresh match key ``"<key>:<random>"``. While the server waits for a client it polls
``GET_PENDING_MATCHKEYS`` every ``ping_period`` seconds; when its match key has been handed out
but no client came for more than ``unmatch_timeout`` seconds it PUTs a new one. A lost tracker
connection is re-established every ``retry_period`` seconds. Without a tracker the match key
is the device key itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from tunecli.engine.rpc.client import TrackerSession
from tunecli.engine.rpc.protocol import NEEDS_TOKEN, AuthenticationError, TrackerCode, random_key
from tunecli.errors import RPCError

logger = logging.getLogger("tunecli.rpc.server")


class ServerRegistration:
    """The tracker side of one device server: its connection, its match keys.

    Parameters
    ----------
    key : str
        Device key.
    port : int
        The server's bound port, announced to the tracker.
    tracker_addr : tuple of (str, int) or None
        None: no tracker; clients present the device key.
    custom_addr : str or None
        Address announced instead of the one the tracker sees.
    token : str or None
        The resolved token (None: none).
    ping_period, unmatch_timeout, retry_period : float
        See the module docstring.
    on_registered : callable, optional
        Called as ``on_registered(again)`` each time the tracker has taken the server on a new
        connection (``again``: after a lost one).

    Attributes
    ----------
    matchkey : str
        The key a client must present now; set before the tracker hands it out.
    """

    def __init__(self, key: str, port: int, tracker_addr: tuple[str, int] | None, custom_addr: str | None,
                 token: str | None, ping_period: float, unmatch_timeout: float, retry_period: float,
                 on_registered: Callable[[bool], None] | None = None) -> None:
        self.key, self.port, self.tracker_addr, self.custom_addr = key, port, tracker_addr, custom_addr
        self.token = token
        self.ping_period, self.unmatch_timeout, self.retry_period = ping_period, unmatch_timeout, retry_period
        self.matchkey = key
        self._tracker: TrackerSession | None = None
        self._used_keys: set[str] = set()
        self._unmatched = 0
        self._on_registered = on_registered
        self._registrations = 0

    @property
    def connected(self) -> bool:
        """Whether a tracker connection is open."""
        return self._tracker is not None

    def register(self, stop: threading.Event) -> str | None:
        """Make sure the tracker knows the server and PUT a fresh match key; return it.

        None after a tracker failure (logged; the call waited ``retry_period`` or until ``stop``).

        Raises
        ------
        AuthenticationError
            When the tracker wants a token the server does not have (retrying cannot fix it).
        """
        if self.tracker_addr is None:
            self.matchkey = self.key
            return self.key
        try:
            if self._tracker is not None:
                return self._put_new_key()
            tracker = TrackerSession(self.tracker_addr, self.token or "", timeout=self.retry_period)
            self._tracker = tracker
            info = {"key": "server:" + self.key, "addr": [self.custom_addr, self.port]}
            self._expect_success(tracker.call([TrackerCode.UPDATE_INFO, info]), "UPDATE_INFO")
            matchkey = self._put_new_key()
            self._registrations += 1
            if self._on_registered is not None:
                self._on_registered(self._registrations > 1)
            return matchkey
        except AuthenticationError:
            self.close()
            raise
        except RPCError as err:
            self.close()
            logger.warning("Cannot connect to tracker %s:%d (%s), retry in %g secs...",
                           *self.tracker_addr, err, self.retry_period)
            stop.wait(self.retry_period)
            return None

    def poll(self, matchkey: str) -> str | None:
        """One ``ping_period`` passed without a client: the match key to wait with (a new one when
        the handed-out key stayed unused too long); None when the tracker was lost (closed)."""
        if self._tracker is None:
            return matchkey
        try:
            pending = self._tracker.call([TrackerCode.GET_PENDING_MATCHKEYS])
            self._unmatched = 0 if isinstance(pending, list) and matchkey in pending else self._unmatched + 1
            if self._unmatched * self.ping_period > self.unmatch_timeout + self.ping_period:
                logger.info("no incoming connections, regenerate key ...")
                return self._put_new_key()
        except RPCError as err:
            logger.warning("lost the tracker (%s); registering again every %g s", err, self.retry_period)
            self.close()
            return None
        return matchkey

    def _put_new_key(self) -> str:
        assert self._tracker is not None
        if len(self._used_keys) > 10000:  # bound the memory of long-lived servers
            self._used_keys.clear()
        matchkey = random_key(self.key, self._used_keys)
        self._used_keys.add(matchkey)
        self.matchkey = matchkey  # before the PUT: a client may connect as soon as it is made
        self._unmatched = 0
        reply = self._tracker.call([TrackerCode.PUT, self.key, [self.port, matchkey], self.custom_addr])
        self._expect_success(reply, "PUT")
        return matchkey

    def _expect_success(self, reply: object, what: str) -> None:
        if reply == TrackerCode.FAIL and not self.token:
            raise AuthenticationError(f"rpc server: the tracker refused {what}: {NEEDS_TOKEN}")
        if reply != TrackerCode.SUCCESS:
            raise RPCError(f"rpc server: tracker answered {reply!r} to {what}")

    def close(self) -> None:
        """Close the tracker connection (the tracker forgets the server)."""
        if self._tracker is not None:
            self._tracker.close()
            self._tracker = None
