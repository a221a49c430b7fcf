"""A Stage: how one operation is computed (its loop structure and where it is placed)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, TypeAlias

from tunecli.engine.ir import expr as E
from tunecli.engine.te.operation import ComputeOp, Operation, PlaceholderOp
from tunecli.engine.te.tensor import COMM_REDUCE, DATA_PAR, THREAD_INDEX, IterVar, Range
from tunecli.errors import ScheduleError

from .relations import Fuse, Split, index_of

if TYPE_CHECKING:
    from .schedule import Schedule

ROOT, INLINE, SCOPE = "root", "inline", "scope"

#: What a pragma carries: an integer-valued expression (``auto_unroll_max_step``), a string, or nothing.
PragmaValue: TypeAlias = "E.ExprLike | str | None"

logger = logging.getLogger("tunecli.schedule")


class Stage:
    """The schedule of one operation (or of a group of stages when ``op`` is None).

    Attributes
    ----------
    op : Operation
        The operation computed now (cache_write/cache_read may replace it).
    origin_op : Operation
        The operation the stage was created for.
    all_iter_vars, leaf_iter_vars : list of IterVar
        Every axis ever created, and the current loop order (outermost first).
    relations : list
        Split/Fuse relations in creation order.
    iter_var_attrs : dict
        ``{IterVar: kind}`` for parallel/vectorized/unrolled axes.
    bindings : dict
        ``{IterVar: thread axis}`` set by :meth:`bind`.
    attach_type : str
        ``root``, ``inline`` or ``scope`` (computed at ``attach_stage``'s ``attach_ivar``).
    """

    def __init__(self, op: Operation | None, schedule: Schedule, name: str | None = None) -> None:
        self.op = op
        self.origin_op = op
        self.schedule = schedule
        self.group: Stage | None = None
        self.is_group = op is None
        self._name = name
        self.relations: list[Split | Fuse] = []
        root = (list(op.axis) + list(op.reduce_axis)) if isinstance(op, ComputeOp) else []
        self.all_iter_vars: list[IterVar] = list(root)
        self.leaf_iter_vars: list[IterVar] = list(root)
        self.iter_var_attrs: dict[IterVar, str] = {}
        self.pragmas: dict[IterVar, list[tuple[str, PragmaValue]]] = {}
        self.bindings: dict[IterVar, IterVar] = {}
        self.attach_type = ROOT
        self.attach_stage: Stage | None = None
        self.attach_ivar: IterVar | None = None
        self.scope = "global"
        self.is_output = False
        self.storage_aligns: dict[int, tuple[int, int]] = {}  # dimension -> (factor, offset)

    @property
    def name(self) -> str:
        """Name of the stage (its operation, or the group)."""
        return self._name if self.op is None else self.op.name

    def __repr__(self) -> str:
        return f"stage({self.name})"

    # helpers ---------------------------------------------------------------------------------
    def _check_leaf(self, iv: object, what: str) -> IterVar:
        if not isinstance(iv, IterVar):
            raise ScheduleError(f"{what} on stage {self.name}: expected an IterVar (axis), got {iv!r}")
        if index_of(self.leaf_iter_vars, iv) >= 0:
            return iv
        if index_of(self.all_iter_vars, iv) >= 0:
            raise ScheduleError(f"{what} on stage {self.name}: axis {iv.var.name} was already split or "
                                "fused; use the axes that replaced it")
        raise ScheduleError(f"{what} on stage {self.name}: axis {iv.var.name} does not belong to this stage")

    def _check_compute(self, what: str) -> None:
        if self.is_group:
            raise ScheduleError(f"{what}: not supported on group {self.name}")
        if isinstance(self.op, PlaceholderOp):
            raise ScheduleError(f"{what}: stage {self.name} is a placeholder (an input); it has no loops")

    def _new_iv(self, name: str, iter_type: str) -> IterVar:
        iv = IterVar(None, E.Var(name, "int32"), iter_type)
        self.all_iter_vars.append(iv)
        return iv

    # loop structure --------------------------------------------------------------------------
    def split(self, parent: IterVar, factor: E.ExprLike | None = None, nparts: E.ExprLike | None = None
              ) -> tuple[IterVar, IterVar]:
        """Split ``parent`` into (outer, inner) with inner extent ``factor`` or ``nparts`` outer parts.

        Returns
        -------
        tuple of IterVar
            ``(outer, inner)``; non-dividing factors are handled by guards when lowering.
        """
        self._check_compute("split")
        self._check_leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise ScheduleError(f"split of {parent.var.name} in stage {self.name}: give exactly one of "
                                "factor= or nparts=")
        value = factor if factor is not None else nparts
        try:
            n = int(E.convert(value))
        except Exception as exc:
            raise ScheduleError(f"split of {parent.var.name} in stage {self.name}: the factor must be a "
                                f"constant integer, got {value!r}") from exc
        if n <= 0:
            raise ScheduleError(f"split of {parent.var.name} in stage {self.name}: factor must be positive, "
                                f"got {n}")
        outer = self._new_iv(f"{parent.var.name}.outer", parent.iter_type)
        inner = self._new_iv(f"{parent.var.name}.inner", parent.iter_type)
        ext = _const_extent(parent)
        if ext is not None:  # nominal domains (from the op's axes) for convenience, as for root axes
            in_ext = min(n, ext) if factor is not None else -(-ext // n)
            outer.dom, inner.dom = Range(0, -(-ext // in_ext)), Range(0, in_ext)
        pos = index_of(self.leaf_iter_vars, parent)
        self.leaf_iter_vars[pos:pos + 1] = [outer, inner]
        self.relations.append(Split(parent, outer, inner, n if factor is not None else None,
                                    n if nparts is not None else None))
        return outer, inner

    def tile(self, x_parent: IterVar, y_parent: IterVar, x_factor: E.ExprLike, y_factor: E.ExprLike
             ) -> tuple[IterVar, IterVar, IterVar, IterVar]:
        """Split two axes and reorder to ``(x_outer, y_outer, x_inner, y_inner)``."""
        xo, xi = self.split(x_parent, factor=x_factor)
        yo, yi = self.split(y_parent, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def reorder(self, *args: IterVar) -> None:
        """Put the given axes in this order, in the positions they occupy together."""
        self._check_compute("reorder")
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        for iv in args:
            self._check_leaf(iv, "reorder")
        if len({id(iv) for iv in args}) != len(args):
            raise ScheduleError(f"reorder on stage {self.name}: an axis is given twice")
        positions = sorted(index_of(self.leaf_iter_vars, iv) for iv in args)
        for pos, iv in zip(positions, args, strict=True):
            self.leaf_iter_vars[pos] = iv

    def fuse(self, *args: IterVar) -> IterVar:
        """Fuse adjacent axes (outer to inner) into one axis; returns it."""
        self._check_compute("fuse")
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        if not args:
            raise ScheduleError(f"fuse on stage {self.name}: no axes given")
        for iv in args:
            self._check_leaf(iv, "fuse")
        if len({id(iv) for iv in args}) != len(args):
            raise ScheduleError(f"fuse on stage {self.name}: an axis is given twice")
        pos = [index_of(self.leaf_iter_vars, iv) for iv in args]
        if pos != list(range(pos[0], pos[0] + len(args))):
            raise ScheduleError(f"fuse on stage {self.name}: axes {[iv.var.name for iv in args]} must be "
                                "adjacent and given outer to inner")
        if len({iv.iter_type for iv in args}) != 1:
            raise ScheduleError(f"fuse on stage {self.name}: cannot fuse a reduction axis with a "
                                "data-parallel axis")
        fused = args[0]
        for inner in args[1:]:
            new = self._new_iv(f"{fused.var.name}.{inner.var.name}.fused", inner.iter_type)
            eo, ei = _const_extent(fused), _const_extent(inner)
            if eo is not None and ei is not None:
                new.dom = Range(0, eo * ei)
            p = index_of(self.leaf_iter_vars, fused)
            self.leaf_iter_vars[p:p + 2] = [new]
            self.relations.append(Fuse(fused, inner, new))
            fused = new
        return fused

    def _annotate(self, iv: IterVar, kind: str, what: str) -> None:
        self._check_compute(what)
        self._check_leaf(iv, what)
        if kind in ("parallel", "vectorized") and iv.iter_type == COMM_REDUCE:
            raise ScheduleError(f"{what} on stage {self.name}: axis {iv.var.name} is a reduction axis")
        self.iter_var_attrs[iv] = kind

    def vectorize(self, var: IterVar) -> None:
        """Mark ``var`` to be vectorized (its extent must be constant when lowered)."""
        self._annotate(var, "vectorized", "vectorize")

    def unroll(self, var: IterVar) -> None:
        """Mark ``var`` to be unrolled."""
        self._annotate(var, "unrolled", "unroll")

    def parallel(self, var: IterVar) -> None:
        """Mark ``var`` to run in parallel threads."""
        self._annotate(var, "parallel", "parallel")

    def pragma(self, var: IterVar, pragma_type: str, pragma_value: PragmaValue = None) -> None:
        """Attach a pragma to loop ``var``.

        * ``unroll``, ``vectorize``, ``parallel``: the same as ``s.unroll(var)`` etc.
        * ``auto_unroll_max_step`` (an int N): TVM's UnrollLoop under this loop — serial loops with
          constant extents in its scope (itself included) are unrolled while the unrolled copies
          hold at most N statements (see ``engine.lower.auto_unroll``).
        * ``unroll_explicit``: accepted; a no-op on every target (TVM's 0 only leaves unrolling
          to the backend, and loops marked here are always expanded by tunecli's codegen, for
          the CPU and the NVPTX backend alike).
        * any other pragma (``debug_skip_region``, ``import_llvm`` ...): stored and ignored.
        """
        self._check_compute("pragma")
        self._check_leaf(var, "pragma")
        if pragma_type in ("auto_unroll_max_step", "unroll_explicit") and pragma_value is not None:
            try:
                pragma_value = int(E.convert(pragma_value))
            except Exception as exc:
                raise ScheduleError(f"pragma {pragma_type} on axis {var.var.name} of stage {self.name}: the "
                                    f"value must be a constant integer, got {pragma_value!r}") from exc
        kinds = {"unroll": "unrolled", "vectorize": "vectorized", "parallel": "parallel"}
        if pragma_type in kinds:
            self._annotate(var, kinds[pragma_type], "pragma")
        self.pragmas.setdefault(var, []).append((pragma_type, pragma_value))

    def bind(self, ivar: IterVar, thread_ivar: IterVar) -> None:
        """Bind loop ``ivar`` to a GPU thread axis (``te.thread_axis``), as TVM's ``Stage.bind``.

        For a GPU target (``cuda``) the loop becomes the block or thread index (``blockIdx.*``,
        ``threadIdx.*``), ``vthread`` loops are interleaved into each thread, and stages of scope
        ``shared`` computed inside thread loops cover the whole block's tile (``engine.lower``).

        On the CPU target a bound axis stays a loop, with the extent bound inference gives it
        (a thread axis's own range is not used), and that loop is ``serial`` whatever the tag
        (``blockIdx.*``, ``threadIdx.*``, ``vthread``, ``cthread``): each "thread" runs in turn,
        so stages computed inside it (``shared``/``local`` caches) are computed per iteration and
        results are the same as on a GPU.  Annotations on a bound axis (``parallel`` ...) are
        ignored, as TVM ignores them, and ``auto_unroll_max_step`` never unrolls a bound loop
        (in TVM it is not a loop).  Use ``s[C].parallel(axis)`` on an unbound axis for threads.

        As in TVM, a reduction axis may be bound (TVM's cross-thread reduction; here a serial
        loop), and binding an axis again to another thread replaces the binding with a warning.
        """
        self._check_compute("bind")
        if not isinstance(thread_ivar, IterVar) or thread_ivar.iter_type != THREAD_INDEX:
            raise ScheduleError(f"bind on stage {self.name}: the second argument must be a thread axis "
                                f"(te.thread_axis(\"threadIdx.x\")), got {thread_ivar!r}")
        self._check_leaf(ivar, "bind")
        if ivar.iter_type not in (DATA_PAR, COMM_REDUCE):
            raise ScheduleError(f"bind on stage {self.name}: cannot bind axis {ivar.var.name} of type "
                                f"{ivar.iter_type} to a thread")
        old = self.bindings.get(ivar)
        if old is not None and old is not thread_ivar:
            logger.warning("bind on stage %s: axis %s is already bound to thread %s; now bound to %s",
                           self.name, ivar.var.name, old.thread_tag, thread_ivar.thread_tag)
        self.bindings[ivar] = thread_ivar

    # placement -------------------------------------------------------------------------------
    def compute_at(self, parent: Stage, scope: IterVar) -> None:
        """Compute this stage inside loop ``scope`` of stage ``parent`` (a consumer)."""
        if not isinstance(parent, Stage):
            raise ScheduleError(f"compute_at of {self.name}: the target must be a Stage, got {parent!r}")
        if not self.is_group:
            self._check_compute("compute_at")
        if parent is self:
            raise ScheduleError(f"compute_at of {self.name}: a stage cannot be computed at itself")
        if parent.attach_type == INLINE:
            raise ScheduleError(f"compute_at of {self.name}: target stage {parent.name} is inlined")
        parent._check_leaf(scope, f"compute_at of {self.name}")
        self.schedule.check_attach(self, parent)
        self.attach_type, self.attach_stage, self.attach_ivar = SCOPE, parent, scope

    def compute_inline(self) -> None:
        """Substitute this stage's body into its consumers (no loops or buffer of its own)."""
        self._check_compute("compute_inline")
        if self.op.reduce_axis:
            raise ScheduleError(f"compute_inline of {self.name}: a reduction cannot be inlined")
        if self.op.num_outputs > 1:
            raise ScheduleError(f"compute_inline of {self.name}: an operation of {self.op.num_outputs} "
                                "outputs cannot be inlined")
        if self.is_output:
            raise ScheduleError(f"compute_inline of {self.name}: it is an output of the schedule")
        for other in self.schedule.stages:
            if other.attach_stage is self:
                raise ScheduleError(f"compute_inline of {self.name}: stage {other.name} is computed at it")
        self.attach_type, self.attach_stage, self.attach_ivar = INLINE, None, None

    def compute_root(self) -> None:
        """Compute this stage at the top level (undoing compute_at/compute_inline)."""
        if not self.is_group:
            self._check_compute("compute_root")
        self.attach_type, self.attach_stage, self.attach_ivar = ROOT, None, None

    def storage_align(self, axis: IterVar, factor: int, offset: int) -> None:
        """Pad this stage's buffer so that the stride of ``axis``'s dimension is ``k * factor +
        offset`` for some k (TVM's ``storage_align``: e.g. shared-memory rows out of step with the
        banks).  Only a temporary buffer is padded; a kernel argument keeps its given layout."""
        self._check_compute("storage_align")
        dims = [n for n, iv in enumerate(self.op.axis) if iv is axis]
        if not dims:
            raise ScheduleError(f"storage_align on stage {self.name}: {getattr(axis, 'var', axis)!r} is not "
                                "one of the operation's axes (op.axis)")
        if not (isinstance(factor, int) and isinstance(offset, int) and factor > 0 and 0 <= offset):
            raise ScheduleError(f"storage_align on stage {self.name}: need an int factor > 0 and offset "
                                f">= 0, got factor={factor!r}, offset={offset!r}")
        self.storage_aligns[dims[0]] = (factor, offset)

    def set_scope(self, scope: str) -> None:
        """Set the storage scope of this stage's buffer (``global``, ``shared`` or ``local``)."""
        self.scope = scope


def _const_extent(iv: IterVar) -> int | None:
    if iv.dom is None or not isinstance(iv.dom.extent, E.IntImm):
        return None
    return iv.dom.extent.value
