"""A template as a TVM user writes it, imports changed to tunecli (used by the job tests)."""

from tunecli import autotvm, te
from tunecli.errors import InstantiationError


@autotvm.template("test_job/scaled_add")
def scaled_add(n, factor, dtype="float32"):
    a = te.placeholder((n,), name="a", dtype=dtype)
    b = te.compute((n,), lambda i: a[i] * factor + 1, name="b")
    s = te.create_schedule(b.op)
    cfg = autotvm.get_config()
    cfg.define_split("tile", s[b].op.axis[0], num_outputs=2)
    cfg["tile"].apply(s, b, s[b].op.axis[0])
    return s, [a, b]


def not_a_template(n):
    return n


@autotvm.template("test_job/never_builds")
def never_builds(n):
    """A template whose every config fails to instantiate (a space is still collected)."""
    a = te.placeholder((n,), name="a")
    b = te.compute((n,), lambda i: a[i] + 1, name="b")
    cfg = autotvm.get_config()
    cfg.define_knob("k", [0, 1, 2])
    if isinstance(cfg, autotvm.ConfigEntity):
        raise InstantiationError(f"never_builds: config {cfg.index} is refused on purpose")
    return te.create_schedule(b.op), [a, b]
