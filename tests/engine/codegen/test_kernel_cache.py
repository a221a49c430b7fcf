"""The kernel cache on disk: keys that change with everything the code depends on, checksummed
entries written atomically, a size bound kept by evicting the least recently used entries, and the
environment's directory, size and off switch."""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path

import pytest

from tunecli.engine.codegen import kernel_cache
from tunecli.engine.codegen.kernel_cache import (
    KernelCache,
    cache_key,
    code_versions,
    default_cache,
    parse_size,
)
from tunecli.engine.target import Target
from tunecli.errors import ArgumentError

PARTS = {"group": "fn (%p0: Tensor[(4,), float32]) { nn.relu(%p0) }", "name": "k"}


def test_the_key_changes_with_each_version_the_target_and_the_parts() -> None:
    host = Target("llvm")
    versions = code_versions()
    key = cache_key(PARTS, host, versions)
    assert cache_key(dict(PARTS), host, versions) == key  # deterministic
    assert cache_key(PARTS, host) == key  # this process's versions by default
    changed = [
        cache_key(PARTS, host, dataclasses.replace(versions, tunecli="99.0")),
        cache_key(PARTS, host, dataclasses.replace(versions, sources="0" * 64)),
        cache_key(PARTS, host, dataclasses.replace(versions, llvmlite="0.1.0")),
        cache_key(PARTS, host, dataclasses.replace(versions, llvm="1.0.0")),
        cache_key(PARTS, Target("llvm -mtriple=aarch64-linux-gnu"), versions),
        cache_key(PARTS, Target("llvm -mcpu=haswell"), versions),
        cache_key({**PARTS, "name": "k2"}, host, versions),
        cache_key({**PARTS, "config": "[('tile', [-1, 8])],None,3"}, host, versions),
    ]
    assert len({key, *changed}) == len(changed) + 1


def test_the_source_digest_covers_the_compiler_and_not_the_rest() -> None:
    files = {str(p.relative_to(kernel_cache.PACKAGE)) for p in kernel_cache.compiler_sources()}
    for compiler in ("engine/codegen/compile.py", "engine/lower/lower.py", "engine/graph/lower_group.py",
                     "engine/graph/passes/fuse_ops.py", "engine/ops/strategy.py", "engine/task/space.py",
                     "engine/target.py", "errors.py"):
        assert compiler in files
    assert not [f for f in files if f.startswith(("engine/graph/frontend/", "engine/graph/models/",
                                                  "engine/measure/", "engine/tuner/", "commands/"))]


def test_parts_cannot_run_into_each_other() -> None:
    host = Target("llvm")
    assert cache_key({"a": "xy", "b": ""}, host) != cache_key({"a": "x", "b": "y"}, host)


def test_an_entry_round_trips_and_a_missing_one_is_none(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path)
    assert cache.get("ab" * 32) is None
    cache.put("ab" * 32, b"object bytes")
    assert cache.get("ab" * 32) == b"object bytes"
    assert cache.path("ab" * 32).parent.name == "ab"
    assert not list(tmp_path.rglob("*.tmp"))  # written under a temporary name, then renamed


def test_a_corrupted_entry_is_reported_removed_and_missed(tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    cache = KernelCache(tmp_path)
    key = "cd" * 32
    cache.put(key, b"x" * 100)
    path = cache.path(key)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="tunecli.kernel_cache"):
        assert cache.get(key) is None
    assert "corrupted" in caplog.text and str(path) in caplog.text
    assert not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"short")  # a truncated file is corrupted too
    assert cache.get(key) is None


def test_trim_evicts_the_least_recently_used_entries_down_to_the_bound(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path, max_bytes=3 * 1100)
    keys = [f"{k:02d}" * 32 for k in range(5)]
    for age, key in enumerate(keys):
        cache.put(key, bytes(1000))
        os.utime(cache.path(key), (1_000_000 + age, 1_000_000 + age))  # keys[0] the oldest
    assert cache.get(keys[0]) is not None  # a hit makes it the most recently used
    assert cache.trim() == 2
    assert [k for k in keys if cache.path(k).exists()] == [keys[0], keys[3], keys[4]]
    assert cache.size() <= cache.max_bytes
    assert cache.trim() == 0


def test_trim_removes_a_dead_writer_s_temporary_file_but_not_a_fresh_one(tmp_path: Path) -> None:
    cache = KernelCache(tmp_path)
    cache.put("ef" * 32, b"x")
    dead, fresh = tmp_path / "ef" / ".efef-dead.tmp", tmp_path / "ef" / ".efef-fresh.tmp"
    dead.write_bytes(b"partial")
    fresh.write_bytes(b"being written")
    os.utime(dead, (1_000_000, 1_000_000))
    cache.trim()
    assert not dead.exists() and fresh.exists() and cache.get("ef" * 32) == b"x"


def test_the_environment_chooses_the_directory_the_bound_and_turns_the_cache_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(kernel_cache.DIR_ENV, raising=False)
    monkeypatch.delenv(kernel_cache.SIZE_ENV, raising=False)
    monkeypatch.delenv(kernel_cache.OFF_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    cache = default_cache()
    assert cache is not None
    assert cache.root == tmp_path / "xdg" / "tunecli" / "kernels"
    assert cache.max_bytes == 1 << 30
    monkeypatch.setenv(kernel_cache.DIR_ENV, str(tmp_path / "mine"))
    monkeypatch.setenv(kernel_cache.SIZE_ENV, "64M")
    cache = default_cache()
    assert cache is not None and cache.root == tmp_path / "mine" and cache.max_bytes == 64 << 20
    for off in ("1", "yes", "true"):
        monkeypatch.setenv(kernel_cache.OFF_ENV, off)
        assert default_cache() is None
    monkeypatch.setenv(kernel_cache.OFF_ENV, "0")
    assert default_cache() is not None


def test_sizes_parse_and_a_bad_one_is_named() -> None:
    assert parse_size("1024") == 1024
    assert parse_size("512M") == 512 << 20
    assert parse_size("1GiB") == 1 << 30
    assert parse_size("1.5k") == 1536
    with pytest.raises(ArgumentError, match="TUNECLI_CACHE_SIZE='lots'"):
        parse_size("lots")


def test_bypassed_turns_the_cache_off_inside_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(kernel_cache.DIR_ENV, str(tmp_path))
    monkeypatch.delenv(kernel_cache.OFF_ENV, raising=False)
    with kernel_cache.bypassed():
        assert default_cache() is None
        assert os.environ[kernel_cache.OFF_ENV] == "1"  # inherited by the processes a build starts
    assert default_cache() is not None and kernel_cache.OFF_ENV not in os.environ
    with kernel_cache.bypassed(False):
        assert default_cache() is not None


def test_an_unwritable_cache_is_said_once_and_only_misses(tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = KernelCache(blocker / "kernels")
    with caplog.at_level(logging.WARNING, logger="tunecli.kernel_cache"):
        for k in range(3):
            cache.put(f"{k:02d}" * 32, b"x")
    assert caplog.text.count("cannot write") == 1
    assert cache.get("00" * 32) is None and cache.trim() == 0

