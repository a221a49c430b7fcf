"""Fixtures shared by every test folder: the emulated AArch64 board (see ``arm_board``), and a
kernel cache of the session's own (``kernel_cache_dir``).

Every test folder is a package (``tests.engine.measure``, ...), so test modules need no unique
names and share helpers by their full name (``from tests.arm_board import ...``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.arm_board import ArmServer, start_arm_server
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


@pytest.fixture(scope="session", autouse=True)
def kernel_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Builds of the session (and their child processes) cache kernels in a temporary folder,
    never in the user's ``~/.cache``."""
    old = os.environ.get("TUNECLI_CACHE_DIR")
    os.environ["TUNECLI_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernel-cache"))
    yield os.environ["TUNECLI_CACHE_DIR"]
    if old is None:
        os.environ.pop("TUNECLI_CACHE_DIR", None)
    else:
        os.environ["TUNECLI_CACHE_DIR"] = old
