"""Process-wide AutoTVM switches (``GLOBAL_SCOPE``), as in TVM's ``autotvm.env``."""

from __future__ import annotations


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
