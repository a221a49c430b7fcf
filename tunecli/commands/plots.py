"""Convergence plots of a tuning log: in the terminal (plotext) and as a PNG file (matplotlib).

The engine's ``inspect_log`` returns the curves (``LogView``); this module draws them.  Both
libraries belong to the optional extra ``tunecli[plot]``: a server or tuning install does
without them, and a command that needs one names the extra when it is missing.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

from tunecli.engine.log.log_summary import LogView
from tunecli.errors import TuneError

#: How to get the plotting libraries.
INSTALL_HINT = "pip install 'tunecli[plot]'"
#: The marker of each curve of a text plot, in turn.
MARKERS = ("*", "+", "o", "x", "#", "@", "%", "=")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
logger = logging.getLogger("tunecli")


class PlottingUnavailable(TuneError):
    """A plotting library of the ``tunecli[plot]`` extra is not installed."""


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` (``plotext`` or ``matplotlib``) or say which extra provides it.

    Parameters
    ----------
    module : str
    purpose : str
        What it is needed for, as the message says it (``"inspect --png"``).

    Returns
    -------
    module

    Raises
    ------
    PlottingUnavailable
        When the module cannot be imported.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise PlottingUnavailable(f"{purpose} needs {module}, which is part of the optional extra "
                                  f"tunecli[plot]: {INSTALL_HINT}") from None


def text_plot(view: LogView, color: bool, width: int = 78, height: int = 18) -> str:
    """Draw the best-so-far curves of ``view`` in text, one plot per unit.

    Each curve has its own marker; the legend is printed under the plot (plotext's own legend
    box would sit on top of the curves).  What plotext says while drawing is logged as a
    warning of the ``tunecli`` logger, as plain text.

    Parameters
    ----------
    view : LogView
    color : bool
        Use terminal colours.
    width, height : int
        Size of each plot in characters, tick labels and legend included.

    Returns
    -------
    str

    Raises
    ------
    PlottingUnavailable
        Without plotext.
    """
    figure = require("plotext", "the convergence plot").figure  # slow to import: only when drawn
    out = []
    for unit in sorted({w.unit for w in view.workloads}):
        figure.clear()
        legend = []
        for curve in (w for w in view.workloads if w.unit == unit):
            points = [(i, y) for i, y in enumerate(curve.best_so_far(), start=1) if y is not None]
            if points:
                marker = MARKERS[len(legend) % len(MARKERS)]
                signal = figure.signal([p[0] for p in points], [p[1] for p in points], marker=marker)
                figure.draw(signal.lines())
                label = curve.label if len(curve.label) <= width - 4 else curve.label[:width - 5] + "…"
                legend.append(f"  {marker} {label}")
        figure.title(f"best {unit} so far")
        figure.label("trial", "x")
        figure.plot_size(width, height)
        text = _quietly(lambda: figure.build().string(colorless=not color))
        over = max(len(_ANSI.sub("", line)) for line in text.splitlines()) - width
        if over > 0:  # the tick labels come on top of the plot's size
            figure.plot_size(width - over, height)
            text = _quietly(lambda: figure.build().string(colorless=not color))
        out.append(text)
        out.extend(legend)
    return "\n".join(out)


def _quietly(draw: Callable[[], str]) -> str:
    """Run ``draw`` with plotext's own messages (coloured, on stdout/stderr) logged as plain warnings."""
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        text = draw()
    for line in _ANSI.sub("", said.getvalue()).splitlines():
        if line.strip():
            logger.warning("%s", line.strip())
    return text


def write_png(view: LogView, png: str | os.PathLike) -> None:
    """Plot the best-so-far curve of every workload of ``view`` into the PNG file ``png``.

    Parameters
    ----------
    view : LogView
    png : path

    Raises
    ------
    PlottingUnavailable
        Without matplotlib.
    """
    matplotlib = require("matplotlib", "inspect --png")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    units = sorted({w.unit for w in view.workloads}) or ["GFLOPS"]
    fig, axes = plt.subplots(len(units), 1, figsize=(12, 4 * len(units)), squeeze=False)
    try:
        for ax, unit in zip(axes[:, 0], units, strict=True):
            for curve in (w for w in view.workloads if w.unit == unit):
                ys = [np.nan if y is None else y for y in curve.best_so_far()]
                # markers keep a workload with a single record (e.g. a pick_best log) visible
                ax.plot(range(1, len(ys) + 1), ys, label=curve.label[:90],
                        marker="o" if len(ys) < 30 else None, markersize=3)
            ax.set_xlabel("trial")
            ax.set_ylabel(f"best {unit}")
            ax.grid(True, alpha=0.3)
            longest = max((len(w.costs) for w in view.workloads if w.unit == unit), default=1)
            ax.set_xlim(0.5, longest + 0.5)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
            if len(view.workloads) <= 12:
                ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        axes[0, 0].set_title(f"convergence of {Path(view.path).name}")
        fig.tight_layout()
        Path(png).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(png, dpi=100)
    finally:
        plt.close(fig)
