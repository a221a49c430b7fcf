"""Every folder of tests is a package, so test modules are named by their path (``tests.engine.
measure.test_timing``) and need no unique file names, and helpers are imported by package name."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_folder_with_python_files_is_a_package() -> None:
    missing = sorted(str(d.relative_to(TESTS.parent)) for d in [TESTS, *TESTS.rglob("*")]
                     if d.is_dir() and d.name != "__pycache__" and "data" not in d.relative_to(TESTS).parts
                     and any(d.glob("*.py")) and not (d / "__init__.py").exists())
    assert not missing, f"test folders without __init__.py: {missing}"
