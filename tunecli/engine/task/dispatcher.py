"""Dispatch contexts: which config a template gets for a (target, workload).

``DispatchContext.current`` is a stack of contexts entered with ``with``; a query that the
innermost context cannot answer goes to the one below it, down to the root
``FallbackContext``, which hands out a ``FallbackConfigEntity`` and warns once per
(target, workload).  ``ApplyHistoryBest`` (answers from tuning logs) is in ``history_best``.
"""

from __future__ import annotations

import logging

from tunecli.engine.target import Target
from tunecli.engine.task.fallback_config import FallbackConfigEntity
from tunecli.engine.task.scope import GLOBAL_SCOPE
from tunecli.engine.task.space import ConfigSpace
from tunecli.engine.task.workload_args import Workload

logger = logging.getLogger("autotvm")


class DispatchContext:
    """Base of the contexts answering ``query(target, workload) -> config``."""

    current: DispatchContext | None = None
    # Messages already warned about: each fallback warning is logged once per process.
    warning_messages: set[str] = set()

    def __init__(self) -> None:
        self._old_ctx = DispatchContext.current

    def query(self, target: Target | str | None, workload: Workload | None) -> ConfigSpace:
        """Return the config for ``workload`` on ``target``, asking the enclosing context if needed.

        Parameters
        ----------
        target : Target or None
        workload : tuple or None

        Returns
        -------
        ConfigSpace
        """
        ret = self._query_inside(target, workload)
        if ret is None:
            ret = self._old_ctx.query(target, workload)
        return ret

    def choose(self, target: Target | str | None,
               workloads: list[Workload]) -> tuple[Workload, ConfigSpace] | None:
        """For a call with several implementations (``workloads``: one per implementation), the
        workload and config a context that decides per call gives it (``apply_graph_best``); None
        when no context on the stack does: the caller compares the queried configs' costs.

        Parameters
        ----------
        target : Target
        workloads : list of tuple

        Returns
        -------
        (workload, ConfigSpace) or None
        """
        return self._old_ctx.choose(target, workloads) if self._old_ctx is not None else None

    def update(self, target: Target | str | None, workload: Workload, cfg: ConfigSpace) -> None:
        """Make ``cfg`` the answer for (target, workload) in this context.

        Parameters
        ----------
        target : Target
        workload : tuple
        cfg : ConfigSpace
        """
        raise NotImplementedError

    def _query_inside(self, target: Target | str | None, workload: Workload | None) -> ConfigSpace | None:
        raise NotImplementedError

    def __enter__(self) -> DispatchContext:
        self._old_ctx = DispatchContext.current
        DispatchContext.current = self
        return self

    def __exit__(self, *exc: object) -> None:
        DispatchContext.current = self._old_ctx


class ApplyConfig(DispatchContext):
    """Answer every query with one config (used to trace or instantiate a template).

    Parameters
    ----------
    config : ConfigSpace or ConfigEntity
    """

    def __init__(self, config: ConfigSpace):
        super().__init__()
        self._config = config
        self.workload: Workload | None = None

    def _query_inside(self, target: Target | str | None, workload: Workload | None) -> ConfigSpace:
        self.workload = workload
        return self._config

    def update(self, target: Target | str | None, workload: Workload, cfg: ConfigSpace) -> None:
        """Replace the config (see ``DispatchContext.update``)."""
        self._config = cfg


class FallbackContext(DispatchContext):
    """The root context: a ``FallbackConfigEntity`` per (target, workload), with one warning."""

    def __init__(self) -> None:
        super().__init__()
        self.memory: dict[tuple[str, Workload | None], ConfigSpace] = {}

    def _query_inside(self, target: Target | str | None, workload: Workload | None) -> ConfigSpace:
        key = (str(target), workload)
        if key in self.memory:
            return self.memory[key]
        if not GLOBAL_SCOPE.silent:
            msg = (f"Cannot find config for target={target}, workload={workload}. A fallback "
                   "configuration is used, which may bring great performance regression.")
            if msg not in DispatchContext.warning_messages:
                DispatchContext.warning_messages.add(msg)
                logger.warning(msg)
        cfg = FallbackConfigEntity()
        self.memory[key] = cfg
        return cfg

    def clear_cache(self, target: Target | str | None, workload: Workload) -> None:
        """Forget the fallback config of (target, workload).

        Parameters
        ----------
        target : Target
        workload : tuple
        """
        self.memory.pop((str(target), workload), None)

    def update(self, target: Target | str | None, workload: Workload, cfg: ConfigSpace) -> None:
        """Use ``cfg`` for (target, workload) from now on."""
        self.memory[(str(target), workload)] = cfg


DispatchContext.current = FallbackContext()


def clear_fallback_cache(target: Target | str | None, workload: Workload) -> None:
    """Forget the root context's fallback config of (target, workload).

    Parameters
    ----------
    target : Target
    workload : tuple
    """
    context = DispatchContext.current
    while not isinstance(context, FallbackContext):
        context = context._old_ctx
    context.clear_cache(target, workload)
