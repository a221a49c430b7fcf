"""Reading a YAML document while keeping line numbers for error messages.

``load_document(path)`` composes the YAML node tree (not plain Python objects), so every value
keeps the line it came from.  ``Node`` wraps a yaml node together with its dotted field path
(``tuner.n_trial``, ``tasks[1].args.N``) and offers typed accessors that raise ``JobError``
in the one format every job error uses::

    jobs/bad.yaml:7: tuner.n_trial: expected an integer, got 'many'
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tunecli.errors import JobError

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_STR = "tag:yaml.org,2002:str"


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
    key : yaml.Node, optional
        The mapping key this value belongs to; errors point at the key's line.
    """

    def __init__(self, node: yaml.Node, path: str, field: str, loader: yaml.SafeLoader,
                 key: yaml.Node | None = None):
        self.node = node
        self.path = path
        self.field = field
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
        return repr(self.node.value)

    def _expect(self, what: str) -> JobError:
        return self.error(f"expected {what}, got {self.describe()}")

    def _child(self, node: yaml.Node, field: str, key: yaml.Node | None = None) -> Node:
        return Node(node, self.path, field, self._loader, key)

    # -- scalars -------------------------------------------------------------------------
    def value(self) -> Any:
        """Return the plain Python value of this node (any type)."""
        return self._loader.construct_object(self.node, deep=True)

    def is_scalar(self) -> bool:
        return isinstance(self.node, yaml.ScalarNode)

    def is_null(self) -> bool:
        return self.is_scalar() and self.node.tag == _NULL

    def as_str(self) -> str:
        """Return this value as a non-empty string (numbers are not accepted)."""
        if not self.is_scalar() or self.node.tag != _STR:
            raise self._expect("a string")
        if not self.node.value.strip():
            raise self.error("expected a non-empty string")
        return self.node.value

    def as_int(self, minimum: int | None = None) -> int:
        """Return this value as an integer (booleans are not integers here)."""
        if not self.is_scalar() or self.node.tag != _INT:
            raise self._expect("an integer")
        value = int(self.value())
        if minimum is not None and value < minimum:
            raise self.error(f"expected an integer >= {minimum}, got {value}")
        return value

    def as_float(self, minimum: float | None = None, positive: bool = False) -> float:
        """Return this value as a number (integers are accepted)."""
        if not self.is_scalar() or self.node.tag not in (_INT, _FLOAT):
            raise self._expect("a number")
        value = float(self.value())
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
        """
        if not self.is_mapping():
            raise self._expect("a mapping")
        out: dict[str, Node] = {}
        for key_node, value_node in self.node.value:
            key = self._child(key_node, self.field)
            if not key.is_scalar() or key_node.tag != _STR:
                raise key.error(f"keys must be names, got {key.describe()}")
            name = key_node.value
            field = f"{self.field}.{name}" if self.field else name
            if name in out:
                raise self._child(key_node, field).error("duplicate field")
            if allowed is not None and name not in allowed:
                raise self._child(key_node, field).error(
                    f"unknown field (expected one of: {', '.join(allowed)})")
            out[name] = self._child(value_node, field, key_node)
        return out

    def elements(self) -> Iterator[Node]:
        """Iterate over the entries of a list."""
        if not self.is_list():
            raise self._expect("a list")
        for i, node in enumerate(self.node.value):
            yield self._child(node, f"{self.field}[{i}]")


def load_document(path: str | Path) -> Node:
    """Compose a YAML file into a ``Node`` tree, reporting syntax errors with their line.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    Node
        The root node (field path "").

    Raises
    ------
    JobError
        When the file cannot be read, is not valid YAML, or is empty.
    """
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise JobError(f"{name}: no such job file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise JobError(f"{name}: cannot read the job file: {err}") from None
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = f"{mark.line + 1}:" if mark is not None else ""
        where = ""
        # YAML notices an unclosed bracket only at the next token, often a line later: name the
        # line where the bracket was opened too
        opened, noticed = err.context_mark, err.problem_mark
        if "flow" in (err.context or "") and opened and noticed and opened.line != noticed.line:
            where = f" ({err.context} on line {err.context_mark.line + 1})"
        raise JobError(f"{name}:{line} invalid YAML: {err.problem or err.context}{where}") from None
    except yaml.YAMLError as err:
        raise JobError(f"{name}: invalid YAML: {err}") from None
    if root is None:
        raise JobError(f"{name}: the job file is empty")
    return Node(root, name, "", loader)
