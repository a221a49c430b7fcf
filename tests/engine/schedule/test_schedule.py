"""Schedule primitives: structure of stages and every illegal request (ScheduleError)."""

import pytest

from tunecli import te
from tunecli.engine.schedule import Fuse, Split
from tunecli.errors import ScheduleError


def mm(m=16, n=16, k=8):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


def test_create_schedule_orders_producers_first():
    A, B, C = mm()
    s = te.create_schedule(C.op)
    assert [st.name for st in s.stages] == ["A", "B", "C"]
    assert s[C] is s[C.op] and s[C].op is C.op and s[C].is_output
    assert s[C].leaf_iter_vars == C.op.axis + C.op.reduce_axis


def test_split_tile_reorder_fuse_structure():
    A, B, C = mm()
    s = te.create_schedule(C.op)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    io, jo, ii, ji = s[C].tile(i, j, 4, 8)
    assert [iv.var.name for iv in s[C].leaf_iter_vars] == ["i.outer", "j.outer", "i.inner", "j.inner", "k"]
    ko, ki = s[C].split(k, nparts=2)
    assert isinstance(s[C].relations[-1], Split) and s[C].relations[-1].nparts == 2
    s[C].reorder(ko, io, ki)
    names = [iv.var.name for iv in s[C].leaf_iter_vars]
    assert names == ["k.outer", "j.outer", "i.inner", "j.inner", "i.outer", "k.inner"]
    f = s[C].fuse(s[C].leaf_iter_vars[1], s[C].leaf_iter_vars[2])
    assert isinstance(s[C].relations[-1], Fuse) and f.var.name == "j.outer.i.inner.fused"
    assert ko.iter_type == "comm_reduce" and io.iter_type == "data_par"
    assert [int(v.dom.extent) for v in (io, ii, ko, ki, f)] == [4, 4, 2, 4, 8]
    s[C].vectorize(ji)
    s[C].unroll(ki)
    s[C].parallel(f)
    assert s[C].iter_var_attrs[ji] == "vectorized" and s[C].iter_var_attrs[f] == "parallel"


def test_cache_write_with_reduction_moves_the_reduction():
    A, B, C = mm()
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    assert CC.op.name == "C.local" and s[CC].scope == "local"
    assert CC.op.reduce_axis and not s[C].op.reduce_axis
    assert s[C].op.input_tensors == [CC] and s[C] is s[C.op]
    assert [st.name for st in s.stages] == ["A", "B", "C.local", "C"]


def test_cache_read_redirects_readers():
    A, B, C = mm()
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    assert AA.op.name == "A.local" and AA in s[C].op.input_tensors and A not in s[C].op.input_tensors
    assert s[C].op.axis == C.op.axis


def test_compute_inline_and_root():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    assert s[B].attach_type == "inline"
    s[B].compute_root()
    assert s[B].attach_type == "root"
    s[B].compute_at(s[C], s[C].op.axis[0])
    assert s[B].attach_stage is s[C]


def test_create_group():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: B[i] * 2, name="C")
    D = te.compute((8,), lambda i: C[i] - 1, name="D")
    s = te.create_schedule(D.op)
    g = s.create_group(outputs=C, inputs=A)
    assert s[B].group is g and s[C].group is g and s[A].group is None
    g.compute_at(s[D], s[D].op.axis[0])
    assert g.attach_stage is s[D]


# errors -------------------------------------------------------------------------------------------

def sched():
    A, B, C = mm()
    s = te.create_schedule(C.op)
    return s, A, B, C


def err_foreign_axis():
    s, A, B, C = sched()
    other = te.compute((4,), lambda i: i, name="other")
    s[C].split(other.op.axis[0], 2)


def err_split_twice():
    s, A, B, C = sched()
    i = s[C].op.axis[0]
    s[C].split(i, 2)
    s[C].split(i, 2)


def err_factor_zero():
    s, A, B, C = sched()
    s[C].split(s[C].op.axis[0], 0)


def err_both_factor_nparts():
    s, A, B, C = sched()
    s[C].split(s[C].op.axis[0], factor=2, nparts=2)


def err_reorder_cross_stage():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[C].reorder(s[B].op.axis[0], s[C].op.axis[0])


def err_reorder_duplicate():
    s, A, B, C = sched()
    i = s[C].op.axis[0]
    s[C].reorder(i, i)


def err_vectorize_reduce():
    s, A, B, C = sched()
    s[C].vectorize(s[C].op.reduce_axis[0])


def err_parallel_reduce():
    s, A, B, C = sched()
    s[C].parallel(s[C].op.reduce_axis[0])


def err_fuse_not_adjacent():
    s, A, B, C = sched()
    i, j = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    s[C].reorder(i, k, j)
    s[C].fuse(i, j)


def err_fuse_reduce_with_data():
    s, A, B, C = sched()
    s[C].fuse(s[C].op.axis[1], s[C].op.reduce_axis[0])


def err_compute_at_not_consumer():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: A[i] * 2, name="C")
    D = te.compute((8,), lambda i: B[i] + C[i], name="D")
    s = te.create_schedule(D.op)
    s[B].compute_at(s[C], s[C].op.axis[0])


def err_compute_at_cycle():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: B[i] * 2, name="C")
    D = te.compute((8,), lambda i: C[i] + 1, name="D")
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], s[D].op.axis[0])
    s[D].compute_at(s[C], s[C].op.axis[0])


def err_compute_at_self():
    s, A, B, C = sched()
    s[C].compute_at(s[C], s[C].op.axis[0])


def err_compute_at_foreign_axis():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    C = te.compute((8,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], s[B].op.axis[0])


def err_inline_reduction():
    A, B, C = mm()
    D = te.compute((16, 16), lambda i, j: C[i, j] + 1, name="D")
    s = te.create_schedule(D.op)
    s[C].compute_inline()


def err_inline_output():
    s, A, B, C = sched()
    E = te.compute((16,), lambda i: C[i, 0], name="E")
    s2 = te.create_schedule(E.op)
    s2[E].compute_inline()


def err_inline_placeholder():
    s, A, B, C = sched()
    s[A].compute_inline()


def err_split_placeholder():
    s, A, B, C = sched()
    s[A].split(s[C].op.axis[0], 2)


def err_unknown_tensor():
    s, A, B, C = sched()
    s[te.placeholder((3,), name="Z")]


def err_cache_write_after_split():
    s, A, B, C = sched()
    s[C].split(s[C].op.axis[0], 2)
    s.cache_write(C, "local")


def err_cache_bad_scope():
    s, A, B, C = sched()
    s.cache_write(C, "registers")


def err_cache_read_not_reader():
    s, A, B, C = sched()
    s.cache_read(A, "local", [B])


@pytest.mark.parametrize("case", [
    (err_foreign_axis, "does not belong"), (err_split_twice, "already split"),
    (err_factor_zero, "positive"), (err_both_factor_nparts, "exactly one"),
    (err_reorder_cross_stage, "does not belong"), (err_reorder_duplicate, "twice"),
    (err_vectorize_reduce, "reduction axis"), (err_parallel_reduce, "reduction axis"),
    (err_fuse_not_adjacent, "adjacent"), (err_fuse_reduce_with_data, "reduction"),
    (err_compute_at_not_consumer, "does not consume"), (err_compute_at_cycle, "cycle"),
    (err_compute_at_self, "itself"), (err_compute_at_foreign_axis, "does not belong"),
    (err_inline_reduction, "reduction cannot be inlined"), (err_inline_output, "output"),
    (err_inline_placeholder, "placeholder"), (err_split_placeholder, "placeholder"),
    (err_unknown_tensor, "not part of this schedule"), (err_cache_write_after_split, "already scheduled"),
    (err_cache_bad_scope, "scope"), (err_cache_read_not_reader, "does not read"),
], ids=lambda c: c[0].__name__ if isinstance(c, tuple) else str(c))
def test_illegal_requests_raise_schedule_error(case):
    fn, fragment = case
    with pytest.raises(ScheduleError, match=fragment):
        fn()


def test_cache_write_after_compute_at_into_it_is_refused():
    A, B, C = mm()
    D = te.compute((16, 16), lambda i, j: A[i, 0] + 1, name="D")
    E2 = te.compute((16, 16), lambda i, j: C[i, j] + D[i, j], name="E")
    s = te.create_schedule(E2.op)
    s[D].compute_at(s[E2], s[E2].op.axis[0])
    with pytest.raises(ScheduleError, match="computed at stage E"):
        s.cache_write(E2, "local")
