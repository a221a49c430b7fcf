"""The tree holds only code and text written here: no file carries the Apache Software
Foundation's license header (the mark of a file copied from TVM), and none holds a run of four
code lines of TVM's autotvm tutorial templates that were once copied in (known by the hashes of
their normalized lines, so this test holds no copy of them either)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What is searched: the package, its tests, jobs, benchmarks, scripts and documents.
PLACES = ("tunecli", "tests", "jobs", "benchmarks", "scripts", "docs", "README.md")
SUFFIXES = (".py", ".md", ".yaml")
#: The first words of the ASF license header every file of TVM starts with.
LICENSE_HEADER = "Licensed to the Apache " + "Software Foundation"
#: sha256 (first 16 hex digits) of each run of 4 normalized lines of the tutorial templates
#: (``tune_simple_template``'s ``matmul`` with ``define_split`` and with ``define_knob``).
TUTORIAL_RUNS = frozenset({
    "022a83fedb4f383e", "0276434dc06add28", "0b164104abf1c993", "0e96d35e6c731c06", "2b9e0f1b48a8a750",
    "2f0c88c98c97f8c7", "31fce007cc0de039", "5adba4958d1dbebb", "5b18156deec82103", "7159af8db78c8bdb",
    "726b23f52a932e0d", "77eb5a67cccea825", "82e334c579394128", "8831d19a10397e72", "8fea9d2045ca3c08",
    "b1ec6fb7e1990067", "bfd448cde81375a6", "c4babf2d37ae87fa", "d1abb6f47662599c", "eb46eb4c2d1c0699",
})
RUN = 4


def normalized(text: str) -> list[str]:
    """The text's lines without comments (but in a line that starts a string), blanks folded,
    empty lines dropped."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith(("'", '"')):
            line = line.split("#", 1)[0].strip()
        line = re.sub(r"\s+", " ", line)
        if line:
            out.append(line)
    return out


def runs(lines: list[str]) -> Iterator[tuple[int, str]]:
    """Each run of ``RUN`` lines: its position and its hash."""
    for i in range(len(lines) - RUN + 1):
        yield i, hashlib.sha256("\n".join(lines[i:i + RUN]).encode()).hexdigest()[:16]


def files() -> Iterator[Path]:
    for place in PLACES:
        path = ROOT / place
        found = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES)
        yield from (p for p in found if p.is_file() and "__pycache__" not in p.parts)


def test_no_file_carries_tvm_s_license_header() -> None:
    assert [str(p.relative_to(ROOT)) for p in files()
            if LICENSE_HEADER in p.read_text(encoding="utf-8", errors="replace")] == []


def test_no_file_holds_the_tutorial_templates_that_were_copied_in() -> None:
    found = []
    for path in files():
        lines = normalized(path.read_text(encoding="utf-8", errors="replace"))
        found += [f"{path.relative_to(ROOT)}: {lines[i]}" for i, digest in runs(lines)
                  if digest in TUTORIAL_RUNS]
    assert found == []

