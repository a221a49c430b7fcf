"""FuseOps: groups of operators that become one kernel, as calls of ``Primitive`` functions.

The rules follow TVM's ``FuseOps`` on the operators' :class:`OpPattern`, on the single-output
groups a dataflow walk finds (a node whose value has several consumers ends its group):

* an *anchor* (``OUT_ELEMWISE_FUSABLE``: conv2d, dense, batch_matmul, the pools) takes its
  elementwise and broadcast consumers (bias, batch-norm shift, residual add, relu, clip);
* an injective group (elementwise, broadcast, injective ops) takes injective consumers (a
  concatenate reading it as a field of its tuple: the layout transform of one of its inputs), and is
  taken by a pool or reduction that consumes it (``pad`` then ``max_pool2d``), but never by a
  tunable anchor (whose schedule has no prologue);
* a reduction (``COMM_REDUCE``) takes elementwise and broadcast consumers;
* ``OPAQUE`` operators stay alone, except that softmax takes an injective prologue (the scale and
  mask of attention scores that a reshape separated from their batch matmul) and ends its group.

A value read by several consumers ends its group unless every path from it meets again at one
node (its post-dominator) through operators the group may take, as TVM's post-dominator rule
fuses: ``x * 0.5 * (1 + erf(x / sqrt(2)))`` after a dense layer reads ``x`` twice and is still its
epilogue (:func:`diamond`).

Each group becomes ``Call(Function(params, body).with_attr("Primitive", 1), inputs)`` whose
parameters are typed (``p0, p1, ...``: the group's inputs, constants included).  Under
``PassContext(opt_level=0)`` every operator is its own group.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from tunecli.errors import GraphError

from ..graph_expr import Call, Expr, Function, Tuple, TupleGetItem, Var
from ..op_registry import Op, OpPattern
from ..traversal import children, post_order
from .pass_infra import Pass, PassContext, function_pass

_ANCHOR, _INJECTIVE, _REDUCE, _OPAQUE = "anchor", "injective", "reduce", "opaque"


@dataclass(eq=False)
class _Group:
    kind: str
    members: list[Call] = field(default_factory=list)

    @property
    def output(self) -> Call:
        return self.members[-1]


def _kind(op: Op) -> str:
    if op.pattern <= OpPattern.INJECTIVE:
        return _INJECTIVE
    if op.pattern == OpPattern.OUT_ELEMWISE_FUSABLE and op.strategy_op is not None:
        return _ANCHOR
    if op.pattern in (OpPattern.OUT_ELEMWISE_FUSABLE, OpPattern.COMM_REDUCE):
        return _REDUCE
    return _OPAQUE


def _accepts(group: _Group, op: Op) -> bool:
    """Whether ``group`` (ending in the producer) may take a consumer calling ``op``."""
    if group.kind in (_ANCHOR, _REDUCE):
        return op.pattern <= OpPattern.BROADCAST
    if group.kind == _INJECTIVE:
        return op.pattern <= OpPattern.INJECTIVE
    return False


#: Opaque operators that still take an injective prologue (a scaled, masked softmax is one kernel);
#: nothing fuses after them.
PROLOGUE_OPAQUE = frozenset({"nn.softmax", "nn.log_softmax"})


def _takes_prologue(op: Op, producer: _Group) -> bool:
    """Whether a pool, reduction or softmax calling ``op`` starts a group with the injective ``producer``."""
    return producer.kind == _INJECTIVE and (_kind(op) == _REDUCE or op.name in PROLOGUE_OPAQUE)


#: Most nodes a diamond (a multiply-read value and the consumers up to where its paths meet) holds.
MAX_DIAMOND = 32


def diamond(start: Call, order: list[Expr], consumers: dict[Expr, list[Expr]], body: Expr,
            accepts: Callable[[Op], bool]) -> list[Call] | None:
    """The nodes after ``start`` up to its post-dominator (that node last), in execution order,
    when every one is a call of an operator ``accepts`` and every path from ``start`` reaches it;
    None otherwise.

    Parameters
    ----------
    start : Call
        A value with several consumers.
    order : list of Expr
        The body's nodes in execution (post) order.
    consumers : dict
        Each node's consumers.
    body : Expr
        The function's result: a path may not leave through it before the paths meet.
    accepts : callable
        Whether the group of ``start`` may take a call of an operator.
    """
    pending = set(consumers.get(start, ()))
    region: list[Call] = []
    for node in order[order.index(start) + 1:]:
        if node not in pending:
            continue
        pending.discard(node)
        if not (isinstance(node, Call) and isinstance(node.op, Op) and accepts(node.op)):
            return None
        region.append(node)
        if not pending:
            return region
        if node is body or len(region) >= MAX_DIAMOND:
            return None
        pending.update(consumers.get(node, ()))
    return None


def find_groups(fn: Function, fuse_level: int = 1) -> list[_Group]:
    """The fusion groups of ``fn``'s body, in execution order (each group after its inputs)."""
    order = post_order(fn.body, into_functions=False)
    uses: dict[Expr, int] = {fn.body: 1}
    consumers: dict[Expr, list[Expr]] = {}
    for node in order:
        for c in children(node):
            uses[c] = uses.get(c, 0) + 1
            if node not in consumers.setdefault(c, []):
                consumers[c].append(node)
    group_of: dict[Expr, _Group] = {}
    taken: dict[Expr, _Group] = {}  # nodes of a diamond -> the group that takes them
    groups: list[_Group] = []
    for node in order:
        if not isinstance(node, Call):
            continue
        if not isinstance(node.op, Op):
            _raise_nested()
        joined = taken.get(node)
        if joined is None and fuse_level > 0:
            for arg in _producers(node, uses):
                g = group_of.get(arg)
                if g is None or g.output is not arg or uses.get(arg, 0) != 1:
                    continue
                if _accepts(g, node.op):
                    joined = g
                    break
                if _takes_prologue(node.op, g):
                    g.kind = _OPAQUE if node.op.name in PROLOGUE_OPAQUE else _REDUCE
                    joined = g
                    break
        if joined is None:
            joined = _Group(_kind(node.op))
            groups.append(joined)
        joined.members.append(node)
        group_of[node] = joined
        if fuse_level > 0 and uses.get(node, 0) > 1 and node is not fn.body and joined.kind != _OPAQUE:
            region = diamond(node, order, consumers, fn.body, partial(_accepts, joined)) or []
            if not any(m in taken for m in region):  # diamonds of two groups never share a node
                taken.update((m, joined) for m in region)
    # a group is placed where its output is computed: after every input of every member
    position = {id(n): k for k, n in enumerate(order)}
    return sorted(groups, key=lambda g: position[id(g.output)])


def _producers(call: Call, uses: dict[Expr, int]) -> list[Call]:
    """The call's argument nodes, and the fields of a tuple argument read by this call alone (the
    inputs of a concatenate), anchors' outputs first (a residual add joins its convolution)."""
    args: list[Call] = []
    for a in call.args:
        if isinstance(a, Call):
            args.append(a)
        elif isinstance(a, Tuple) and uses.get(a, 0) == 1:
            args.extend(f for f in a.fields if isinstance(f, Call))
    return sorted(args, key=lambda a: 0 if isinstance(a.op, Op) and _kind(a.op) == _ANCHOR else 1)


def _raise_nested() -> None:
    raise GraphError("FuseOps: the function already calls fused (primitive) functions; fuse once")


def fuse_ops(fn: Function, fuse_level: int = 1) -> Function:
    """``fn`` with each fusion group replaced by a call of a primitive function."""
    groups = find_groups(fn, fuse_level)
    new: dict[Expr, Expr] = {p: p for p in fn.params}
    member_of = {m: g for g in groups for m in g.members}
    for node in post_order(fn.body, into_functions=False):
        if node in new:
            continue
        if isinstance(node, Call):
            g = member_of[node]
            if node is g.output:
                new[node] = _group_call(g, new)
            continue
        if isinstance(node, Tuple):
            new[node] = Tuple([new[f] for f in node.fields]) if all(f in new for f in node.fields) else node
        elif isinstance(node, TupleGetItem):
            new[node] = TupleGetItem(new[node.tuple_value], node.index)
        else:
            new[node] = node
    return Function(fn.params, new[fn.body], fn.ret_type, attrs=fn.attrs)


def _group_call(group: _Group, new: dict[Expr, Expr]) -> Call:
    members = set(group.members)
    params: list[Var] = []
    inputs: list[Expr] = []
    inner: dict[Expr, Expr] = {}

    def outside(e: Expr) -> Expr:
        if e not in inner:
            var = Var(f"p{len(params)}", e.checked_type)
            params.append(var)
            inputs.append(new[e] if e in new else e)
            inner[e] = var
        return inner[e]

    def rebuild(e: Expr) -> Expr:
        if e in members:
            if e not in inner:
                inner[e] = Call(e.op, [rebuild(a) for a in e.args], e.attrs)  # type: ignore[union-attr]
            return inner[e]
        if isinstance(e, Tuple):
            return Tuple([rebuild(f) for f in e.fields])
        return outside(e)

    body = rebuild(group.output)
    prim = Function(params, body).with_attr("Primitive", 1)
    return Call(prim, inputs)


def FuseOps(fuse_opt_level: int = -1) -> Pass:  # noqa: N802 - TVM's name
    """The pass (TVM's ``relay.transform.FuseOps``); level -1 reads the current PassContext."""

    def rewrite(fn: Function) -> Function:
        level = fuse_opt_level if fuse_opt_level >= 0 else PassContext.current().opt_level
        return fuse_ops(fn, level)

    return function_pass("FuseOps", 0, rewrite)
