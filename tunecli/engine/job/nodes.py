"""A job file's YAML nodes, keeping line numbers for error messages.

The YAML node tree (not plain Python objects, see ``job.yaml_document.load_document``) keeps the
line every value came from.  ``Node`` wraps a yaml node together with its dotted field path
(``tuner.n_trial``, ``tasks[1].args.N``) and offers typed accessors that raise ``JobError``
in the one format every job error uses::

    jobs/bad.yaml:7: tuner.n_trial: expected an integer, got 'many'

``Problems`` collects every problem of one file, so that a user sees them all at once;
``JobLoader`` is the YAML dialect job files are read in.
"""

from __future__ import annotations

import datetime
import difflib
import math
import re
from collections.abc import Callable, Iterator
from typing import TypeAlias, TypeVar

import yaml

from tunecli.errors import JobError

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"

T = TypeVar("T")

#: A value as YAML's safe schema gives it: a scalar (timestamps and binary data among them), a
#: list, a set or a mapping of those.
YamlScalar: TypeAlias = "None | bool | int | float | str | bytes | datetime.date"
YamlValue: TypeAlias = "YamlScalar | list[YamlValue] | set[YamlScalar] | dict[YamlScalar, YamlValue]"


class JobLoader(yaml.SafeLoader):
    """YAML 1.1 as PyYAML reads it, plus floats written with an exponent and no dot (``1e3``)."""


JobLoader.add_implicit_resolver(
    _FLOAT, re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789"))


class Problems:
    """The problems found in one job file, in the order found (each reported once)."""

    def __init__(self) -> None:
        self._messages: dict[str, None] = {}

    def add(self, err: JobError) -> None:
        """Record the problems of ``err``."""
        for message in err.problems:
            self._messages.setdefault(message)

    def collect(self, read: Callable[[], T], default: T) -> T:
        """Return ``read()``, or record the ``JobError`` it raises and return ``default``."""
        try:
            return read()
        except JobError as err:
            self.add(err)
            return default

    def __bool__(self) -> bool:
        return bool(self._messages)

    def raise_any(self) -> None:
        """Raise one ``JobError`` listing every problem recorded, if there is any."""
        if self._messages:
            raise JobError(*self._messages)


class Node:
    """A YAML node with the file it came from and its dotted field path.

    Parameters
    ----------
    node : yaml.Node
    path : str
        The job file, as the user named it (used verbatim in messages).
    field : str
        Dotted path of this value inside the document ("" for the root).
    loader : yaml.SafeLoader
        The loader that composed ``node`` (constructs scalar values).
    problems : Problems
        Where the problems of the whole document are collected (shared by every node).
    key : yaml.Node, optional
        The mapping key this value belongs to; errors point at the key's line.
    """

    def __init__(self, node: yaml.Node, path: str, field: str, loader: yaml.SafeLoader,
                 problems: Problems, key: yaml.Node | None = None):
        self.node = node
        self.path = path
        self.field = field
        self.problems = problems
        self._loader = loader
        self._key = key

    @property
    def line(self) -> int:
        """1-based line of this value's key (or of the value itself when it has none)."""
        return (self._key or self.node).start_mark.line + 1

    def error(self, message: str) -> JobError:
        """Return a ``JobError`` naming the file, this value's line and its field."""
        where = f"{self.field}: " if self.field else ""
        return JobError(f"{self.path}:{self.line}: {where}{message}")

    def describe(self) -> str:
        """Say what this value is, for 'expected X, got Y' messages."""
        if isinstance(self.node, yaml.MappingNode):
            return "a mapping"
        if isinstance(self.node, yaml.SequenceNode):
            return "a list"
        if self.node.tag == _NULL:
            return "nothing"
        text = self.node.value
        return repr(text) if len(text) <= 60 else repr(text[:57]) + "..."

    def _expect(self, what: str) -> JobError:
        return self.error(f"expected {what}, got {self.describe()}")

    def report(self, message: str) -> None:
        """Record a problem of this value (reading goes on)."""
        self.problems.add(self.error(message))

    def _child(self, node: yaml.Node, field: str, key: yaml.Node | None = None) -> Node:
        return Node(node, self.path, field, self._loader, self.problems, key)

    # -- scalars -------------------------------------------------------------------------
    def value(self) -> YamlValue:
        """Return the plain Python value of this node (any type YAML's safe schema gives)."""
        try:
            return self._loader.construct_object(self.node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as err:
            problem = getattr(err, "problem", None) or str(err)
            tag = self.node.tag.replace("tag:yaml.org,2002:", "!!")
            raise self.error(f"cannot read {self.describe()} tagged {tag}: {problem}") from None

    def is_scalar(self) -> bool:
        return isinstance(self.node, yaml.ScalarNode)

    def is_null(self) -> bool:
        return self.is_scalar() and self.node.tag == _NULL

    def as_str(self) -> str:
        """Return this value as a non-empty string without control characters (numbers are not
        accepted)."""
        if not self.is_scalar() or self.node.tag != _STR:
            raise self._expect("a string")
        if not self.node.value.strip():
            raise self.error("expected a non-empty string")
        if any(ord(c) < 32 or ord(c) == 127 for c in self.node.value):
            raise self.error(f"expected text without control characters, got {self.describe()}")
        return self.node.value

    def as_int(self, minimum: int | None = None, maximum: int | None = None) -> int:
        """Return this value as an integer (booleans are not integers here)."""
        if not self.is_scalar() or self.node.tag != _INT:
            raise self._expect("an integer")
        value = int(self.value())
        if minimum is not None and value < minimum:
            raise self.error(f"expected an integer >= {minimum}, got {self.node.value}")
        if maximum is not None and value > maximum:
            raise self.error(f"expected an integer <= {maximum}, got {self.node.value}")
        return value

    def as_float(self, minimum: float | None = None, positive: bool = False) -> float:
        """Return this value as a number (integers are accepted)."""
        if not self.is_scalar() or self.node.tag not in (_INT, _FLOAT):
            raise self._expect("a number")
        try:
            value = float(self.value())
        except OverflowError:
            value = math.inf
        if not math.isfinite(value):
            raise self.error(f"expected a finite number, got {self.node.value}")
        if positive and not value > 0:
            raise self.error(f"expected a number > 0, got {self.node.value}")
        if minimum is not None and value < minimum:
            raise self.error(f"expected a number >= {minimum:g}, got {self.node.value}")
        return value

    def as_bool(self) -> bool:
        """Return this value as a boolean (``true``/``false``)."""
        if not self.is_scalar() or self.node.tag != _BOOL:
            raise self._expect("true or false")
        return bool(self.value())

    def as_choice(self, choices: tuple[str, ...]) -> str:
        """Return this value as one of ``choices``."""
        value = self.as_str()
        if value not in choices:
            raise self.error(f"expected one of {', '.join(choices)}, got {value!r}")
        return value

    # -- collections ---------------------------------------------------------------------
    def is_mapping(self) -> bool:
        return isinstance(self.node, yaml.MappingNode)

    def is_list(self) -> bool:
        return isinstance(self.node, yaml.SequenceNode)

    def items(self, allowed: tuple[str, ...] | None = None) -> dict[str, Node]:
        """Return the entries of a mapping by key, rejecting duplicate and unknown keys.

        Parameters
        ----------
        allowed : tuple of str, optional
            The keys this mapping may have; None accepts any string key.

        Unknown, duplicate and malformed keys are reported (see :class:`Problems`) and left out.
        """
        if not self.is_mapping():
            raise self._expect("a mapping")
        out: dict[str, Node] = {}
        for key_node, value_node in self.node.value:
            key = self._child(key_node, self.field)
            if key_node.tag == _MERGE:
                key.report("YAML merge keys (<<) are not supported: write the fields out")
                continue
            if not key.is_scalar() or key_node.tag != _STR or not key_node.value.isprintable():
                key.report(f"keys must be names, got {key.describe()}")
                continue
            name = key_node.value
            field = f"{self.field}.{name}" if self.field else name
            if name in out:
                self._child(key_node, field).report("duplicate field")
            elif allowed is not None and name not in allowed:
                close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.75)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                self._child(key_node, field).report(
                    f"unknown field (expected one of: {', '.join(allowed)}){hint}")
            else:
                out[name] = self._child(value_node, field, key_node)
        return out

    def elements(self) -> Iterator[Node]:
        """Iterate over the entries of a list."""
        if not self.is_list():
            raise self._expect("a list")
        for i, node in enumerate(self.node.value):
            yield self._child(node, f"{self.field}[{i}]")
