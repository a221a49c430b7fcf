"""Expression semantics of generated code, scalar and vectorized, checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from tunecli.engine.build import build
from tunecli.engine.ir import (
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    For,
    Let,
    Max,
    Min,
    PrimFunc,
    Select,
    Var,
    cast,
    const,
)
from tunecli.errors import CodegenError

N = 37  # not a multiple of any vector width: exercises odd lane counts
KINDS = ["serial", "vectorized"]


def elementwise(fn, in_dtypes, out_dtype, n=N, kind="serial"):
    """Compile out[i] = fn(i, *loads) and return a numpy-level function of the inputs."""
    ins = [Buffer(f"x{k}", (n,), dt) for k, dt in enumerate(in_dtypes)]
    out = Buffer("out", (n,), out_dtype)
    i = Var("i")
    body = For(i, 0, n, kind, BufferStore(out, fn(i, *[BufferLoad(b, [i]) for b in ins]), [i]))
    mod = build(PrimFunc("ew", [*ins, out], body))

    def run(*arrays):
        res = np.zeros(n, dtype=out_dtype)
        mod(*[np.ascontiguousarray(a, dtype=dt) for a, dt in zip(arrays, in_dtypes, strict=True)], res)
        return res

    return run


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("divisor", [4, 7, -3, None])
def test_floordiv_floormod_match_python_for_negatives(kind, divisor):
    rng = np.random.default_rng(0)
    a = rng.integers(-50, 50, N).astype("int32")
    b = np.full(N, divisor or 1, "int32")
    if divisor is None:
        b = rng.choice([-7, -3, -1, 1, 2, 5], N).astype("int32")
    if divisor is None:
        div = elementwise(lambda i, x, y: x // y, ["int32", "int32"], "int32", kind=kind)(a, b)
        mod = elementwise(lambda i, x, y: x % y, ["int32", "int32"], "int32", kind=kind)(a, b)
    else:
        div = elementwise(lambda i, x: x // divisor, ["int32"], "int32", kind=kind)(a)
        mod = elementwise(lambda i, x: x % divisor, ["int32"], "int32", kind=kind)(a)
    np.testing.assert_array_equal(div, a // b)
    np.testing.assert_array_equal(mod, a % b)


@pytest.mark.parametrize("kind", KINDS)
def test_integer_div_truncates_and_float_floor_ops(kind):
    a = np.arange(-18, -18 + N, dtype="int32")
    got = elementwise(lambda i, x: x / 4, ["int32"], "int32", kind=kind)(a)
    np.testing.assert_array_equal(got, np.trunc(a / 4).astype("int32"))
    f = np.linspace(-5.5, 5.5, N).astype("float32")
    got = elementwise(lambda i, x: x % const(2.0), ["float32"], "float32", kind=kind)(f)
    np.testing.assert_allclose(got, np.mod(f, np.float32(2.0)), rtol=1e-6, atol=1e-6)
    got = elementwise(lambda i, x: x // const(2.0), ["float32"], "float32", kind=kind)(f)
    np.testing.assert_array_equal(got, np.floor_divide(f, np.float32(2.0)))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,ref,lo,hi", [
    ("exp", np.exp, -3, 3), ("log", np.log, 0.1, 5), ("sqrt", np.sqrt, 0, 9), ("tanh", np.tanh, -3, 3),
    ("fabs", np.abs, -2, 2), ("floor", np.floor, -3, 3), ("ceil", np.ceil, -3, 3),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), -4, 4), ("erf", None, -2, 2), ("round", np.round, -3, 3),
    ("rsqrt", lambda x: 1 / np.sqrt(x), 0.5, 4), ("exp2", np.exp2, -3, 3), ("log10", np.log10, 0.5, 9),
    ("sin", np.sin, -3, 3), ("trunc", np.trunc, -3, 3),
])
def test_unary_intrinsics(kind, dtype, name, ref, lo, hi):
    if ref is None:
        import math
        ref = np.vectorize(math.erf)
    x = np.linspace(lo, hi, N).astype(dtype)
    got = elementwise(lambda i, v: Call(dtype, name, [v]), [dtype], dtype, kind=kind)(x)
    np.testing.assert_allclose(got, ref(x.astype("float64")).astype(dtype), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_binary_and_ternary_intrinsics_min_max(kind):
    x = np.linspace(0.5, 3, N).astype("float32")
    y = np.linspace(-1, 2, N).astype("float32")
    got = elementwise(lambda i, a, b: Call("float32", "pow", [a, b]), ["float32"] * 2, "float32",
                      kind=kind)(x, y)
    np.testing.assert_allclose(got, np.power(x, y), rtol=1e-5)
    got = elementwise(lambda i, a, b: Call("float32", "fma", [a, b, a]), ["float32"] * 2, "float32",
                      kind=kind)(x, y)
    np.testing.assert_allclose(got, x * y + x, rtol=1e-6)
    got = elementwise(lambda i, a, b: Min(a, b) + Max(a, b) * const(2.0), ["float32"] * 2, "float32",
                      kind=kind)(x, y)
    np.testing.assert_allclose(got, np.minimum(x, y) + 2 * np.maximum(x, y), rtol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_casts_and_narrow_integer_wraparound(kind):
    a = np.arange(-40, -40 + N, dtype="int16") * 9
    got = elementwise(lambda i, x: cast("int8", x), ["int16"], "int8", kind=kind)(a)
    np.testing.assert_array_equal(got, a.astype("int8"))
    u = np.arange(200, 200 + N).astype("uint8")
    got = elementwise(lambda i, x: x + const(100, "uint8"), ["uint8"], "uint8", kind=kind)(u)
    np.testing.assert_array_equal(got, u + np.uint8(100))
    f = np.linspace(-9.7, 9.7, N).astype("float64")
    got = elementwise(lambda i, x: cast("int32", x), ["float64"], "int32", kind=kind)(f)
    np.testing.assert_array_equal(got, f.astype("int32"))
    got = elementwise(lambda i, x: cast("float32", x) + cast("float32", i), ["uint8"], "float32",
                      kind=kind)(u)
    np.testing.assert_array_equal(got, u.astype("float32") + np.arange(N, dtype="float32"))
    got = elementwise(lambda i, x: cast("int64", x) * const(1 << 33, "int64"), ["int32"], "int64", kind=kind)(
        np.arange(N, dtype="int32"))
    np.testing.assert_array_equal(got, np.arange(N, dtype="int64") << 33)


@pytest.mark.parametrize("kind", KINDS)
def test_bool_buffers_and_logic(kind):
    x = np.linspace(-1, 1, N).astype("float32")
    y = np.cos(np.arange(N)).astype("float32")
    got = elementwise(lambda i, a, b: (a < b) & ~(a > const(0.5)) | (b == const(1.0)),
                      ["float32", "float32"], "bool", kind=kind)(x, y)
    np.testing.assert_array_equal(got, ((x < y) & ~(x > 0.5)) | (y == 1.0))
    flags = (np.arange(N) % 3 == 0)
    got = elementwise(lambda i, f, a: Select(f, a, const(-1.0)), ["bool", "float32"], "float32", kind=kind)(
        flags, x)
    np.testing.assert_array_equal(got, np.where(flags, x, np.float32(-1)))


@pytest.mark.parametrize("kind", KINDS)
def test_select_with_memory_reads_and_let(kind):
    # padding-style read: lanes outside [2, N-2) take 0 instead of reading x0[i-2]
    n = N
    src = Buffer("src", (n,), "float32")
    out = Buffer("out", (n,), "float32")
    i = Var("i")
    cond = (i >= 2) & (i < n - 2)
    t = Var("t", "float32")
    value = Select(cond, Let(t, BufferLoad(src, [i - 2]), t * const(2.0)), const(0.0))
    mod = build(PrimFunc("pad", [src, out], For(i, 0, n, kind, BufferStore(out, value, [i]))))
    s = np.arange(n, dtype="float32") + 1
    res = np.zeros(n, "float32")
    mod(s, res)
    expected = np.zeros(n, "float32")
    expected[2:n - 2] = 2 * s[: n - 4]
    np.testing.assert_array_equal(res, expected)


def test_vectorized_float32_16_lanes_uses_zmm_registers():
    from tunecli.engine.target import Target

    if Target("llvm").vector_bits < 512:
        pytest.skip("host has no AVX-512")
    n = 16
    a, b, c = (Buffer(x, (n,), "float32") for x in "abc")
    i = Var("i")
    value = BufferLoad(a, [i]) * BufferLoad(b, [i]) + const(1.0)
    body = For(i, 0, n, "vectorized", BufferStore(c, value, [i]))
    mod = build(PrimFunc("v16", [a, b, c], body))
    assert "<16 x float>" in mod.get_source("ll")
    assert "zmm" in mod.get_source("asm")


def test_unknown_intrinsic_and_bad_operands_raise_codegen_error():
    with pytest.raises(CodegenError, match="unknown intrinsic 'frobnicate'"):
        elementwise(lambda i, x: Call("float32", "frobnicate", [x]), ["float32"], "float32")
    with pytest.raises(CodegenError, match="exp needs float operands"):
        elementwise(lambda i, x: Call("int32", "exp", [x]), ["int32"], "int32")


LAZY_SCRIPT = r'''
import numpy as np
from tunecli.engine.build import build
from tunecli.engine.ir import Buffer, BufferLoad, BufferStore, For, PrimFunc, Select, Var, const
n, BIG = 37, 1 << 28
flags = Buffer("flags", (n,), "bool")
src = Buffer("src", (n * 3,), "float32")
far = Buffer("far", (1,), "int32")
out = Buffer("o", (n,), "float32")
fl = np.arange(n) % 3 == 1
s = np.arange(n * 3, dtype="float32")
for kind in ("serial", "vectorized"):
    for stride in (1, 3):
        i = Var("i")
        f = BufferLoad(flags, [i])
        index = Select(f, i * stride, i * stride + BIG)  # far out of bounds where the flag is off
        value = Select(f, BufferLoad(src, [index]), const(-1.0))
        body = For(i, 0, n, kind, BufferStore(out, value, [i]))
        mod = build(PrimFunc("lazy", [flags, src, far, out], body))
        o = np.zeros(n, "float32")
        mod(fl, s, np.zeros(1, "int32"), o)
        assert (o == np.where(fl, s[np.arange(n) * stride], -1)).all(), (kind, stride)
    # a lane-invariant read under a vector condition: skipped when no lane is selected
    i = Var("i")
    value = Select(BufferLoad(flags, [i]), BufferLoad(src, [BufferLoad(far, [0])]), const(-1.0))
    mod = build(PrimFunc("lazy2", [flags, src, far, out], For(i, 0, n, kind, BufferStore(out, value, [i]))))
    o = np.zeros(n, "float32")
    mod(np.zeros(n, bool), s, np.array([BIG], "int32"), o)
    assert (o == -1).all()
    mod(fl, s, np.array([5], "int32"), o)
    assert (o == np.where(fl, 5, -1)).all()
# integer division in an untaken branch must not trap on a zero divisor
num, den, res = (Buffer(x, (n,), "int32") for x in ("num", "den", "res"))
d = np.where(np.arange(n) % 4 == 0, 0, np.arange(n) % 5 - 2).astype("int32")
x = np.arange(n, dtype="int32") * 7 - 100
safe = np.where(d == 0, 1, d)
cases = [(lambda a, b: a / b, (np.abs(x) // np.abs(safe)) * np.sign(x) * np.sign(safe)),
         (lambda a, b: a // b, x // safe), (lambda a, b: a % b, x % safe)]
for kind in ("serial", "vectorized"):
    for op, ref in cases:
        i = Var("i")
        a, b = BufferLoad(num, [i]), BufferLoad(den, [i])
        body = For(i, 0, n, kind, BufferStore(res, Select(b != 0, op(a, b), const(-1)), [i]))
        mod = build(PrimFunc("div", [num, den, res], body))
        r = np.zeros(n, "int32")
        mod(x, d, r)
        assert (r == np.where(d == 0, -1, ref)).all(), (kind, r, ref)
print("lazy-ok")
'''


def test_select_does_not_evaluate_the_untaken_branch():
    """Untaken branches read 1 GiB out of bounds or divide by zero: evaluating them would crash the child."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", LAZY_SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "lazy-ok" in proc.stdout


def test_lane_invariant_value_stored_by_a_vectorized_loop_and_dtype_mismatch():
    flags = Buffer("flags", (N,), "bool")
    i = Var("i")
    body = For(i, 0, N, "vectorized", BufferStore(flags, const(1, "bool"), [i]))
    mod = build(PrimFunc("fill", [flags], body))
    r = np.zeros(N, bool)
    mod(r)
    assert r.all()
    out = Buffer("out", (N,), "float32")
    with pytest.raises(CodegenError, match="store of a int32 value into 'out' of dtype float32"):
        build(PrimFunc("bad", [out], For(i, 0, N, "serial", BufferStore(out, i, [i]))))


@pytest.mark.parametrize("kind", KINDS)
def test_float16_arithmetic_and_intrinsics(kind):
    x = np.linspace(-2, 2, N).astype("float16")
    got = elementwise(lambda i, a: a * a + Call("float16", "erf", [a]) + Call("float16", "exp", [a]),
                      ["float16"], "float16", kind=kind)(x)
    import math

    ref = x.astype("float64") ** 2 + np.vectorize(math.erf)(x.astype("float64")) + np.exp(x.astype("float64"))
    np.testing.assert_allclose(got.astype("float64"), ref, rtol=5e-3, atol=5e-3)


def test_shadowed_let_variables_restore_the_outer_binding():
    src = Buffer("src", (N,), "float32")
    out = Buffer("out", (N,), "float32")
    i, t = Var("i"), Var("t", "float32")
    inner = Let(t, BufferLoad(src, [i]) * const(2.0), t + const(1.0))
    value = Let(t, BufferLoad(src, [i]), inner + t)  # outer t is src[i] again after the inner Let
    mod = build(PrimFunc("shadow", [src, out], For(i, 0, N, "serial", BufferStore(out, value, [i]))))
    s, r = np.arange(N, dtype="float32"), np.zeros(N, "float32")
    mod(s, r)
    np.testing.assert_array_equal(r, 3 * s + 1)
