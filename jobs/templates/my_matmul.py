"""A template of your own, written as for TVM's autotvm (only the imports name tunecli).

Used by ``jobs/custom_template.yaml`` as ``jobs/templates/my_matmul.py:my_matmul``: the product
``C[N, M] = A[N, L] @ B[L, M]``, each output axis split in two by a knob (``tile_y`` for the rows,
``tile_x`` for the columns), the reduction between the outer and the inner parts.
"""

from tunecli import autotvm, te


@autotvm.template("example/my_matmul")
def my_matmul(N, L, M, dtype="float32"):
    a = te.placeholder((N, L), name="A", dtype=dtype)
    b = te.placeholder((L, M), name="B", dtype=dtype)
    depth = te.reduce_axis((0, L), name="k")
    c = te.compute((N, M), lambda row, col: te.sum(a[row, depth] * b[depth, col], axis=depth), name="C")
    sched = te.create_schedule(c.op)
    cfg = autotvm.get_config()
    outer, inner = [], []
    for knob, axis in zip(("tile_y", "tile_x"), sched[c].op.axis, strict=True):
        cfg.define_split(knob, axis, num_outputs=2)
        part_out, part_in = cfg[knob].apply(sched, c, axis)
        outer.append(part_out)
        inner.append(part_in)
    sched[c].reorder(*outer, depth, *inner)
    return sched, [a, b, c]
