"""``tvm.testing.requires_x86``: a test that needs an x86 host is skipped elsewhere and runs there."""

from __future__ import annotations

import platform

import pytest

import tunecli as tvm


@pytest.mark.parametrize("machine, skipped", [("x86_64", False), ("AMD64", False), ("aarch64", True)])
def test_the_marker_skips_off_x86(monkeypatch: pytest.MonkeyPatch, machine: str, skipped: bool) -> None:
    monkeypatch.setattr(platform, "machine", lambda: machine)

    def probe() -> str:
        return "ran"

    (mark,) = tvm.testing.requires_x86(probe).pytestmark
    assert mark.name == "skipif" and mark.args == (skipped,) and machine in mark.kwargs["reason"]
    assert probe() == "ran"  # called directly, it runs
