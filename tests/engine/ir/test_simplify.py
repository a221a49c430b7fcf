"""ir.simplify: folding, canonical affine forms, floordiv/floormod rules; checked by evaluation."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from tunecli.engine.ir import expr as E
from tunecli.engine.ir import stmt as S
from tunecli.engine.ir.interval import const_bounds, eval_interval
from tunecli.engine.ir.simplify import int_bounds, simplify


def ev(e, env):
    """Evaluate an integer expression with Python semantics (floor division)."""
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Var):
        return env[e]
    if isinstance(e, E.Cast):
        return int(ev(e.value, env))
    ops = {E.Add: lambda a, b: a + b, E.Sub: lambda a, b: a - b, E.Mul: lambda a, b: a * b,
           E.FloorDiv: lambda a, b: a // b, E.FloorMod: lambda a, b: a % b, E.Min: min, E.Max: max,
           E.LT: lambda a, b: int(a < b), E.LE: lambda a, b: int(a <= b), E.EQ: lambda a, b: int(a == b),
           E.GT: lambda a, b: int(a > b), E.GE: lambda a, b: int(a >= b),
           E.And: lambda a, b: int(a and b)}
    return ops[type(e)](ev(e.a, env), ev(e.b, env))


x, y, z = E.Var("x"), E.Var("y"), E.Var("z")
R = {x: (E.IntImm(0), E.IntImm(4)), y: (E.IntImm(0), E.IntImm(32)), z: (E.IntImm(0), E.IntImm(16))}


def test_constant_folding_and_identities():
    assert simplify(E.const(3) * 4 + 2).value == 14
    assert simplify(x * 1 + 0) is x
    f = E.Var("f", "float32")
    assert simplify(f * 1.0 + 0.0) is f
    assert simplify(E.const(2.0) * 3.0).value == 6.0
    assert simplify((x < 3) & (E.const(1) < 2)).__class__ is E.LT


def test_affine_canonical_form():
    e = simplify(((x * 8 + y) - x * 8) * 2 + 3 * y)
    assert str(e) == "(y * 5)"
    e = simplify((x + 1) * 16 + (y - 1) * 1 - 15)
    assert str(e) == "((x * 16) + y)"


def test_floordiv_floormod_rules():
    j = x * 32 + y
    assert str(simplify(j // 16, {y: R[z]})) == "(x * 2)"
    assert str(simplify(j % 16, {y: R[z]})) == "y"
    assert str(simplify(j // 16, R)) == "((x * 2) + (y // 16))"
    assert str(simplify(j % 16, R)) == "(y % 16)"
    assert str(simplify((x // 4) * 4 + x % 4)) == "x"
    assert str(simplify((x // 8) // 4)) == "(x // 32)"
    assert str(simplify(((x * 8 + y) // 8) * 8 + (x * 8 + y) % 8)) == "((x * 8) + y)"


def test_floordiv_floormod_of_a_block_and_its_lane():
    # (8*x + lane) with 0 <= lane < 8 never crosses a multiple of 16 between lanes: a vector block of
    # a 16-wide channel block reads one source block (layout transforms between channel blocks)
    lane = E.Var("lane")
    ranges = {**R, lane: (E.IntImm(0), E.IntImm(8))}
    cases = {
        E.FloorDiv(x * 8 + lane, E.const(16)): "(x // 2)",
        E.FloorMod(x * 8 + lane, E.const(16)): "(((x % 2) * 8) + lane)",
        E.FloorDiv(y * 32 + x * 8 + lane, E.const(16)): "((y * 2) + (x // 2))",
    }
    for e, text in cases.items():
        got = simplify(e, ranges)
        assert str(got) == text
        for vx, vy, vl in itertools.product(range(4), range(32), range(8)):
            env = {x: vx, y: vy, lane: vl}
            assert ev(got, env) == ev(e, env)
    assert isinstance(simplify(E.FloorDiv(x * 8 + lane + 3, E.const(16)), ranges), E.FloorDiv)


def test_provable_comparisons_and_minmax():
    assert simplify(x * 32 + y < 128, R).value == 1
    assert simplify(x * 32 + y >= 128, R).value == 0
    assert isinstance(simplify(x * 32 + y < 100, R), E.LT)
    assert simplify(E.Min(x * 4 + 3, E.IntImm(100)), R).__class__ is E.Add
    assert simplify(E.Max(x, E.IntImm(0)), R) is x


def test_stmt_simplify_uses_loop_ranges():
    buf = S.Buffer("B", (64,), "float32")
    body = S.IfThenElse(x * 16 + z < 64, S.BufferStore(buf, E.FloatImm(0.0), [x * 16 + z]))
    loop = S.For(x, 0, 4, "serial", S.For(z, 0, 16, "vectorized", body))
    out = simplify(loop)
    assert isinstance(out.body.body, S.BufferStore)


def test_paired_floordiv_bounds():
    e = (x * 7 + 6) // 12 - (x * 7) // 12 + 1
    assert const_bounds(e, R)[1] > 2
    assert int_bounds(e, R) == (1, 2)


def test_intervals():
    lo, hi = eval_interval(x * 32 + y, {y: (E.IntImm(0), E.IntImm(31))})
    assert str(simplify(lo)) == "(x * 32)" and str(simplify(hi)) == "((x * 32) + 31)"
    assert const_bounds(x * 32 + y, R) == (0, 127)
    assert const_bounds((x * 32 + y) // 16, R) == (0, 7)


atoms = st.sampled_from([x, y, z])
consts = st.integers(-5, 40).map(E.IntImm)


def exprs():
    return st.recursive(
        st.one_of(atoms, consts),
        lambda sub: st.one_of(
            st.tuples(sub, sub).map(lambda p: p[0] + p[1]),
            st.tuples(sub, sub).map(lambda p: p[0] - p[1]),
            st.tuples(sub, st.integers(-3, 6)).map(lambda p: p[0] * p[1]),
            st.tuples(sub, st.integers(1, 17)).map(lambda p: p[0] // p[1]),
            st.tuples(sub, st.integers(1, 17)).map(lambda p: p[0] % p[1]),
            st.tuples(sub, sub).map(lambda p: E.Min(p[0], p[1])),
            st.tuples(sub, sub).map(lambda p: E.Max(p[0], p[1])),
        ),
        max_leaves=8,
    )


def int_or_compare():
    compare = st.tuples(exprs(), st.integers(-3, 9), st.sampled_from([E.LT, E.LE, E.GT, E.GE]))
    return st.one_of(exprs(), compare.map(lambda p: E._binary(p[2], p[0], p[1])))


@settings(max_examples=25, deadline=None)
@given(int_or_compare())
def test_simplify_preserves_value(e):
    s = simplify(e, R)
    lo, hi = const_bounds(e, R)
    lo2, hi2 = int_bounds(e, R)
    for vx, vy, vz in itertools.product((0, 3), (0, 17, 31), (0, 15)):
        env = {x: vx, y: vy, z: vz}
        value = ev(e, env)
        assert ev(s, env) == value, (str(e), str(s))
        assert (lo is None or lo <= value) and (hi is None or value <= hi), (str(e), lo, hi)
        assert (lo2 is None or lo2 <= value) and (hi2 is None or value <= hi2), (str(e), lo2, hi2)
