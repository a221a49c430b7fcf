"""What ``apply``'s times can be trusted for: robust statistics of rounds, and notes when they cannot.

A contender timed in turn with others (``measure.interleaved``) has one time per round.  Its
``TimeStats`` are the median (what tables show) and the spread of the rounds (quartiles,
lowest and highest); rounds *disagree* when their interquartile range is more than
``DISAGREE`` of the median.  ``compare_with_log`` flags a kernel ``apply`` timed more than
``SLOWER_THAN_LOG`` times slower than the log's record of the same config (a busy machine, or a
record that was lucky); ``slower_than_untuned`` a tuned build clearly slower than the untuned
one.  ``MachineLoad`` is the load average before and after timing: the machine was *busy* when,
on both samples, other work kept more than ``BUSY_OTHERS`` of a core running beside ``apply``'s
own process.  Each note is one line naming what it is about; the functions here only read
numbers, so they say the same for the same samples.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tunecli.engine.measure.timing import MeasureReply

#: Rounds disagree when their interquartile range exceeds this fraction of their median.
DISAGREE = 0.25
#: A kernel timed this many times slower than the log's record of its config is flagged.
SLOWER_THAN_LOG = 1.5
#: Tuned slower than untuned by more than this fraction is a regression worth a warning.
SLOWER_THAN_UNTUNED = 0.05
#: Other runnable work (load average minus apply's own process) that makes the machine busy.
BUSY_OTHERS = 0.5


@dataclass(frozen=True)
class TimeStats:
    """Seconds per call over a contender's rounds.

    Attributes
    ----------
    median, q1, q3, low, high : float
        The median, quartiles (linear interpolation), lowest and highest round.
    rounds : int
    """

    median: float
    q1: float
    q3: float
    low: float
    high: float
    rounds: int

    @property
    def spread(self) -> float:
        """The interquartile range as a fraction of the median (0 for one round)."""
        return (self.q3 - self.q1) / self.median if self.median > 0 else 0.0

    @property
    def disagree(self) -> bool:
        """Whether the rounds spread more than ``DISAGREE`` of their median."""
        return self.spread > DISAGREE


def time_stats(costs: Sequence[float] | MeasureReply | None) -> TimeStats | None:
    """The statistics of a contender's round times (None: failed, not timed or no time).

    Parameters
    ----------
    costs : sequence of float, MeasureReply or None
        Seconds per call of each round (a reply's ``costs``; a failed reply has none).

    Returns
    -------
    TimeStats or None
    """
    if isinstance(costs, MeasureReply):
        costs = () if costs.error_no else costs.costs
    values = np.asarray(list(costs or ()), dtype=float)
    if not values.size:
        return None
    q1, median, q3 = (float(v) for v in np.percentile(values, [25, 50, 75]))
    return TimeStats(median, q1, q3, float(values.min()), float(values.max()), int(values.size))


def rounds_note(name: str, stats: Mapping[str, TimeStats | None]) -> str | None:
    """One line naming the contenders of ``name`` whose rounds disagree (None when none do).

    Parameters
    ----------
    name : str
        What was timed (``"task 0"``, ``"1 thread"``).
    stats : mapping of str to TimeStats or None
        Each contender's statistics, by name.
    """
    parts = [f"{who} {s.low * 1e3:.4g}..{s.high * 1e3:.4g} ms ({s.spread:.0%})"
             for who, s in stats.items() if s is not None and s.disagree]
    if not parts:
        return None
    return f"{name}: the timing rounds disagree ({'; '.join(parts)}): its times are uncertain"


def compare_with_log(name: str, applied: float | None, logged: float | None) -> str | None:
    """A note when ``applied`` (seconds) is more than ``SLOWER_THAN_LOG`` times ``logged``, else None."""
    if applied is None or not logged or applied <= SLOWER_THAN_LOG * logged:
        return None
    return (f"{name}: timed {applied * 1e3:.4g} ms, {applied / logged:.1f}x the log's {logged * 1e3:.4g} ms "
            "for the same config: the machine may be busier than when it was tuned")


def slower_beyond_noise(slow: TimeStats | None, fast: TimeStats | None) -> bool:
    """Whether ``slow``'s rounds are slower than ``fast``'s beyond the noise: a median more than
    ``SLOWER_THAN_UNTUNED`` above, with the interquartile ranges apart (``slow``'s first quartile
    above ``fast``'s third); False when either was not timed."""
    return (slow is not None and fast is not None and slow.median > (1 + SLOWER_THAN_UNTUNED) * fast.median
            and slow.q1 > fast.q3)


def slower_than_untuned(name: str, tuned: TimeStats | None, untuned: TimeStats | None,
                        what: str = "untuned") -> str | None:
    """A note when the tuned build is slower than the untuned one, else None.

    Slower is ``slower_beyond_noise``: rounds that overlap say the two are too close to tell on this
    machine now.
    """
    if not slower_beyond_noise(tuned, untuned):
        return None
    return (f"{name}: the tuned build is slower than the {what} one ({tuned.median * 1e3:.4g} ms vs "
            f"{untuned.median * 1e3:.4g} ms, {untuned.median / tuned.median:.2f}x): tune longer, or keep "
            f"the {what} build")


@dataclass(frozen=True)
class MachineLoad:
    """Load averages (one minute) sampled around timing, and the cores ``apply`` may use.

    Attributes
    ----------
    samples : tuple of float
        Load averages, before timing first.
    cores : int
    own : float
        Runnable processes that are ``apply``'s own (its worker).
    """

    samples: tuple[float, ...]
    cores: int
    own: float = 1.0

    @property
    def others(self) -> float:
        """Other runnable work over the whole timing (the lowest sample, less ``own``)."""
        return max(0.0, min(self.samples) - self.own) if self.samples else 0.0

    @property
    def busy(self) -> bool:
        """Whether other work ran beside ``apply`` on every sample."""
        return self.others > BUSY_OTHERS

    def note(self) -> str | None:
        """One line saying the machine was busy (None when it was not)."""
        if not self.busy:
            return None
        shown = ", ".join(f"{s:.2f}" for s in self.samples)
        return (f"the machine was busy while timing: load average {shown} on {self.cores} cores (about "
                f"{self.others:.1f} other processes running beside apply's): times may be inflated")


def load_sample() -> float:
    """This machine's one-minute load average (0 where the system has none)."""
    try:
        return float(os.getloadavg()[0])
    except OSError:
        return 0.0


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
