"""The elementwise Ops of real array code: numpy semantics, compiled kernels that agree,
and text that prints and parses back; values include the special points."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relgraph as rg
from relgraph.ops import special

UFUNC_UNARY = [rg.tanh, rg.sin, rg.cos, rg.sign, rg.square, rg.reciprocal, rg.log2, rg.log10,
               rg.exp2, rg.floor, rg.ceil, rg.cbrt, rg.signbit]  # fmt: skip
STABLE_UNARY = [rg.sigmoid, rg.softplus, rg.log1mexp, rg.erf]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -30.0, 30.0, 700.0, -700.0, 1e-300,
           5e-324, -5e-324, 1e300, -1e300, np.inf, -np.inf, np.nan, -1e-20,
           -0.6931471805599453]  # fmt: skip


pytestmark = pytest.mark.usefixtures("kernel_cache")  # a fresh kernel cache per module


def values(dtype):
    if np.dtype(dtype).kind != "f":
        return np.array([0, 1, -1, 2, -3, 7, 100], dtype=dtype)
    with np.errstate(over="ignore"):  # 1e300 is inf in float32
        return np.array(SPECIAL, dtype=dtype)


def agree(got, expected, dtype):
    """Same NaN and infinity positions; finite values within a few ulp."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    inf = np.isinf(expected)
    np.testing.assert_array_equal(got[inf], expected[inf])
    fin = np.isfinite(expected)
    tol = {"float32": 4e-7, "float64": 4e-16}.get(np.dtype(dtype).name, 0)
    np.testing.assert_allclose(got[fin], expected[fin], rtol=tol * 8, atol=tol * 1e-300)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("op", UFUNC_UNARY, ids=lambda o: o.name)
def test_ufunc_ops_evaluate_and_compile_like_numpy(op, dtype):
    if op is rg.reciprocal and dtype == "int64":
        pytest.skip("below: integer reciprocal is refused by the compiler")
    x = rg.vector("x", dtype)
    v = values(dtype)
    with np.errstate(all="ignore"):
        expected = op.ufunc(v)
        got = rg.evaluate(op(x), {x: v})
        compiled = rg.function([x], op(x), compile="eager")(v)
    np.testing.assert_array_equal(got, expected)
    assert rg.typeof(op(x)).dtype == expected.dtype
    agree(compiled, expected, expected.dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", STABLE_UNARY, ids=lambda o: o.name)
def test_stable_ops_compile_like_their_reference(op, dtype):
    x = rg.vector("x", dtype)
    v = values(dtype)
    if op is rg.log1mexp:
        v = -np.abs(v)  # its domain
    with np.errstate(all="ignore"):
        expected = rg.evaluate(op(x), {x: v})
        compiled = rg.function([x], op(x) * 1.0, compile="eager")(v)
    assert expected.dtype == np.dtype(dtype)
    agree(compiled, expected, dtype)


def test_the_stable_forms_are_right_where_the_naive_ones_fail():
    big = np.array([-1000.0, -40.0, 0.0, 40.0, 1000.0])
    np.testing.assert_allclose(
        special.sigmoid(big),
        [0.0, 1 / (1 + np.exp(40.0)), 0.5, 1 / (1 + np.exp(-40.0)), 1.0],
        rtol=4e-16,
    )
    assert special.softplus(np.float64(1000.0)) == 1000.0  # log1p(exp(1000)) is inf
    assert special.softplus(np.float64(-1000.0)) == 0.0
    np.testing.assert_allclose(special.softplus(np.float64(-40.0)), np.exp(-40.0), rtol=1e-15)
    # log(1 - exp(x)): near 0, 1 - exp(x) rounds to 0; far below, log(1 - tiny) to 0.
    np.testing.assert_allclose(special.log1mexp(np.float64(-1e-20)), np.log(1e-20), rtol=1e-15)
    np.testing.assert_allclose(special.log1mexp(np.float64(-50.0)), -np.exp(-50.0), rtol=1e-15)
    assert special.log1mexp(np.float64(0.0)) == -np.inf
    assert np.isnan(special.log1mexp(np.float64(0.5)))
    assert special.log1mexp(np.float64(-np.inf)) == 0.0


def within_ulps(got, exact: float, ulps: int) -> None:
    assert abs(float(got) - exact) <= ulps * np.spacing(abs(exact)), (float(got), exact)


@settings(max_examples=150, deadline=None)
@given(v=st.floats(min_value=-700, max_value=700))
def test_stable_ops_match_a_high_precision_reference(v):
    """Against exp and log in 400 significant digits (``decimal``: 1 + exp(-700) must
    keep exp(-700)'s digits): within 4 ulp."""
    from decimal import Context, Decimal

    ctx = Context(prec=400)
    e = ctx.exp(Decimal(v))
    within_ulps(special.sigmoid(np.float64(v)), float(ctx.divide(e, ctx.add(1, e))), 4)
    within_ulps(special.softplus(np.float64(v)), float(ctx.ln(ctx.add(1, e))), 4)
    if v < 0:
        within_ulps(special.log1mexp(np.float64(v)), float(ctx.ln(ctx.subtract(1, e))), 4)


def test_integer_reciprocal_is_refused_by_the_compiler():
    n = rg.vector("n", "int64")
    with pytest.raises(rg.LoweringError, match="reciprocal.*int64"):
        rg.function([n], rg.reciprocal(n), compile="eager")


def test_small_integer_inputs_follow_numpy_into_float16_and_are_refused_compiled():
    b = rg.vector("b", "int8")
    for op in (rg.tanh, rg.sigmoid, rg.log2, rg.exp2):
        assert rg.typeof(op(b)).dtype == np.float16  # numpy's own result dtype
        with pytest.raises(rg.LoweringError, match="float16"):
            rg.function([b], op(b), compile="eager")
    v = np.array([-128, -3, 0, 5, 127], np.int8)
    for op in (rg.floor, rg.square, rg.sign):  # numpy keeps int8: compiled, wrapping alike
        got = rg.function([b], op(b), compile="eager")(v)
        np.testing.assert_array_equal(got, op.ufunc(v))
        assert got.dtype == op.ufunc(v).dtype


@pytest.mark.parametrize("text", [
    "sigmoid(x) + softplus(y) * tanh(x)", "log1mexp(-abs(y)) - erf(x)", "minimum(x, y) ** 2",
    "square(sin(x)) + cos(x) * sign(y)", "reciprocal(y) + log2(x) - log10(y) + exp2(x)",
    "floor(x) + ceil(y)",
])  # fmt: skip
def test_print_and_parse_round_trip(text):
    x, y = rg.vector("x"), rg.vector("y")
    t = rg.parse(text, x=x, y=y)
    assert rg.parse(rg.pprint(t), x=x, y=y) == t


def test_one_fused_loop_for_the_new_ops():
    from relgraph.backends.numba.lowering import lower

    x, y = rg.vector("x"), rg.vector("y")
    src = lower([x, y], [rg.sigmoid(x) * rg.tanh(y) + rg.minimum(x, y)]).source
    assert src.count("kernels.fresh(") == 1


COMPARE = [rg.less, rg.less_equal, rg.greater, rg.greater_equal, rg.equal, rg.not_equal,
           rg.logical_and, rg.logical_or]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("op", COMPARE, ids=lambda o: o.name)
def test_comparisons_and_logic_give_numpys_bools(op, dtype):
    x, y = rg.vector("x", dtype), rg.vector("y", dtype)
    a = values(dtype) if dtype != "bool" else np.array([True, False, True, False])
    b = a[::-1].copy()
    expected = op.ufunc(a, b)
    np.testing.assert_array_equal(rg.evaluate(op(x, y), {x: a, y: b}), expected)
    got = rg.function([x, y], op(x, y), compile="eager")(a, b)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == np.bool_ == rg.typeof(op(x, y)).dtype


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_where_clip_minimum_and_logical_not_compile_like_numpy(dtype):
    x, y = rg.vector("x", dtype), rg.vector("y", dtype)
    a = values(dtype)
    b = a[::-1].copy()
    lo, hi = (-1.0, 2.0) if dtype != "int64" else (-1, 2)
    t = [rg.where(x > y, x, y * 2), rg.clip(x, lo, hi), rg.minimum(x, y), rg.logical_not(x)]
    expected = [np.where(a > b, a, b * 2), np.clip(a, lo, hi), np.minimum(a, b),
                np.logical_not(a)]  # fmt: skip
    with np.errstate(all="ignore"):
        got = rg.function([x, y], t, compile="eager")(a, b)
        evaluated = [rg.evaluate(term, {x: a, y: b}) for term in t]
    for g, ev, e in zip(got, evaluated, expected):
        np.testing.assert_array_equal(ev, e)
        np.testing.assert_array_equal(g, e)
        assert g.dtype == e.dtype


def test_python_comparisons_build_terms_and_equality_stays_structural():
    x, y = rg.vector("x"), rg.vector("y")
    assert rg.pprint(x > 0) == "(x > 0)" and rg.pprint(0 < x) == "(x > 0)"
    assert rg.pprint(x <= y) == "(x <= y)" and rg.typeof(x >= y).dtype == np.bool_
    assert (x == y) is False and (x + y == x + y) is True  # terms are dict keys
    leaky = rg.where(x > 0, x, 0.01 * x)
    assert rg.parse("where(x > 0, x, 0.01 * x)", x=x) == leaky
    with pytest.raises(rg.ParseError, match="chained comparisons"):
        rg.parse("0 < x < 1", x=x)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16"])
def test_where_wraps_a_python_int_out_of_its_dtype_as_numpy_does(dtype):
    """numpy's ``where`` casts a Python int that does not fit the result's dtype with
    wrap-around (``where(c, -1, uint8) -> 255``, ``300 -> 44``); an int beyond int64
    is refused, as numpy refuses it."""
    x, cond = rg.vector("x", dtype), rg.vector("c", "bool")
    c, a = np.array([True, False, True]), np.array([0, 5, 7], dtype)
    for value in (-1, 300, -129, 70000):
        got = rg.function([cond, x], rg.where(cond, value, x), compile="eager")(c, a)
        want = np.where(c, value, a)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises((OverflowError, ValueError)):  # refused as numpy refuses it
        rg.function([cond, x], rg.where(cond, 2**64, x), compile="eager")(c, a)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_cube_roots_and_sign_bits_are_numpys_signed_zeros_and_nans_included(dtype, rng):
    """``cbrt`` within 4 ulp of numpy at every magnitude (libm's: Numba's own is a
    power of 1/3, 100 ulp off, and +0.0 for -0.0); ``copysign`` and ``signbit`` bit for
    bit, with the sign of zeros and NaNs; compiled, and on the numpy tier."""
    x, y = rg.vector("x", dtype), rg.vector("y", dtype)
    outputs = [rg.cbrt(x), rg.copysign(x, y), rg.signbit(x), rg.signbit(rg.copysign(x, y))]
    v = values(dtype)
    if dtype != "int64":
        scale = np.exp2(rng.integers(-150 if dtype == "float32" else -1070, 120, 4000))
        with np.errstate(over="ignore"):
            v = np.concatenate([v, -v, (rng.normal(size=4000) * scale).astype(dtype)])
    w = (
        np.roll(v, 3)
        if dtype == "int64"
        else np.copysign(np.roll(v, 7), rng.normal(size=v.size).astype(dtype))
    )
    with np.errstate(all="ignore"):
        want = [np.cbrt(v), np.copysign(v, w), np.signbit(v), np.signbit(np.copysign(v, w))]
        for compile in ("eager", "never"):
            got = rg.function([x, y], outputs, compile=compile)(v, w)
            for g, e in zip(got, want):
                assert g.dtype == e.dtype
                np.testing.assert_array_equal(np.signbit(g), np.signbit(e))
            ulps = np.abs(got[0] - want[0]) / np.spacing(np.abs(want[0]).astype(want[0].dtype))
            assert np.nanmax(ulps[np.isfinite(want[0])]) <= 4
            np.testing.assert_array_equal(got[1], want[1])
            np.testing.assert_array_equal(got[2], want[2])


def test_gradients_of_cube_root_and_copysign_are_their_derivatives(rng):
    """d cbrt(x) = 1 / (3 cbrt(x)^2); d copysign(x, y) / dx is +-1 by the sign bits
    of x and y (signed zeros included), and nothing flows to y."""
    x, y = rg.vector("x"), rg.vector("y")
    v = np.array([8.0, -27.0, 0.5, -0.0, 0.0, 2.0])
    w = np.array([1.0, 1.0, -1.0, 0.0, -0.0, -0.0])
    dx = rg.grad(rg.sum(rg.cbrt(x) + 2.0 * rg.copysign(x, y)), x)
    flips = np.where(np.signbit(v) != np.signbit(w), -2.0, 2.0)
    with np.errstate(divide="ignore"):
        want = 1 / (3 * np.cbrt(v) ** 2) + flips
    np.testing.assert_allclose(rg.function([x, y], dx, compile="eager")(v, w), want, rtol=1e-15)
    dy = rg.grad(rg.sum(rg.copysign(x, y)), y)
    np.testing.assert_array_equal(rg.evaluate(dy, {x: v, y: w}), np.zeros_like(w))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_float_power_and_logaddexp2_are_numpys_at_the_specials(dtype):
    """``float_power`` computes in float64 whatever its operands (negative integer
    powers of integers included), ``logaddexp2`` with numpy's algorithm: bit for bit,
    compiled and on the numpy tier, on every pair of special values."""
    x, y = rg.vector("x", dtype), rg.vector("y", dtype)
    v = values(dtype)
    a, b = (m.ravel() for m in np.meshgrid(v, v))
    for op in (rg.float_power, rg.logaddexp2):
        with np.errstate(all="ignore"):
            want = op.ufunc(a, b)
            for compile in ("eager", "never"):
                got = rg.function([x, y], op(x, y), compile=compile)(a, b)
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)


def test_gradients_of_float_power_and_logaddexp2_match_finite_differences(rng):
    x, y = rg.vector("x"), rg.vector("y")
    v, w = rng.uniform(0.5, 3.0, 6), rng.uniform(-2.0, 2.0, 6)
    for op in (rg.float_power, rg.logaddexp2):
        dx, dy = rg.grad(rg.sum(op(x, y)), [x, y])
        h = 1e-6
        for d, (dv, dw) in ((dx, (h, 0.0)), (dy, (0.0, h))):
            numeric = (op.ufunc(v + dv, w + dw) - op.ufunc(v - dv, w - dw)) / (2 * h)
            np.testing.assert_allclose(rg.evaluate(d, {x: v, y: w}), numeric, rtol=1e-6)


@pytest.mark.parametrize("like", [rg.ones_like, rg.zeros_like, np.ones_like, np.zeros_like])
def test_filling_like_a_pattern_variable_says_why_it_cannot(like):
    """A pattern variable has no dtype to fill with: a TypeError that says so (numpy
    handed the variable back to relgraph, which handed it to numpy: a RecursionError)."""
    with pytest.raises(TypeError, match=r"\?y is a pattern variable"):
        like(rg.lvar("y"))
