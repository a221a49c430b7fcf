"""Print one line naming the largest modules of the package, so growth is visible in every test run.

Usage: ``python scripts/module_sizes.py [--top 5] [--limit 400]``; modules over ``--limit`` lines are
flagged with ``!``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tunecli"


def module_sizes(root: Path = PACKAGE) -> list[tuple[int, str]]:
    """``(lines, path relative to the package's parent)`` of every module, largest first."""
    sizes = [(len(p.read_text().splitlines()), str(p.relative_to(root.parent))) for p in root.rglob("*.py")]
    return sorted(sizes, reverse=True)


def summary(sizes: list[tuple[int, str]], top: int, limit: int) -> str:
    """One line: module count, total lines and the ``top`` largest modules."""
    total = sum(n for n, _ in sizes)
    largest = ", ".join(f"{path.removeprefix('tunecli/')} {n}{'!' if n > limit else ''}"
                        for n, path in sizes[:top])
    return f"module sizes: {len(sizes)} modules, {total} lines; largest: {largest}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--limit", type=int, default=400)
    args = parser.parse_args()
    print(summary(module_sizes(), args.top, args.limit))


if __name__ == "__main__":
    main()
