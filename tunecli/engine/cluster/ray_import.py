"""Ray, imported where it is used: the optional extra ``tunecli[ray]``."""

from __future__ import annotations

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
