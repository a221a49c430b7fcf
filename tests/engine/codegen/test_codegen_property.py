"""Property test: random integer expressions compiled (scalar and vectorized) agree with Python."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tunecli.engine.build import build
from tunecli.engine.ir import Buffer, BufferLoad, BufferStore, For, Max, Min, PrimFunc, Select, Var, const

N = 24
OPS = {
    "+": (lambda a, b: a + b, lambda a, b: a + b),
    "-": (lambda a, b: a - b, lambda a, b: a - b),
    "*": (lambda a, b: a * b, lambda a, b: a * b),
    "//": (lambda a, b: a // b, lambda a, b: a // b),
    "%": (lambda a, b: a % b, lambda a, b: a % b),
    "min": (Min, min),
    "max": (Max, max),
}
# leaves: x, y (loaded), i (the loop variable), small constants; divisors are non-zero constants
leaf = st.one_of(st.sampled_from(["x", "y", "i"]), st.integers(-9, 9))
tree = st.recursive(leaf, lambda sub: st.one_of(
    st.tuples(st.sampled_from(["+", "-", "*", "min", "max"]), sub, sub),
    st.tuples(st.sampled_from(["//", "%"]), sub, st.integers(-7, 7).filter(bool)),
    st.tuples(st.just("select"), sub, sub, sub),
), max_leaves=8)


def to_ir(t, env):
    if isinstance(t, str):
        return env[t]
    if isinstance(t, int):
        return const(t, "int64")
    if t[0] == "select":
        return Select(to_ir(t[1], env) < to_ir(t[2], env), to_ir(t[2], env), to_ir(t[3], env))
    return OPS[t[0]][0](to_ir(t[1], env), to_ir(t[2], env))


def evaluate(t, env):
    if isinstance(t, str):
        return env[t]
    if isinstance(t, int):
        return t
    if t[0] == "select":
        return evaluate(t[2], env) if evaluate(t[1], env) < evaluate(t[2], env) else evaluate(t[3], env)
    return OPS[t[0]][1](evaluate(t[1], env), evaluate(t[2], env))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree, st.sampled_from(["serial", "vectorized"]))
def test_random_integer_expressions_match_python(t, kind):
    xb, yb, ob = Buffer("x", (N,), "int64"), Buffer("y", (N,), "int64"), Buffer("o", (N,), "int64")
    i = Var("i", "int64")
    value = to_ir(t, {"x": BufferLoad(xb, [i]), "y": BufferLoad(yb, [i]), "i": i})
    mod = build(PrimFunc("prop", [xb, yb, ob], For(i, 0, N, kind, BufferStore(ob, value, [i]))))
    rng = np.random.default_rng(len(str(t)))
    x, y = rng.integers(-20, 20, N), rng.integers(-20, 20, N)
    out = np.zeros(N, "int64")
    mod(x, y, out)
    expected = [evaluate(t, {"x": int(x[k]), "y": int(y[k]), "i": k}) for k in range(N)]
    assert out.tolist() == expected, t
