"""Templates for the apply tests whose knob turns a correct kernel into one that crashes or hangs.

``maybe_crash``: config 1 reads 1 GiB before its input (the kernel dies of SIGSEGV).
``maybe_hang``: config 1 sums 2**30 terms per element (minutes of work: the kernel times out).
Config 0 of both computes its result correctly in microseconds.
"""

from tunecli import autotvm, te

#: How far (in elements) the crashing config reads before its input: 1 GiB, unmapped memory.
FAR = 1 << 28


@autotvm.template("test_apply/maybe_crash")
def maybe_crash(n):
    a = te.placeholder((n,), name="a")
    cfg = autotvm.get_config()
    cfg.define_knob("offset", [0, -FAR])
    offset = cfg["offset"].val
    b = te.compute((n,), lambda i: a[i + offset] * 2.0, name="b")
    return te.create_schedule(b.op), [a, b]


@autotvm.template("test_apply/maybe_hang")
def maybe_hang(n):
    a = te.placeholder((n,), name="a")
    cfg = autotvm.get_config()
    cfg.define_knob("steps", [1, 1 << 30])
    k = te.reduce_axis((0, cfg["steps"].val), name="k")
    b = te.compute((n,), lambda i: te.sum(a[i], axis=k), name="b")
    return te.create_schedule(b.op), [a, b]
