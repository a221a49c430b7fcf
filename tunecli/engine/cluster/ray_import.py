"""Ray, imported where it is used: the optional extra ``tunecli[ray]``."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import ModuleType

from tunecli.engine.cluster.cluster_errors import ClusterError

#: What to install for cluster tuning.
RAY_EXTRA = "tunecli[ray]"


def import_ray() -> ModuleType:
    """Return the ``ray`` module.

    Raises
    ------
    ClusterError
        Naming the extra to install, when Ray is not installed.
    """
    try:
        import ray
    except ImportError as err:
        raise ClusterError(f"tuning on a Ray cluster needs Ray: pip install '{RAY_EXTRA}' ({err})") from None
    return ray


@contextlib.contextmanager
def keep_sigterm() -> Iterator[None]:
    """Within the block, keep this process's SIGTERM handling: joining a cluster (``ray.init``) installs
    Ray's, which ends the driver at once (a ``kill`` would skip an interrupted tune's ``finally`` blocks)."""
    main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if handler is not None:
            signal.signal(signal.SIGTERM, handler)
