"""What ``apply``'s times can be trusted for: robust statistics of rounds, and notes when they cannot.

A contender timed in turn with others (``measure.interleaved``) has one time per round. Its
``TimeStats`` are the median (what tables show) and the spread of the rounds (quartiles, lowest and
highest); rounds *disagree* when their interquartile range is more than ``DISAGREE`` of the median.
``compare_with_log`` flags a kernel ``apply`` timed more than ``SLOWER_THAN_LOG`` times slower than
the log's record of the same config (a busy machine, or a record that was lucky);
``slower_than_untuned`` a tuned build clearly slower than the untuned one; ``median_uncertain`` says
when a median should not stand alone (the machine was busy, or the rounds disagree): the fastest
round (``TimeStats.low``), what the kernel does when nothing disturbs it, repeats better from run to
run then. ``MachineLoad`` says how much other work ran beside the timing: ``LoadWindow`` counts,
over the timing's own wall-clock window, the CPU time of the cores this process may use (time stolen
by a hypervisor included) less the CPU time of this process and its descendants (the measurement
workers, on any number of threads), so load that starts or stops mid-run counts for the time it ran,
and ``apply``'s own threads never do. The machine was *busy* when that other work averaged more than
``BUSY_OTHERS`` of a core. Where the system has no such counters, the one-minute load average before
and after stands in (a lagging average that counts threads). Each note is one line naming what it is
about; the functions here only read numbers, so they say the same for the same samples.
"""

from __future__ import annotations

import math
import os
import time
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
#: Other work (cores' worth, averaged over the timing) that makes the machine busy.
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


def significant_digits(stats: TimeStats | None, most: int = 4) -> int:
    """How many significant digits of ``stats``' median its rounds support: up to the digit of their
    interquartile range's first digit (at least 1), ``most`` when unknown (one round, no spread)."""
    if stats is None or stats.rounds < 2 or stats.median <= 0 or stats.q3 <= stats.q1:
        return most
    digits = math.floor(math.log10(stats.median)) - math.floor(math.log10(stats.q3 - stats.q1)) + 1
    return max(1, min(most, digits))


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


def median_uncertain(load: MachineLoad | None, *stats: TimeStats | None) -> bool:
    """Whether medians timed under ``load`` are uncertain: the machine was busy (``MachineLoad.busy``)
    or the rounds of any of ``stats`` disagree (``TimeStats.disagree``); False when nothing was timed.

    Parameters
    ----------
    load : MachineLoad or None
        The other work while timing (None: not measured).
    *stats : TimeStats or None
        The contenders' statistics.
    """
    if all(s is None for s in stats):
        return False
    return (load is not None and load.busy) or any(s is not None and s.disagree for s in stats)


@dataclass(frozen=True)
class MachineLoad:
    """How much other work ran on this machine while ``apply`` timed, and the cores it may use.

    Attributes
    ----------
    samples : tuple of float
        One-minute load averages, before timing first (shown; the fallback measure).
    cores : int
    own : float
        Runnable processes that are ``apply``'s own, for the load-average fallback.
    measured : float or None
        Other work over the timing window, in cores (CPU seconds of the cores less this process
        tree's, per wall-clock second); None where the system does not count CPU time.
    seconds : float
        The timing window's length (0 when not measured).
    own_cpu : float
        CPU seconds of this process and its descendants over the window.
    """

    samples: tuple[float, ...]
    cores: int
    own: float = 1.0
    measured: float | None = None
    seconds: float = 0.0
    own_cpu: float = 0.0

    @property
    def others(self) -> float:
        """Other work over the timing, in cores (measured; else the lowest load average less ``own``)."""
        if self.measured is not None:
            return self.measured
        return max(0.0, min(self.samples) - self.own) if self.samples else 0.0

    @property
    def busy(self) -> bool:
        """Whether other work took more than ``BUSY_OTHERS`` of a core while timing."""
        return self.others > BUSY_OTHERS

    def note(self, who: str = "apply", doing: str = "timing") -> str | None:
        """One line saying the machine was busy while ``who`` was ``doing`` (None when it was not)."""
        if not self.busy:
            return None
        shown = ", ".join(f"{s:.2f}" for s in self.samples)
        if self.measured is not None:
            return (f"the machine was busy while {doing}: other work kept about {self.others:.1f} of "
                    f"{self.cores} cores busy beside {who}'s over {self.seconds:.0f} s (load average "
                    f"{shown}): times may be inflated")
        return (f"the machine was busy while {doing}: load average {shown} on {self.cores} cores (about "
                f"{self.others:.1f} other processes running beside {who}'s): times may be inflated")


@dataclass(frozen=True)
class CpuTimes:
    """CPU seconds counted at one wall-clock moment (``time.monotonic``).

    Attributes
    ----------
    wall : float
    cores_busy : float
        Seconds the cores this process may use ran anything (stolen time included).
    own : float
        Seconds this process and its descendants ran (reaped children included).
    """

    wall: float
    cores_busy: float
    own: float


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_fields(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (None: gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()


def _tree_ticks(root: int) -> int:
    """Clock ticks of ``root`` and its live descendants, each with its reaped children's."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(entry)
            if fields is not None:  # state ppid ... utime(12) stime(13) cutime(14) cstime(15)
                parents[int(entry)] = int(fields[1])
                ticks[int(entry)] = sum(int(v) for v in fields[11:15])
    total = 0
    for pid, count in ticks.items():
        walk, seen = pid, 0
        while walk not in (root, 0, 1) and walk in parents and seen < 64:
            walk, seen = parents[walk], seen + 1
        if walk == root:
            total += count
    return total


def cpu_times() -> CpuTimes | None:
    """The machine's and this process tree's CPU time now (None where ``/proc`` does not count it)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    mine = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    busy = 0
    for line in lines:
        name, _, rest = line.partition(" ")
        core = name[3:]
        if not (name.startswith("cpu") and core.isdigit()) or (mine is not None and int(core) not in mine):
            continue
        v = [int(x) for x in rest.split()]  # user nice system idle iowait irq softirq steal ...
        busy += v[0] + v[1] + v[2] + sum(v[5:8])
    return CpuTimes(time.monotonic(), busy / _TICK, _tree_ticks(os.getpid()) / _TICK)


class LoadWindow:
    """Counts the other work that runs on this machine from its creation to ``finish``."""

    def __init__(self) -> None:
        self._load = load_sample()
        self._cpu = cpu_times()

    def finish(self) -> MachineLoad:
        """The other work over the window so far (``MachineLoad.measured``: None without counters)."""
        samples, cores = (self._load, load_sample()), usable_cores()
        end = cpu_times()
        if self._cpu is None or end is None or end.wall <= self._cpu.wall:
            return MachineLoad(samples, cores)
        seconds = end.wall - self._cpu.wall
        own = max(0.0, end.own - self._cpu.own)
        others = max(0.0, end.cores_busy - self._cpu.cores_busy - own) / seconds
        return MachineLoad(samples, cores, measured=min(float(cores), others), seconds=seconds, own_cpu=own)


def load_sample() -> float:
    """This machine's one-minute load average (0 where the system has none)."""
    try:
        return float(os.getloadavg()[0])
    except OSError:
        return 0.0


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
