"""Where a dispatch answer came from: ``ConfigSource(kind, detail)``, attached to the config.

Kinds, in the order a query tries them: ``log`` (a record of the user's logs for this workload),
``package`` (a record of a pre-tuned package, ``log.tophub``), ``nearest`` (no record of the
workload: the config of the nearest record of the same template, this CPU's or else one of the same
vector width's, moved into this workload's space, ``log.nearest_record``), ``default`` (the
template's fallback config).  No cost model chooses configs at build time: there is no such kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tunecli.errors import TuneError

if TYPE_CHECKING:
    from tunecli.engine.task.space import ConfigSpace

#: The kinds of ``ConfigSource``, most trusted first.
KINDS = ("log", "package", "nearest", "default")


@dataclass(frozen=True)
class ConfigSource:
    """Where one config came from.

    Attributes
    ----------
    kind : str
        One of ``KINDS``.
    detail : str
        What answered: the log or package file, the nearest record's workload and file, or ``""``.
    """

    kind: str
    detail: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise TuneError(f"ConfigSource: unknown kind {self.kind!r} (one of {', '.join(KINDS)})")

    @property
    def measured(self) -> bool:
        """True when a measurement of this very workload stands behind the config (log, package)."""
        return self.kind in ("log", "package")

    def text(self) -> str:
        """``"nearest: conv2d_NCHWc.x86 (...) in llvm.log"``; the kind alone without a detail."""
        return f"{self.kind}: {self.detail}" if self.detail else self.kind


DEFAULT = ConfigSource("default")


def config_source(config: ConfigSpace) -> ConfigSource:
    """The source of a dispatch answer: the one attached to it (``config.source``), else ``default``
    for a fallback config and ``log`` for any other config (a config set by hand or with ``update``).

    Parameters
    ----------
    config : ConfigSpace or ConfigEntity

    Returns
    -------
    ConfigSource
    """
    source = getattr(config, "source", None)
    if isinstance(source, ConfigSource):
        return source
    return DEFAULT if getattr(config, "is_fallback", False) else ConfigSource("log")
