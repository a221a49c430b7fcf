"""Schedules: Stage primitives (split ... compute_at) and Schedule primitives (cache_*, rfactor)."""

from .relations import Fuse, Split
from .schedule import Schedule, create_schedule, post_dfs_order
from .stage import Stage

__all__ = ["Fuse", "Split", "Schedule", "create_schedule", "post_dfs_order", "Stage"]
