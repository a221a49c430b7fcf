"""Result tables that fit the console: the full table when it fits, else numbers and notes.

A table of workloads and configs is wide; folded into 80 columns its cells break every few
letters.  So each command builds two forms of its result: the full table, and a narrow one
(numbers only, rows keyed by a short id) followed by one note per row with the long text,
wrapped as prose.  ``print_fitted`` prints the first when it fits the console's width.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Sequence

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

_UNBOUNDED = 100_000


#: Significant digits of a measured number without a spread to go by (one record of a log).
MEASURED_DIGITS = 4


def fixed(value: float, digits: int = MEASURED_DIGITS, decimals: int = 4) -> str:
    """``value`` to ``digits`` significant digits, with at most ``decimals`` decimals (no exponent)."""
    place = min(decimals, digits - 1 - math.floor(math.log10(abs(value)))) if value else decimals
    return f"{value:.{place}f}" if place >= 0 else f"{round(value, place):.0f}"


def table(title: str | None, columns: Sequence[str], right: Sequence[str] = (), wrap: bool = True) -> Table:
    """A table with ``columns``; those named in ``right`` are right-justified and never wrap.

    Parameters
    ----------
    title : str or None
    columns : sequence of str
    right : sequence of str
        The numeric columns.
    wrap : bool
        Let the other columns wrap (the wide form); the narrow form never wraps a cell.

    Returns
    -------
    rich.table.Table
    """
    out = Table(title=title, title_justify="left", show_edge=wrap)
    for name in columns:
        if name in right:
            out.add_column(name, justify="right", no_wrap=True)
        else:
            out.add_column(name, justify="left", overflow="fold", no_wrap=not wrap)
    return out


def fits(console: Console, wide: Table) -> bool:
    """True when ``wide`` shows at its natural width within the console's width.

    Parameters
    ----------
    console : rich.console.Console
    wide : rich.table.Table

    Returns
    -------
    bool
    """
    unbounded = console.options.update(width=_UNBOUNDED, max_width=_UNBOUNDED)
    return Measurement.get(console, unbounded, wide).maximum <= console.width


def print_fitted(console: Console, wide: Table, narrow: Callable[[], Table],
                 notes: Callable[[], list[str]], footer: Sequence[str] = ()) -> None:
    """Print ``wide`` when it fits, else ``narrow()`` followed by ``notes()``; then ``footer``.

    Parameters
    ----------
    console : rich.console.Console
    wide : rich.table.Table
    narrow : callable
        Makes the narrow table.
    notes : callable
        Makes the lines (long workload and config texts) that go with the narrow table.
    footer : sequence of str
        Lines printed after either form (wrapped to the width).
    """
    if fits(console, wide):
        console.print(wide)
    else:
        short = narrow()
        if short.title:  # a line of its own, not wrapped to the narrow table's width
            console.print(str(short.title), markup=False, highlight=False)
            short.title = None
        console.print(short)
        for line in notes():
            console.print(line, markup=False, highlight=False)
    for line in footer:
        console.print(line, markup=False, highlight=False)


def wrap_items(head: str, items: Sequence[str], width: int, indent: str = "  ") -> list[str]:
    """``head`` and ``items`` joined by ``", "`` in lines of at most ``width`` columns, each item
    whole (an item longer than a line gets a line of its own), the lines after the first indented.

    Parameters
    ----------
    head : str
        The first line's start (``"kernels: "``).
    items : sequence of str
    width : int
    indent : str

    Returns
    -------
    list of str
    """
    lines, line = [], head
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "")
        start = line in (head, indent)
        if not start and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = indent + piece
        else:
            line = line + ("" if start else " ") + piece
    lines.append(line)
    return lines


def label_lines(text: str, width: int, indent: str = "    ") -> list[str]:
    """``text``, a label ``name(arg, arg, ...)`` with any prefix and suffix, in lines of ``width``
    columns, broken between the label's arguments, each argument whole (``wrap_items``), and a
    suffix too long for the last line wrapped as prose (``"nearest: conv2d(...) (package in
    llvm.log, measured on znver4)"``).

    Parameters
    ----------
    text : str
        E.g. ``"task 1/2 batch_matmul.x86(float32[4,16,64], ..., True):"``.
    width : int
    indent : str
        The start of the lines after the first.

    Returns
    -------
    list of str
        ``[text]`` when it fits or has no argument list.
    """
    start = text.find("(")
    end = _closing(text, start) if start >= 0 else -1
    if len(text) <= width or end < 0:
        return [text]
    args, depth, item = [], 0, ""
    for char in text[start + 1:end]:
        depth += (char in "([") - (char in ")]")
        if char == "," and depth == 0:
            args.append(item.strip())
            item = ""
        else:
            item += char
    args.append(item.strip())
    lines = wrap_items(text[:start + 1], args, width, indent=indent)
    last = lines[-1] + text[end:]
    if len(last) <= width:
        return [*lines[:-1], last]
    return [*lines[:-1], *textwrap.wrap(last, width, subsequent_indent=indent, break_long_words=False,
                                        break_on_hyphens=False)]


def _closing(text: str, start: int) -> int:
    """The position of the parenthesis that closes the one at ``start``; -1 when none does."""
    depth = 0
    for i in range(start, len(text)):
        depth += (text[i] in "([") - (text[i] in ")]")
        if depth == 0:
            return i
    return -1
