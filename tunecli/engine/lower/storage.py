"""Storage: a Buffer per tensor and flat row-major indices (temporaries offset by their region)."""

from __future__ import annotations

from collections.abc import Sequence

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.simplify import int_bounds
from tunecli.engine.ir.visitor import Mutator
from tunecli.engine.schedule.schedule import Schedule
from tunecli.engine.schedule.stage import Stage
from tunecli.engine.te.operation import PlaceholderOp
from tunecli.engine.te.tensor import Tensor, TensorRead
from tunecli.errors import LoweringError

from .bound import BoundInfo, const_upper


class Storage:
    """Buffers of arguments (params) and temporaries, and the flattening of tensor accesses."""

    def __init__(self, sch: Schedule, args: list[Tensor], info: BoundInfo) -> None:
        self.sch = sch
        self.info = info
        self.params: list[S.Buffer] = []
        # (stage, output index) -> buffer: a stage of several outputs writes several buffers
        self._param_of: dict[tuple[int, int], S.Buffer] = {}
        for t in args:
            if not isinstance(t, Tensor):
                raise LoweringError(f"lower: arguments must be tensors, got {t!r}")
            key = (id(sch[t]), t.value_index)
            if key in self._param_of:
                raise LoweringError(f"lower: tensor {t.name} is given twice in args")
            buf = S.Buffer(t.name, t.shape, t.dtype, "global")
            self.params.append(buf)
            self._param_of[key] = buf
        self._temp: dict[tuple[int, int], tuple[S.Buffer, list[E.Expr]]] = {}
        self._strides: dict[tuple[int, int], list[int | E.Expr]] = {}  # padded (storage_align) buffers
        self._names: set[str] = {b.name for b in self.params}

    def temp_buffers(self, stage: Stage) -> list[S.Buffer]:
        """The Allocate'd buffers of a computed stage's outputs that are not arguments."""
        outputs = [i for i in range(stage.op.num_outputs) if (id(stage), i) not in self._param_of]
        if outputs and (id(stage), outputs[0]) not in self._temp:
            shape, mins = self._region_shape(stage)
            strides = aligned_strides(shape, stage.storage_aligns) if stage.storage_aligns else None
            for i in outputs:
                if strides is not None:
                    self._strides[(id(stage), i)] = strides
                out = stage.op.output(i)
                base = stage.op.name if stage.op.num_outputs == 1 else out.name
                name, n = base, 1
                while name in self._names:  # two stages named "compute": keep buffer names distinct
                    name, n = f"{base}_{n}", n + 1
                self._names.add(name)
                alloc = shape if strides is None else [strides[0] * shape[0]]  # padded: one flat extent
                self._temp[(id(stage), i)] = (S.Buffer(name, alloc, out.dtype, stage.scope), mins)
        return [self._temp[(id(stage), i)][0] for i in outputs]

    def _region_shape(self, stage: Stage) -> tuple[list[int | E.Expr], list[E.Expr]]:
        dom = self.info.dom[id(stage)]
        shape: list[int | E.Expr] = []
        mins = []
        for iv in stage.op.axis:
            lo, ext = dom[iv]
            if isinstance(ext, E.IntImm) or int_bounds(ext, self.info.var_ranges)[1] is not None:
                n = const_upper(ext, self.info, f"buffer of stage {stage.name}, axis {iv.var.name}")
                shape.append(max(1, n))  # not clamped to the domain: a region may start below 0
            else:  # a symbolic size (te.var)
                shape.append(ext)
            mins.append(lo)
        return shape, mins

    def _resolve(self, tensor: Tensor) -> tuple[S.Buffer, list[E.Expr] | None]:
        stage = self.sch[tensor]
        key = (id(stage), tensor.value_index)
        if key in self._param_of:
            return self._param_of[key], None
        if isinstance(stage.op, PlaceholderOp):
            raise LoweringError(f"lower: placeholder {tensor.name} is read but not given in args")
        if key not in self._temp:
            self.temp_buffers(stage)
        buf, mins = self._temp[key]
        return buf, mins

    def flat_index(self, tensor: Tensor, indices: Sequence[E.Expr]) -> tuple[S.Buffer, E.Expr]:
        """The buffer of ``tensor`` and the row-major index of ``indices`` in it."""
        buf, mins = self._resolve(tensor)
        strides = self._strides.get((id(self.sch[tensor]), tensor.value_index))
        flat: E.Expr = E.IntImm(0)
        if strides is not None:
            for d, (idx, stride) in enumerate(zip(indices, strides, strict=True)):
                rel = idx if mins is None else idx - mins[d]
                flat = rel * stride if d == 0 else flat + rel * stride
            return buf, flat
        for d, (idx, n) in enumerate(zip(indices, buf.shape, strict=True)):
            rel = idx if mins is None else idx - mins[d]
            flat = rel if d == 0 else flat * n + rel
        return buf, flat

    def load(self, tensor: Tensor, indices: Sequence[E.Expr]) -> E.Expr:
        """A BufferLoad of ``tensor`` at ``indices``."""
        buf, flat = self.flat_index(tensor, indices)
        return E.BufferLoad(buf, [flat])

    def store(self, tensor: Tensor, value: E.Expr, indices: Sequence[E.Expr]) -> S.Stmt:
        """A BufferStore of ``value`` into ``tensor`` at ``indices``."""
        buf, flat = self.flat_index(tensor, indices)
        if value.dtype != buf.dtype:
            value = E.cast(buf.dtype, value)
        return S.BufferStore(buf, value, [flat])

    def lower_expr(self, e: E.Expr) -> E.Expr:
        """Replace every tensor read in ``e`` by a flat BufferLoad."""
        outer = self

        class _Flatten(Mutator):
            def visit_TensorRead(self, node: TensorRead) -> E.Expr:
                idx = tuple(self.visit(i) for i in node.indices)
                return outer.load(node.tensor, idx)

        return _Flatten().visit(e)


def aligned_strides(shape: list[int | E.Expr], aligns: dict[int, tuple[int, int]]) -> list[int | E.Expr]:
    """Row-major strides of ``shape`` with each dimension ``d`` of ``aligns`` padded to a stride of
    ``k * factor + offset`` (TVM's ``storage_align``, the innermost dimension first)."""
    strides: list[int | E.Expr] = [0] * len(shape)
    stride: int | E.Expr = 1
    for d in reversed(range(len(shape))):
        if d in aligns:
            factor, offset = aligns[d]
            stride = stride + (factor + offset - stride % factor) % factor
        strides[d] = stride
        stride = stride * shape[d]
    return strides
