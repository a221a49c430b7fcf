"""Fixtures shared by every test folder: the emulated AArch64 board (see ``arm_board``).

pytest puts ``tests`` on ``sys.path`` for this file, so tests import ``arm_board`` by name.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from arm_board import ArmServer, start_arm_server

from tunecli.engine.rpc.tracker import Tracker

#: The device key of the shared emulated board.
BOARD_KEY = "rk3399"


@pytest.fixture(scope="session")
def arm_tracker() -> Iterator[Tracker]:
    """An in-process tracker for the emulated boards (one per test session)."""
    trk = Tracker("127.0.0.1", 0, 0, token="")
    yield trk
    trk.stop()


@pytest.fixture(scope="session")
def arm_board(arm_tracker: Tracker) -> Iterator[ArmServer]:
    """``tunecli server --key rk3399`` on the emulated AArch64 board, registered with
    ``arm_tracker``; shared by the tests of a session (skipped where it cannot run)."""
    server = start_arm_server(arm_tracker, BOARD_KEY)
    yield server
    server.stop()
