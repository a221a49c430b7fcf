"""A file replaced whole: the new file appears at once, a failed write leaves the old one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tunecli.engine.atomic_file import replace_file, temporary_name, write_bytes, write_lines


def test_a_new_file_appears_with_its_directory(tmp_path: Path) -> None:
    target = tmp_path / "made" / "here" / "x.log"
    write_lines(target, ["a\n", "b\n"], sync=True)
    assert target.read_text() == "a\nb\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.log"]


def test_a_replaced_file_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "entry"
    target.write_bytes(b"old")
    target.chmod(0o640)
    write_bytes(target, b"new")
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o777 == 0o640


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    target = tmp_path / "net.so"
    target.write_bytes(b"old")

    def fails(partial: Path) -> None:
        partial.write_bytes(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        replace_file(target, fails)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["net.so"]


def test_the_writer_sees_a_hidden_unique_name_with_the_asked_ending(tmp_path: Path) -> None:
    seen: list[Path] = []
    replace_file(tmp_path / "net.tar", lambda partial: (seen.append(partial), partial.write_bytes(b"t")),
                 suffix=".tar")
    assert seen[0].parent == tmp_path and seen[0].name.startswith(".net.tar.") and seen[0].suffix == ".tar"
    assert temporary_name(tmp_path / "a") != temporary_name(tmp_path / "a")
    assert temporary_name(tmp_path / "a").name.endswith(".tmp")
