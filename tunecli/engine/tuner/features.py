"""Feature vectors of configs for cost models: ``knob``, ``itervar`` and ``curve``.

* ``knob``: ``ConfigEntity.get_flatten_feature`` (split sizes, permutations, one-hot annotations,
  knob values), computed for many indices at once from per-knob tables.
* ``itervar``: the template is instantiated and lowered; for every loop of the loop nest
  (pre-order) the features are its extent, depth, the products of the extents around and
  inside it, its kind (serial/parallel/vectorized/unrolled), the arithmetic it executes per
  iteration and, per argument buffer, the stride of its variable in the accesses and the
  number of accesses per iteration; all log-scaled (``log2(1 + x)``), followed by the knob
  values (``get_other_option``).  Vectors of different configs are zero-padded to one length.
* ``curve``: per argument buffer, the number of distinct elements touched and the reuse ratio
  as the iteration count grows from the innermost loop outwards, sampled at 20 points
  (fixed length, so it transfers across shapes), followed by the knob values.

``transfer_features`` lays a config of *another* task of the same template out in the knob
features of this task's space, knob by knob matched by name, so that records of a network's
other layers (other shapes, or a 3x3 layer where this one is 1x1) can train one model, and
``workload_features`` describes the task a row belongs to (its shapes and FLOP count), so that
such a model can tell the layers apart.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from tunecli.engine.build import lower
from tunecli.engine.ir import expr as ir
from tunecli.engine.ir import stmt as st
from tunecli.engine.task.knob_features import entity_features, knob_features
from tunecli.errors import SpaceError

if TYPE_CHECKING:
    from tunecli.engine.task.space import ConfigEntity, ConfigSpace
    from tunecli.engine.task.task import Task

FEATURE_TYPES = ("knob", "itervar", "curve")
_KINDS = (st.SERIAL, st.PARALLEL, st.VECTORIZED, st.UNROLLED)
_CURVE_SAMPLES = 20
logger = logging.getLogger("autotvm")


def _log(x: float) -> float:
    return math.copysign(math.log2(1.0 + abs(x)), x)


def _const(e: ir.Expr, default: int = 1) -> int:
    return int(e.value) if isinstance(e, ir.ConstExpr) else default


def _children(node: ir.Node) -> list[ir.Node]:
    out = []
    for name in node._fields:
        child = getattr(node, name)
        if isinstance(child, (list, tuple)):
            out.extend(c for c in child if isinstance(c, ir.Node))
        elif isinstance(child, ir.Node):
            out.append(child)
    return out


def _uses(node: ir.Node, var: ir.Var) -> bool:
    if node is var:
        return True
    return any(_uses(c, var) for c in _children(node)) if isinstance(node, ir.Node) else False


def _coef(e: ir.Node, var: ir.Var) -> float:
    """Linear coefficient of ``var`` in index expression ``e`` (1 for non-linear uses)."""
    if e is var:
        return 1.0
    if isinstance(e, (ir.ConstExpr, ir.Var)):
        return 0.0
    if isinstance(e, ir.Add):
        return _coef(e.a, var) + _coef(e.b, var)
    if isinstance(e, ir.Sub):
        return _coef(e.a, var) - _coef(e.b, var)
    if isinstance(e, ir.Mul):
        if isinstance(e.b, ir.ConstExpr):
            return _coef(e.a, var) * float(e.b.value)
        if isinstance(e.a, ir.ConstExpr):
            return _coef(e.b, var) * float(e.a.value)
    if isinstance(e, (ir.FloorDiv, ir.Div)) and isinstance(e.b, ir.ConstExpr) and e.b.value:
        return _coef(e.a, var) / float(e.b.value)
    if isinstance(e, (ir.Ramp, ir.Broadcast, ir.Cast)):
        return _coef(e.base if isinstance(e, ir.Ramp) else e.value, var)
    return 1.0 if _uses(e, var) else 0.0


class _Leaf:
    """One store statement with its enclosing loops and what it reads and computes."""

    def __init__(self, loops: list[st.For], store: st.BufferStore):
        self.loops = loops
        self.accesses: list[tuple[st.Buffer, Sequence[ir.Expr]]] = [(store.buffer, store.indices)]
        self.arith = [0, 0, 0]  # add/sub, mul, div/mod
        self._scan(store.value)

    def _scan(self, e: ir.Node) -> None:
        if isinstance(e, ir.BufferLoad):
            self.accesses.append((e.buffer, e.indices))
        elif isinstance(e, (ir.Add, ir.Sub)):
            self.arith[0] += 1
        elif isinstance(e, ir.Mul):
            self.arith[1] += 1
        elif isinstance(e, (ir.Div, ir.FloorDiv, ir.FloorMod)):
            self.arith[2] += 1
        for c in _children(e):
            self._scan(c)


def _collect_leaves(s: ir.Node, loops: list[st.For], out: list[_Leaf], order: list[st.For]) -> None:
    if isinstance(s, st.For):
        order.append(s)
        _collect_leaves(s.body, loops + [s], out, order)
    elif isinstance(s, st.BufferStore):
        out.append(_Leaf(loops, s))
    elif isinstance(s, st.Stmt):
        for c in _children(s):
            _collect_leaves(c, loops, out, order)


def _buffer_names(func: st.PrimFunc) -> list[str]:
    return sorted(b.name for b in func.params)


def _check_feature_type(feature_type: str) -> None:
    """Raise SpaceError unless ``feature_type`` is one of FEATURE_TYPES."""
    if feature_type not in FEATURE_TYPES:
        raise SpaceError(f"Invalid feature type: {feature_type} (use one of {FEATURE_TYPES})")


def _lowered(task: Task, config: ConfigEntity) -> st.PrimFunc:
    if task.target is not None:
        with task.target:
            sch, args = task.instantiate(config)
    else:
        sch, args = task.instantiate(config)
    return lower(sch, args)


def itervar_features(func: st.PrimFunc) -> np.ndarray:
    """Return the loop-nest features of a lowered PrimFunc (see the module docstring).

    Parameters
    ----------
    func : PrimFunc

    Returns
    -------
    numpy.ndarray of float32
    """
    leaves: list[_Leaf] = []
    order: list[st.For] = []
    _collect_leaves(func.body, [], leaves, order)
    names = _buffer_names(func)
    fea: list[float] = []
    for level, loop in enumerate(order):
        inner = [lf for lf in leaves if any(x is loop for x in lf.loops)]
        pos = [next(i for i, x in enumerate(lf.loops) if x is loop) for lf in inner]
        topdown = max((math.prod(_const(x.extent) for x in lf.loops[: p + 1]) for lf, p in zip(inner, pos,
                       strict=True)), default=1)
        per_iter = [math.prod(_const(x.extent) for x in lf.loops[p + 1:]) for lf, p in zip(inner, pos,
                    strict=True)]
        bottomup = max(per_iter, default=1) * _const(loop.extent)
        depth = min(pos, default=level)
        arith = [sum(lf.arith[k] * n for lf, n in zip(inner, per_iter, strict=True)) for k in range(3)]
        fea += [_log(_const(loop.extent)), float(depth), _log(topdown), _log(bottomup)]
        fea += [1.0 if loop.kind == kind else 0.0 for kind in _KINDS]
        fea += [_log(a) for a in arith]
        for name in names:
            strides, count = [], 0
            for lf, n in zip(inner, per_iter, strict=True):
                for buf, indices in lf.accesses:
                    if buf.name == name:
                        count += n
                        strides.extend(abs(_coef(i, loop.loop_var)) for i in indices)
            nonzero = [s for s in strides if s]
            fea += [_log(min(nonzero) if nonzero else 0.0), _log(count)]
    return np.array(fea, dtype=np.float32)


def curve_features(func: st.PrimFunc) -> np.ndarray:
    """Return the sampled touch/reuse curves of a lowered PrimFunc (see the module docstring).

    Parameters
    ----------
    func : PrimFunc

    Returns
    -------
    numpy.ndarray of float32, length ``40 * len(func.params)``
    """
    leaves: list[_Leaf] = []
    _collect_leaves(func.body, [], leaves, [])
    fea: list[float] = []
    deepest = max(leaves, key=lambda lf: math.prod(_const(x.extent) for x in lf.loops), default=None)
    for buf in sorted(func.params, key=lambda b: b.name):
        iters, touched = [0.0], [0.0]
        if deepest is not None:
            n = d = 1
            for loop in reversed(deepest.loops):
                extent = _const(loop.extent)
                n *= extent
                moves = any(buf_ is buf and any(_coef(i, loop.loop_var) for i in idx)
                            for buf_, idx in deepest.accesses)
                d = min(d * extent if moves else d, buf.size)
                iters.append(math.log2(n))
                touched.append(math.log2(d))
        grid = np.linspace(0.0, iters[-1], _CURVE_SAMPLES)
        t = np.interp(grid, iters, touched)
        fea += list(t) + list(np.asarray(grid) - t)  # log distinct elements, log reuse ratio
    return np.array(fea, dtype=np.float32)


def config_features(task: Task, config: ConfigEntity, feature_type: str) -> np.ndarray:
    """Return the features of one config of ``task``.

    Parameters
    ----------
    task : Task
    config : ConfigEntity
    feature_type : {"knob", "itervar", "curve"}

    Returns
    -------
    numpy.ndarray of float32
    """
    _check_feature_type(feature_type)
    if feature_type == "knob":
        return config.get_flatten_feature()
    func = _lowered(task, config)
    loop_fea = itervar_features(func) if feature_type == "itervar" else curve_features(func)
    others = [float(v) if isinstance(v, (int, float)) else 0.0 for v in config.get_other_option().values()]
    return np.concatenate([loop_fea, np.array(others, dtype=np.float32)])


def transfer_features(space: ConfigSpace, config: ConfigEntity) -> np.ndarray:
    """Return the knob features of ``config`` (of any task of ``space``'s template) in the column
    layout of ``space``'s knob features.

    Knobs are matched by name: a knob of ``space`` that ``config`` lacks, or whose features have
    another width there (a split into another number of parts), gives missing (NaN) columns;
    knobs of ``config`` that ``space`` lacks are left out.  For a config of ``space`` itself the
    row equals its knob features.

    Parameters
    ----------
    space : ConfigSpace
    config : ConfigEntity

    Returns
    -------
    numpy.ndarray of float32
    """
    names = set(config)
    fea: list[float] = []
    for name, knob in space.space_map.items():
        width = len(entity_features(knob.entities[0])) if len(knob) else 0
        values = entity_features(config[name]) if name in names else []
        fea.extend(values if len(values) == width else [math.nan] * width)
    return np.array(fea, dtype=np.float32)


def workload_features(task: Task, flop: float | None = None) -> np.ndarray:
    """Return numbers that describe ``task``'s workload: ``log2(1 + |x|)`` of every number in its
    arguments in order (tensor shapes, strides, paddings; strings such as dtypes and layouts are
    left out), then of its FLOP count.

    Appended to the feature rows of a model trained on several tasks of one template (transfer
    learning), they let its trees split the tasks apart, so that a task's own measurements correct
    what the other shapes taught where this shape differs, instead of being averaged with them.

    Parameters
    ----------
    task : Task
    flop : float, optional
        The task's FLOP count, when ``task.flop`` is not known (a task read back from a log).

    Returns
    -------
    numpy.ndarray of float32
    """
    values: list[float] = []

    def walk(arg: object) -> None:
        if isinstance(arg, bool):
            return
        if isinstance(arg, (int, float, np.integer, np.floating)):
            values.append(_log(float(arg)))
        elif isinstance(arg, (tuple, list)):
            for item in arg:
                walk(item)

    walk(task.args)
    values.append(_log(float(flop if flop is not None else task.flop or 0.0)))
    return np.array(values, dtype=np.float32)


def stack_features(rows: Sequence[np.ndarray | None]) -> np.ndarray:
    """Stack feature rows, zero-padding short rows and zero-filling missing (None) ones.

    Parameters
    ----------
    rows : sequence of numpy.ndarray or None

    Returns
    -------
    numpy.ndarray of float32
    """
    width = max((len(r) for r in rows if r is not None), default=0)
    out = np.zeros((len(rows), width), dtype=np.float32)
    for i, r in enumerate(rows):
        if r is not None:
            out[i, : len(r)] = r
    return out


def get_features(task: Task, config_indices: Sequence[int], feature_type: str) -> np.ndarray:
    """Return the features of config indices of ``task``, one row each.

    A config whose template fails to instantiate or lower gets a row of zeros.

    Parameters
    ----------
    task : Task
    config_indices : sequence of int
    feature_type : {"knob", "itervar", "curve"}

    Returns
    -------
    numpy.ndarray of float32
    """
    _check_feature_type(feature_type)
    if feature_type == "knob":
        return knob_features(task.config_space, config_indices)
    rows = []
    for index in config_indices:
        try:
            rows.append(config_features(task, task.config_space.get(int(index)), feature_type))
        except SpaceError:
            raise
        except Exception as err:  # noqa: BLE001 - a config that does not instantiate is a zero row, as in TVM
            logger.debug("no %s features for config %d of %s: %s", feature_type, index, task.name, err)
            rows.append(None)
    return stack_features(rows)
