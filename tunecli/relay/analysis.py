"""TVM's ``tvm.relay.analysis`` face."""

from tunecli.engine.graph.traversal import free_vars, post_order_visit

__all__ = ["free_vars", "post_order_visit"]
