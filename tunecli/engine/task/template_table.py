"""The table of registered templates (TVM's ``TASK_TABLE``), which loads tunecli's built-in
templates the first time it is asked for a name it lacks or for a listing."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_keys, dict_values

    from tunecli.engine.task.template_registry import TaskTemplate

#: The modules that define tunecli's built-in templates (``@template`` at their top level).
BUILTIN_TEMPLATE_MODULES = ("tunecli.engine.ops.registry",)


def load_builtin_templates() -> None:
    """Register tunecli's built-in templates (import :data:`BUILTIN_TEMPLATE_MODULES`); the task
    table calls this at its first lookup, so no caller imports them for that."""
    for module in BUILTIN_TEMPLATE_MODULES:
        importlib.import_module(module)


class TemplateTable(dict[str, "TaskTemplate"]):
    """``name -> TaskTemplate``, TVM's ``TASK_TABLE``: every lookup (``get``, ``in``, ``[]``) of a
    name not registered yet, and every listing, first loads the built-in templates (once per
    process, :func:`load_builtin_templates`)."""

    def __init__(self) -> None:
        super().__init__()
        self._builtins_loaded = False

    def _load_builtins(self) -> None:
        if not self._builtins_loaded:
            self._builtins_loaded = True
            try:
                load_builtin_templates()
            except BaseException:
                self._builtins_loaded = False
                raise

    def get(self, name: str, default: TaskTemplate | None = None) -> TaskTemplate | None:  # type: ignore[override]
        if not super().__contains__(name):
            self._load_builtins()
        return super().get(name, default)

    def __getitem__(self, name: str) -> TaskTemplate:
        if not super().__contains__(name):
            self._load_builtins()
        return super().__getitem__(name)

    def __contains__(self, name: object) -> bool:
        if not super().__contains__(name):
            self._load_builtins()
        return super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        self._load_builtins()
        return super().__iter__()

    def __len__(self) -> int:
        self._load_builtins()
        return super().__len__()

    def keys(self) -> dict_keys[str, TaskTemplate]:
        self._load_builtins()
        return super().keys()

    def values(self) -> dict_values[str, TaskTemplate]:
        self._load_builtins()
        return super().values()

    def items(self) -> dict_items[str, TaskTemplate]:
        self._load_builtins()
        return super().items()
