"""The Schedule: one Stage per operation, in producer-before-consumer order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

from tunecli.engine.te.operation import ComputeOp, Operation
from tunecli.engine.te.tensor import IterVar, Tensor
from tunecli.errors import ScheduleError

from .cache import cache_read, cache_write
from .rfactor import rfactor
from .stage import INLINE, SCOPE, Stage

#: Operations given by themselves or by their output tensors, alone or in a list.
OpsLike: TypeAlias = Operation | Tensor | Sequence[Operation | Tensor]


def _as_ops(items: OpsLike, what: str) -> list[Operation]:
    if not isinstance(items, (list, tuple)):
        items = [items]
    ops = []
    for x in items:
        if isinstance(x, Tensor):
            x = x.op
        if not isinstance(x, Operation):
            raise ScheduleError(f"{what}: expected operations or tensors, got {x!r}")
        ops.append(x)
    return ops


def post_dfs_order(outputs: Sequence[Operation]) -> list[Operation]:
    """Operations reachable from ``outputs``, every producer before its consumers."""
    order: list[Operation] = []
    seen: set[int] = set()

    def visit(op: Operation) -> None:
        if id(op) in seen:
            return
        seen.add(id(op))
        for t in op.input_tensors:
            visit(t.op)
        order.append(op)

    for op in outputs:
        visit(op)
    return order


class Schedule:
    """How a set of output operations is computed; ``s[tensor]`` gives a Stage."""

    def __init__(self, outputs: Sequence[Operation]) -> None:
        self.outputs = list(outputs)
        self.stages: list[Stage] = []
        self.stage_map: dict[int, Stage] = {}
        self.groups: list[Stage] = []
        for op in post_dfs_order(self.outputs):
            stage = Stage(op, self)
            stage.is_output = any(op is o for o in self.outputs)
            self.stages.append(stage)
            self.stage_map[id(op)] = stage
        self._keep: list[Operation] = list(post_dfs_order(self.outputs))

    def __getitem__(self, key: Stage | Operation | Tensor) -> Stage:
        if isinstance(key, Stage):
            return key
        op = key.op if isinstance(key, Tensor) else key
        stage = self.stage_map.get(id(op))
        if stage is None:
            name = getattr(op, "name", repr(op))
            raise ScheduleError(f"{name} is not part of this schedule (it does not feed its outputs)")
        return stage

    def register(self, op: Operation, stage: Stage) -> None:
        """Map ``op`` to ``stage`` (ops created by schedule primitives)."""
        self.stage_map[id(op)] = stage
        self._keep.append(op)

    def operations(self) -> list[Operation]:
        """Every operation this schedule maps to a stage: the stages' own and those a primitive
        replaced (``s[tensor]`` still answers for a tensor of the original operation)."""
        found: dict[int, Operation] = {id(st.op): st.op for st in self.stages if st.op is not None}
        for op in self._keep:
            found.setdefault(id(op), op)
        return list(found.values())

    def reads(self, stage: Stage) -> list[Stage]:
        """Stages whose outputs ``stage``'s operation reads."""
        out: list[Stage] = []
        for t in stage.op.input_tensors:
            s = self[t]
            if all(s is not o for o in out):
                out.append(s)
        return out

    def producers_closure(self, stage: Stage) -> list[Stage]:
        """All stages ``stage`` depends on, directly or transitively."""
        seen: list[Stage] = []
        todo = [stage]
        while todo:
            for p in self.reads(todo.pop()):
                if all(p is not s for s in seen):
                    seen.append(p)
                    todo.append(p)
        return seen

    def check_attach(self, stage: Stage, parent: Stage) -> None:
        """Raise ScheduleError unless ``stage`` (or group) may be computed inside ``parent``."""
        members = self.group_members(stage) if stage.is_group else [stage]
        target = parent
        if target.is_group:
            raise ScheduleError(f"compute_at of {stage.name}: cannot attach to group {target.name}")
        node: Stage | None = parent
        seen = 0
        while node is not None and seen < 1000:
            if node is stage or any(node is m for m in members) or node.group is stage:
                raise ScheduleError(f"compute_at of {stage.name} at {parent.name}: this would create a cycle "
                                    "of attachments")
            node = node.attach_stage if node.attach_type == SCOPE else (
                node.group if node.group is not None and node.group.attach_type == SCOPE else None)
            seen += 1
        producers = self.producers_closure(target)
        if not any(any(m is p for p in producers) for m in members):
            raise ScheduleError(f"compute_at of {stage.name}: stage {parent.name} does not consume it, "
                                "so it cannot be computed there")

    def group_members(self, group: Stage) -> list[Stage]:
        """Stages that belong to ``group`` (directly or through nested groups)."""
        out = []
        for s in self.stages:
            g = s.group
            while g is not None:
                if g is group:
                    out.append(s)
                    break
                g = g.group
        return out

    # primitives implemented elsewhere --------------------------------------------------------
    def cache_read(self, tensor: Tensor, scope: str,
                   readers: Stage | Operation | Tensor | Sequence[Stage | Operation | Tensor]) -> Tensor:
        """Read ``tensor`` through a copy in ``scope`` for ``readers``; returns the copy."""
        return cache_read(self, tensor, scope, readers)

    def cache_write(self, tensor: Tensor | Sequence[Tensor], scope: str) -> Tensor | list[Tensor]:
        """Compute ``tensor`` into a ``scope`` buffer then copy it out; returns the cache tensor (a
        list of them for a list of the outputs of one operation, as TVM takes them)."""
        if not isinstance(tensor, (list, tuple)):
            return cache_write(self, tensor, scope)
        if not tensor or any(t.op is not tensor[0].op for t in tensor):
            raise ScheduleError("cache_write: a list of tensors must be outputs of one operation")
        first = cache_write(self, tensor[0], scope)
        return [first.op.output(t.value_index) for t in tensor]

    def rfactor(self, tensor: Tensor, axis: IterVar, factor_axis: int = 0) -> Tensor:
        """Factor the reduction over ``axis`` into a new stage; returns its tensor."""
        return rfactor(self, tensor, axis, factor_axis)

    def create_group(self, outputs: OpsLike, inputs: OpsLike | None, include_inputs: bool = False) -> Stage:
        """Group the stages between ``inputs`` and ``outputs`` so they can be placed as a unit."""
        out_ops = _as_ops(outputs, "create_group")
        in_ops = _as_ops(inputs, "create_group") if inputs is not None else []
        in_stages = [self[op] for op in in_ops]
        members: list[Stage] = []
        todo = [self[op] for op in out_ops]
        while todo:
            st = todo.pop()
            if any(st is m for m in members):
                continue
            is_input = any(st is i for i in in_stages)
            if is_input and not include_inputs:
                continue
            members.append(st)
            if not is_input:
                todo.extend(self.reads(st))
        group = Stage(None, self, name=f"group({','.join(op.name for op in out_ops)})")
        for m in members:
            if not isinstance(m.op, ComputeOp):
                continue
            top = m
            while top.group is not None and top.group is not group:
                top = top.group
            if top is not group:
                top.group = group
        self.groups.append(group)
        return group

    def normalize(self) -> Schedule:
        """Make every loop start at 0 (lowering already emits loops from 0, so this only checks)."""
        for st in self.stages:
            if st.attach_type == INLINE and st.is_output:
                raise ScheduleError(f"normalize: output stage {st.name} is inlined")
        return self


def create_schedule(ops: OpsLike) -> Schedule:
    """A default schedule for the given output operations (or tensors).

    Parameters
    ----------
    ops : Operation, Tensor or list of them
        The outputs.

    Returns
    -------
    Schedule
    """
    return Schedule(_as_ops(ops, "create_schedule"))
