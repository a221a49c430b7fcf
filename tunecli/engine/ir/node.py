"""The base of expression and statement nodes: immutable objects whose children are named in
``_fields`` (what visitors walk) and whose attributes are ``__slots__``."""

from __future__ import annotations

import copy


class Node:
    """Base of expression and statement nodes: immutable, children named in ``_fields``."""

    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def replace(self, **changes: object) -> Node:
        """Return a copy of this node with some attributes changed."""
        node = object.__new__(type(self))
        for slot in _all_slots(type(self)):
            object.__setattr__(node, slot, changes.get(slot, getattr(self, slot)))
        return node

    def __deepcopy__(self, memo: dict[int, object]) -> Node:
        """A copy whose children are deep copies; the node itself where none changed (nodes are
        immutable), so a ``memo`` mapping some nodes to others substitutes them throughout."""
        changed = {}
        for slot in _all_slots(type(self)):
            value = getattr(self, slot)
            copied = copy.deepcopy(value, memo)
            if copied is not value:
                changed[slot] = copied
        result = self.replace(**changed) if changed else self
        memo[id(self)] = result
        return result

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} nodes are immutable")

    def __repr__(self) -> str:
        from .printer import node_str

        return node_str(self)

    __str__ = __repr__


def _all_slots(cls: type) -> list[str]:
    slots: list[str] = []
    for klass in reversed(cls.__mro__):
        slots.extend(s for s in getattr(klass, "__slots__", ()) if s not in slots)
    return slots


def set_fields(node: Node, **values: object) -> None:
    """Set the attributes of a node being constructed (nodes are immutable afterwards)."""
    for name, value in values.items():
        object.__setattr__(node, name, value)
