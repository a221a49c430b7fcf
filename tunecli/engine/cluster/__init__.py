"""Tuning on a Ray cluster: batches built and timed on the nodes of the job's CPU, the log kept
by the driver.

``ray_runner`` (``RayBuilder`` + ``RayRunner``, ``cluster_measure_option``) takes the place of
the local builder and runner; ``connection`` (``RayCluster``) joins the cluster, checks its nodes
and starts a ``node_measurer`` worker on each; ``node_info`` says what a node is (CPU, versions);
``local_cluster`` starts a cluster on this machine.  Ray is the optional extra ``tunecli[ray]``,
imported only when a cluster is used (``ray_import``).
"""

from tunecli.engine.cluster.cluster_errors import ClusterError, ClusterUnreachableError, ClusterVersionError
from tunecli.engine.cluster.ray_runner import RayBuilder, RayRunner, cluster_measure_option

__all__ = ["ClusterError", "ClusterUnreachableError", "ClusterVersionError", "RayBuilder", "RayRunner",
           "cluster_measure_option"]
