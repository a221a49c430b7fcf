"""``TimingOptions``: how a kernel is measured, one record from the job file to the device.

The YAML ``measure.runner`` section, ``LocalRunner(...)`` and ``RPCRunner(...)`` keyword
arguments all become one ``TimingOptions``; it travels whole inside every
:class:`~tunecli.engine.measure.timing.MeasureRequest` to the measuring worker and over the
wire to RPC device servers. Each setting is declared once (:data:`TIMING_OPTIONS`) and checked
when the record is made, so every reader sees the same rules.

Two defaults differ from TVM's on purpose: every measurement first runs the kernel, untimed,
for ``warmup_ms`` (50 ms), and ``cooldown_interval`` is 0 (TVM: 0.1 s). A core left idle runs
slowly for its first tens of milliseconds of work, so TVM's pause before each measurement
made parallel kernels time far below their speed (see :mod:`tunecli.engine.measure.timing`);
the warm-up removes that, and the pause only cost its length per trial.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from tunecli.engine.option import Option
from tunecli.errors import TuneError

#: Default milliseconds of untimed calls before the timed rounds (see the module doc).
WARMUP_MS = 50.0
#: Longest duration any setting may ask for (a day), in seconds: longer ones overflow the clocks.
MAX_SECONDS = 86400.0


def _setting(default: float | bool, help: str, **rule: float | bool) -> Any:
    """A dataclass field whose :class:`Option` (type from the default, bounds from ``rule``) is in
    its metadata (untyped, as ``dataclasses.field`` is, so it stands for any field's value)."""
    return field(default=default, metadata={"rule": rule, "help": help})


@dataclass(frozen=True)
class TimingOptions:
    """How to time a kernel (TVM's ``LocalRunner``/``RPCRunner``/``time_evaluator`` settings).

    Attributes
    ----------
    number : int
        Calls per timed round.
    repeat : int
        Timed rounds; each gives one cost (seconds per call).
    min_repeat_ms : float
        Grow ``number`` until a round lasts at least this many milliseconds.
    timeout : float
        Seconds one measurement (load, check, all rounds) may take; then RUN_TIMEOUT.
    enable_cpu_cache_flush : bool
        Flush the caches before each round (meant for ``number=1``).
    warmup_ms : float
        Milliseconds of untimed calls before the timed rounds (not in TVM; see the module doc).
    cooldown_interval : float
        Seconds the runner rests after each measurement (TVM's default is 0.1; see the module doc).
    check_correctness : bool
        Compare outputs with the task's reference; a mismatch gives WRONG_ANSWER.

    Raises
    ------
    TuneError
        When a setting is out of range, naming it.
    """

    number: int = _setting(4, "calls per timing round", minimum=1)
    repeat: int = _setting(3, "timing rounds", minimum=1)
    min_repeat_ms: float = _setting(0.0, "grow `number` until a round lasts this long", minimum=0,
                                    maximum=MAX_SECONDS * 1000)
    timeout: float = _setting(10.0, "seconds per measurement", positive=True, maximum=MAX_SECONDS)
    enable_cpu_cache_flush: bool = _setting(False, "flush the CPU caches before each round")
    warmup_ms: float = _setting(WARMUP_MS, "run each kernel untimed this long first", minimum=0,
                                maximum=MAX_SECONDS * 1000)
    cooldown_interval: float = _setting(0.0, "seconds of rest after each measurement", minimum=0,
                                        maximum=MAX_SECONDS)
    check_correctness: bool = _setting(False, "compare outputs with the reference")

    def __post_init__(self) -> None:
        for opt in TIMING_OPTIONS:
            try:
                object.__setattr__(self, opt.name, opt.parse(getattr(self, opt.name)))
            except ValueError as err:
                raise TuneError(f"timing option {opt.name}: {err}") from None

    def with_values(self, **values: float | bool | None) -> TimingOptions:
        """Return a copy with the settings of ``values`` that are not None."""
        given = {name: value for name, value in values.items() if value is not None}
        return dataclasses.replace(self, **given) if given else self


#: Every setting of :class:`TimingOptions`, in field order (job schema, wire format, docs).
TIMING_OPTIONS: tuple[Option, ...] = tuple(
    Option(f.name, type(f.default), f.default, help=f.metadata["help"], **f.metadata["rule"])
    for f in dataclasses.fields(TimingOptions))
