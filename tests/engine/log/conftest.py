"""Shared by the log tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tunecli.engine.log import tophub


@pytest.fixture
def shipped_package_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The environment's default packages: no user package directory, the shipped one alone."""
    monkeypatch.delenv(tophub.ENV_VAR, raising=False)
    tophub.set_locations(None)
    yield
    tophub.set_locations(None)
