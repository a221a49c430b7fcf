"""``Option``: one named setting of a record or a plugin, with the values it may take.

Declaring a setting once (its type, default and bounds) lets every reader check it the same
way: the record that holds it (``TimingOptions``), the job schema that reads it from YAML, the
RPC decoder that reads it from the network and the registries of tuners and runners.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

_TYPE_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}

#: One option's value, of the type its ``Option`` declares (``Option.parse``), or what its ``convert``
#: makes of a string (the tracker's ``(host, port)``).
OptionValue: TypeAlias = "int | float | bool | str | tuple[str, int]"


@dataclass(frozen=True)
class Option:
    """A named setting: its type, default and the values it may take.

    Attributes
    ----------
    name : str
        The setting's name (TVM's where TVM has one).
    type : type
        ``int``, ``float``, ``bool`` or ``str``; a ``float`` option accepts integers too.
    default : OptionValue, optional
        The value when the setting is not given (None: the plugin's own default).
    minimum, maximum : float, optional
        Inclusive bounds of a number.
    positive : bool
        The number must be > 0.
    choices : tuple of str
        The values a string may take (empty: any string).
    convert : callable, optional
        Turns a valid string into the value (e.g. ``"HOST:PORT"`` into a pair); raises
        ValueError with the problem.
    required : bool
        The setting must be given.
    help : str
        One line saying what the setting does.
    """

    name: str
    type: type
    default: OptionValue | None = None
    minimum: float | None = None
    maximum: float | None = None
    positive: bool = False
    choices: tuple[str, ...] = ()
    convert: Callable[[str], OptionValue] | None = None
    required: bool = False
    help: str = ""

    def problem(self, value: object) -> str | None:
        """What is wrong with ``value`` for this setting (``"expected ..., got ..."``), or None."""
        if self.type is float:
            fits = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif self.type is int:
            fits = isinstance(value, int) and not isinstance(value, bool)
        else:
            fits = isinstance(value, self.type)
        if not fits:
            return f"expected {_TYPE_NAMES.get(self.type, self.type.__name__)}, got {value!r}"
        if self.choices and value not in self.choices:
            return f"expected one of {', '.join(self.choices)}, got {value!r}"
        if self.type in (int, float):
            return self._range_problem(value)
        return None

    def _range_problem(self, value: float) -> str | None:
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        kind = "an integer" if self.type is int else "a number"
        if self.positive and not value > 0:
            return f"expected {kind} > 0, got {shown}"
        low, high = self.minimum, self.maximum
        if low is not None and value < low:
            return f"expected {kind} >= {_bound(low)}, got {shown}"
        if high is not None and value > high:
            if low is not None:
                return f"expected {kind} between {_bound(low)} and {_bound(high)}, got {shown}"
            return f"expected {kind} <= {_bound(high)}, got {shown}"
        return None

    def parse(self, value: object) -> OptionValue:
        """Return ``value`` checked (a float option's integer as a float, a string converted).

        Raises
        ------
        ValueError
            With the problem (``"expected an integer >= 1, got 0"``), not naming the setting.
        """
        problem = self.problem(value)
        if problem:
            raise ValueError(problem)
        if self.type is float:
            return float(value)
        if self.convert is not None:
            return self.convert(value)
        return value


def _bound(value: float) -> str:
    """A bound as written in a message: ``86400000``, ``0.5`` (no exponent for whole numbers)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
