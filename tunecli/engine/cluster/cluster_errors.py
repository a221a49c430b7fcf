"""The errors of cluster tuning, each naming the cluster's address or the node at fault."""

from __future__ import annotations

from tunecli.errors import TuneError


class ClusterError(TuneError):
    """A Ray cluster cannot tune this job: Ray is not installed, or no node can measure its target."""


class ClusterUnreachableError(ClusterError):
    """The head of a Ray cluster cannot be reached at start, or was lost during a tune (the log
    holds every measurement that finished; running the same command again resumes)."""


class ClusterVersionError(ClusterError):
    """The nodes of a Ray cluster run another tunecli, llvmlite or Python than the driver."""
