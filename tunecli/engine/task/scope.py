"""Process-wide AutoTVM switches (``GLOBAL_SCOPE``), as in TVM's ``autotvm.env``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class AutotvmGlobalScope:
    """Switches read by the dispatch contexts and tuners.

    Attributes
    ----------
    in_tuning : bool
        True while ``Tuner.tune`` runs.
    silent : bool
        Suppresses the fallback-config warnings.
    """

    current: AutotvmGlobalScope | None = None

    def __init__(self) -> None:
        self._old = AutotvmGlobalScope.current
        AutotvmGlobalScope.current = self
        self.in_tuning = False
        self.silent = False

    def deep_copy(self, global_scope: AutotvmGlobalScope) -> None:
        """Copy the switches of ``global_scope`` into this scope.

        Parameters
        ----------
        global_scope : AutotvmGlobalScope
        """
        self.in_tuning = global_scope.in_tuning
        self.silent = global_scope.silent


GLOBAL_SCOPE = AutotvmGlobalScope()


@contextmanager
def fallback_warnings_silenced() -> Iterator[None]:
    """Within it, a query that falls back gives no fallback-config warning (``GLOBAL_SCOPE.silent``);
    the switch is restored after."""
    silent, GLOBAL_SCOPE.silent = GLOBAL_SCOPE.silent, True
    try:
        yield
    finally:
        GLOBAL_SCOPE.silent = silent
