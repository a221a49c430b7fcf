"""A template for the apply tests whose ``offset`` knob makes the kernel read far outside its input
(config 1 reads 1 GiB before it: the kernel dies of SIGSEGV; config 0 is a correct ``b = 2 * a``)."""

from tunecli import autotvm, te

#: How far (in elements) the ``far`` config reads before its input: 1 GiB, unmapped memory.
FAR = 1 << 28


@autotvm.template("test_apply/maybe_crash")
def maybe_crash(n):
    a = te.placeholder((n,), name="a")
    cfg = autotvm.get_config()
    cfg.define_knob("offset", [0, -FAR])
    offset = cfg["offset"].val
    b = te.compute((n,), lambda i: a[i + offset] * 2.0, name="b")
    return te.create_schedule(b.op), [a, b]
