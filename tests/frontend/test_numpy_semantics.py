"""Compiled code computes what numpy computes: Python scalars beside arrays (weak, NEP
50), inf/nan constants, unsigned ints, int64 wrap-around, reductions' dtype=, ndarray
subclasses, numpy integer axes, empty results."""

import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st
from numba.core.errors import NumbaWarning

import relgraph as rg

pytestmark = pytest.mark.usefixtures("kernel_cache")

FLOATS = np.array([0.0, 0.5, 0.7, 1.0, 2.0, -3.0, np.inf, -np.inf, np.nan, -0.0])
INTS = np.arange(-5, 10)


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want)) if got.dtype.kind == "f" else True


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x > 0.5,
        lambda x: x <= 0.5,
        lambda x: x > -3,
        lambda x: x > 300,
        lambda x: np.equal(x, 2.0),
        lambda x: np.where(x > 0.5, x, 0.0),
        lambda x: np.maximum(x, 0.25),
    ],
)
@pytest.mark.parametrize("data", [FLOATS, INTS, INTS.astype(np.int8), FLOATS.astype(np.float32)])
def test_a_python_scalar_beside_an_array_is_weak_in_every_op(fn, data):
    same(rg.jit(fn, include=(), compile="eager")(data), fn(data))
    same(rg.jit(fn, compile="eager")(data), fn(data))


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int64", "float32", "float64"])
def test_powers_have_numpys_dtype(dtype):
    """numpy computes ``x ** 2`` as ``np.square(x)``: int8 for bools, whose other powers
    are int64."""
    x = np.array([1, 0, 3, 2], dtype)
    for fn in (lambda x: x**2, lambda x: x**3, lambda x: x**2.0, lambda x: x ** np.int64(2)):
        same(rg.jit(fn, compile="eager")(x), fn(x))


def truth_functions(axis, keepdims):
    return (
        lambda x: np.any(x, axis=axis, keepdims=keepdims),
        lambda x: x.all(axis=axis, keepdims=keepdims),
        lambda x: np.all(x > 0.5, axis),
    )


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "float32", "float64"])
@pytest.mark.parametrize("shape", [(3, 4), (0, 3), (3, 0), (1, 1)])
def test_any_and_all_as_numpy(dtype, shape):
    """np.any and np.all (and the methods) on every axis: NaN is true, -0.0 false, an
    empty axis is False for "any" and True for "all"."""
    values = FLOATS if dtype.startswith("float") else np.nan_to_num(FLOATS, posinf=9, neginf=-9)
    x = np.random.default_rng(3).choice(values, size=shape).astype(dtype)
    for axis, keepdims in ((None, False), (0, True), (1, False), ((0, 1), True)):
        for fn in truth_functions(axis, keepdims):
            same(rg.jit(fn, include=(), compile="eager")(x), fn(x))
            same(rg.jit(fn, compile="eager")(x), fn(x))


def test_comparisons_with_scalars_in_function_and_evaluate_agree():
    x, xi = rg.vector("x"), rg.vector("xi", "int64")
    for t, sym, val in [(x > 0.5, x, FLOATS), (xi > 5, xi, INTS), (xi > -3, xi, INTS)]:
        same(rg.function([sym], t, compile="eager")(val), rg.evaluate(t, {sym: val}))


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: np.where(x > 0, x, np.nan),
        lambda x: np.maximum(x, -np.inf),
        lambda x: x + np.inf,
        lambda x: np.minimum(x, np.inf) * 2.0,
    ],
)
def test_inf_and_nan_constants_compile(fn):
    same(rg.jit(fn, include=(), compile="eager")(FLOATS), fn(FLOATS))


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64", "int8", "int64"])
def test_sign_of_every_integer_dtype(dtype):
    info = np.iinfo(dtype)
    data = np.array([0, 1, info.max, info.max - 1, info.min], dtype)
    same(rg.jit(np.sign, include=(), compile="eager")(data), np.sign(data))


def test_an_out_of_range_python_int_raises_as_numpy_does():
    a = np.array([1, 2], np.int8)
    with pytest.raises(OverflowError, match="1000 out of bounds for int8"):
        a + 1000
    with pytest.raises(OverflowError, match="1000 out of bounds for int8"):
        rg.jit(lambda x: x + 1000, include=(), compile="eager")(a)


def test_clip_saturates_an_out_of_range_bound_as_numpy_does():
    u = np.array([0, 1, 200], np.uint8)
    fn = lambda x: np.clip(x, -1, 1)  # noqa: E731
    same(rg.jit(fn, include=(), compile="eager")(u), fn(u))


@pytest.mark.parametrize(
    "a, s",
    [(np.array([100, 50], np.int8), 2), (np.array([1.5, 2.5], np.float32), 3.0),
     (np.array([200, 3], np.uint8), 100), (np.array([True, False]), 2)],
)  # fmt: skip
def test_python_scalar_arguments_are_weak(a, s):
    f = rg.jit(lambda x, s: x * s, compile="eager")
    same(f(a, s), a * s)
    same(f(a, s + 1), a * (s + 1))  # another value, another specialization


def test_int64_arithmetic_wraps_as_numpy_does():
    x = np.array([2**63 - 1, -(2**63) + 1, 5, -(2**63)], np.int64)
    for fn in [
        lambda x: (x + 1) > x,
        lambda x: np.maximum(x + 1, x),
        lambda x: np.minimum(x + x, 0),
        lambda x: (x * 3) < x,
        lambda x: (-x) > 0,
        lambda x: (x - 1) < x,
    ]:
        with np.errstate(over="ignore"):
            same(rg.jit(fn, include=(), compile="eager")(x), fn(x))


def test_a_constant_half_power_is_numpy_sqrt():
    data = np.array([-np.inf, -0.0, 4.0, np.nan, np.inf])
    with np.errstate(invalid="ignore"):
        same(rg.jit(lambda x: x**0.5, include=(), compile="eager")(data), data**0.5)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: np.sum(x, dtype=np.int8),
        lambda x: np.prod(x, dtype=np.int8),
        lambda x: x.sum(dtype=np.int16),
        lambda x: np.sum(x, dtype=bool),
        lambda x: np.prod(x, dtype=np.uint8),
        lambda x: np.sum(x, axis=0, dtype=np.int8),
    ],
)
def test_reduction_dtype_accumulates_as_numpy_does(fn):
    x = np.array([100, 100], np.int64)
    same(rg.jit(fn, include=(), compile="eager")(x), fn(x))


def test_bit_operations_of_a_mask_are_logical_and_of_an_int_bitwise():
    x = np.array([1.0, -1.0, 7.0])
    for fn in (lambda x: (x > 0) | 2, lambda x: (x > 0) | (x < -5), lambda x: ~(x > 0) & True):
        same(rg.jit(fn, compile="eager")(x), fn(x))
    mask = rg.trace(lambda x: ~(x > 0) | (x < -5), rg.vector("x"))
    assert rg.pprint(mask) == "logical_or(logical_not(x > 0), x < -5)"


# Where integer arithmetic breaks: zero divisors, -1 beside MIN, shifts past the width,
# halves; for floats signed zeros, infinities, NaN, subnormals and values near overflow.
def _edges(dtype: str) -> list:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return [False, True]
    if dt.kind in "iu":
        info = np.iinfo(dt)
        points = {0, 1, 2, 3, 5, 7, 15, 25, dt.itemsize * 8, dt.itemsize * 8 - 1, 100}
        points |= {int(info.min), int(info.min) + 1, int(info.max), int(info.max) - 1}
        points |= {-1, -2, -3, -7, -15, -25} if dt.kind == "i" else set()
        return sorted(p for p in points if info.min <= p <= info.max)
    info = np.finfo(dt)
    return [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, -7.0, 0.1, 1e30, float(info.max),
            -float(info.max), float(info.smallest_subnormal), np.inf, -np.inf, np.nan]  # fmt: skip


def _edge_program(kind: str):
    """Floor division, remainders, bit operations, rounding and numpy's NaN-aware
    functions and comparisons, as one program per kind of dtype."""
    if kind == "f":
        return lambda a, b: (a // b, a % b, np.fmod(a, b), np.trunc(a), np.rint(b),
                             np.round(a, 2), a.round(-1), np.mod(b, 3.0), np.fmax(a, b),
                             np.fmin(a, b), np.heaviside(a, b), np.rad2deg(a),
                             np.deg2rad(b), *divmod(a, b), np.nan_to_num(a), np.isclose(a, b),
                             np.allclose(a, a, equal_nan=True))  # fmt: skip
    if kind == "b":
        return lambda a, b: (a & b, a | b, a ^ b, ~a, a // b, a % b, np.logical_xor(a, b),
                             np.isclose(a, b))  # fmt: skip
    return lambda a, b: (a // b, a % b, np.fmod(a, b), a & b, a | b, a ^ b, a << b, a >> b,
                         ~a, np.round(a), a // 7 + a % 9, np.fmax(a, b), *np.divmod(a, b),
                         np.nan_to_num(a), np.isclose(a, b), np.gcd(a, b), np.lcm(a, b),
                         np.lcm(a, 6) + np.gcd(100, b))  # fmt: skip


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "uint8", "int64", "uint64", "float32", "float64"]
)
def test_integer_arithmetic_and_nan_aware_functions_are_numpys_at_every_edge(dtype):
    fn = _edge_program(np.dtype(dtype).kind)
    edges = np.array(_edges(dtype), dtype)
    a, b = (v.ravel() for v in np.meshgrid(edges, edges))
    with np.errstate(all="ignore"):
        want = fn(a, b)
    for include in ((), ("fast_run",)):
        with warnings.catch_warnings():  # Numba's inliner warns about branchy helpers
            warnings.simplefilter("error", NumbaWarning)
            got = rg.jit(fn, include=include, compile="eager")(a, b)
        for g, w in zip(got, want, strict=True):
            same(g, w)


def test_gcd_and_lcm_take_integers_only_as_numpy():
    """numpy's gcd and lcm have no loops for floats or booleans: refused by name."""
    f = rg.jit(lambda a, b: np.gcd(a, b), compile="eager")
    for dtype in ("float64", "bool"):
        with pytest.raises(rg.TypeCheckError, match=r"numpy's gcd does not take \("):
            f(np.ones(3, dtype), np.ones(3, dtype))
    mixed = rg.jit(lambda a, b: np.lcm(a, b), compile="eager")
    a, b = np.array([-128, 100, 0], np.int8), np.array([255, 3, 7], np.uint8)
    same(mixed(a, b), np.lcm(a, b))  # int16, as numpy promotes


def test_a_numpy_integer_axis_is_an_axis():
    m = np.arange(12.0).reshape(3, 4)
    same(rg.jit(lambda x: np.sum(x, axis=np.int64(1)), compile="eager")(m), m.sum(axis=1))
    A = rg.matrix("A")
    assert rg.sum(A, axis=np.int32(0)) == rg.sum(A, axis=0)


def test_ndarray_subclasses_are_refused_with_a_clear_error():
    masked = np.ma.masked_array([1.0, 2.0, 1e6], mask=[False, False, True])
    with pytest.raises(TypeError, match="MaskedArray.*filled"):
        rg.jit(np.sum, compile="eager")(masked)
    x = rg.vector("x")
    with pytest.raises(TypeError, match="argument 'x' is a numpy.matrix"):
        rg.function([x], x * 2.0, compile="eager")(np.matrix([[1.0, 2.0]]))


def test_an_empty_result_is_a_new_array_every_call():
    x = rg.vector("x")
    f = rg.function([x], x * 2.0, compile="eager")
    r1, r2 = f(np.zeros(0)), f(np.zeros(0))
    assert r1 is not r2
    r1.flags.writeable = False
    r2.shape = (0, 5)
    same(f(np.zeros(0)), np.zeros(0))
    same(f(np.ones(3)), np.full(3, 2.0))


def test_no_outputs_is_a_clear_error():
    with pytest.raises(TypeError, match="at least one output"):
        rg.function([rg.vector("x")], [], compile="eager")


def test_fast_run_keeps_the_written_grouping_of_floats():
    """Regrouping float products and sums overflows where numpy does not."""
    one = lambda v: np.array([v])  # noqa: E731
    cases = [
        (lambda x, y: x * (y * 1e300), (one(1e10), one(1e-300))),
        (lambda x, y: (x * y) ** 2, (one(1e200), one(1e-200))),
        (lambda x, y: np.exp(-((y * x) ** 2)), (one(1e200), one(1e-200))),
        (lambda x, y, z: (x + z) + y, (one(1e308), one(1e308), one(-1e308))),
    ]
    for fn, args in cases:
        with np.errstate(all="ignore"):
            same(rg.jit(fn, compile="eager")(*args), fn(*args))


def test_reassociation_is_an_opt_in_tag():
    from relations import optdb

    x, y = rg.vector("x"), rg.vector("y")
    t = x * (y * 2.0)
    assert rg.pprint(rg.rewrite(t, optdb.query(include=["fast_run"]))) == "(x * (2.0 * y))"
    regrouped = rg.rewrite(t, optdb.query(include=["fast_run", "reassociate"]))
    assert rg.pprint(regrouped) == "(2.0 * x * y)"
    i, j = rg.vector("i", "int64"), rg.vector("j", "int64")  # exact: always flattened
    assert rg.pprint(rg.rewrite(i * (j * 2), optdb.query(include=["fast_run"]))) == "(2 * i * j)"


def test_a_long_chain_of_transcendentals_inlines_a_bounded_number():
    from relgraph.backends.numba.lowering import INLINED_MAX, lower

    x = rg.vector("x")
    t = x
    for _ in range(40):
        t = rg.tanh(t)
    source = lower([x], [t]).source
    assert 0 < source.count("vecmath.tanh(") <= 3 * INLINED_MAX  # flat and strided loops
    assert source.count("np.tanh(") >= 40 - INLINED_MAX
    v = np.linspace(-2, 2, 7)
    want = v
    for _ in range(40):
        want = np.tanh(want)
    np.testing.assert_allclose(rg.function([x], t, compile="eager")(v), want, rtol=1e-14)


# Rows of one slice each: NaNs among numbers, only NaNs, infinities, zeros of both
# signs, near overflow, a subnormal.
NAN_ROWS = np.array([
    [np.nan, np.nan, np.nan, np.nan], [1.5, np.nan, -0.0, 2.0], [np.inf, np.nan, -np.inf, 1.0],
    [np.nan, np.nan, -0.0, -0.0], [1e308, 1e308, np.nan, -3.0], [5e-324, np.nan, 7.0, 0.0],
])  # fmt: skip


def _against_numpy(fn, data):
    """Pairs of rg.jit's and numpy's results of ``fn(data)``, on the numpy tier and
    compiled (numpy's warnings of empty slices silenced)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = fn(data)
        for compile in ("never", "eager"):
            yield from zip(rg.jit(fn, compile=compile)(data), want, strict=True)


def _nan_reductions(a):
    return tuple(
        r
        for axis, keepdims in ((None, False), (1, False), (0, True))
        for r in (
            np.nansum(a, axis=axis, keepdims=keepdims),
            np.nanprod(a, axis=axis),
            np.nanmean(a, axis=axis, keepdims=keepdims),
            np.nanmax(a, axis=axis),
            np.nanmin(a, axis=axis, keepdims=keepdims),
        )  # fmt: skip
    )


@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "uint8", "int64", "bool"])
def test_nan_reductions_are_numpys_at_every_edge(dtype):
    """numpy's NaN-ignoring reductions: a NaN counts as the identity, a slice of NaNs
    sums to 0 and has NaN for its mean, max and min, a float32 mean is divided in
    float64 and cast back; arrays without NaNs (integers, booleans) reduce as they
    are.  No slice's max or min is a tie of -0.0 and 0.0, in float64 or float32."""
    with np.errstate(all="ignore"):
        if dtype.startswith("float"):
            data = NAN_ROWS.astype(dtype)
        else:  # products that wrap around, and a row of zeros
            data = (np.arange(24).reshape(6, 4) * 37 - 100).astype(dtype)
    for got, want in _against_numpy(_nan_reductions, data):
        same(got, want)


SPECIALS = [np.nan, 0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, 1e308, -1e308, 5e-324, 3.0, 0.1]


@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "int64", "bool"])
def test_nanvar_and_nanstd_are_numpys(dtype):
    """The deviations from the mean of the numbers, a NaN's counted as 0, squared and
    averaged; NaN where a slice has no numbers or holds both infinities.  The sign of
    a NaN is not compared: x86 makes ``inf - inf`` a NaN with its sign bit set, and
    which NaN an operation passes on differs between numpy's passes and the kernel's."""

    def spread(a):
        return (np.nanvar(a), np.nanvar(a, axis=1), np.nanstd(a, axis=0, keepdims=True),
                np.nanstd(a, axis=1))  # fmt: skip

    with np.errstate(all="ignore"):
        rows = np.vstack([NAN_ROWS, [1.0, 2.0, 3.0, 4.5]])
        data = rows.astype(dtype) if dtype.startswith("float") else rows > 1
        if dtype.startswith("int"):
            data = (np.arange(28).reshape(7, 4) * 37 - 100).astype(dtype)
    for got, want in _against_numpy(spread, data):
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)
        numbers = ~np.isnan(want)
        assert np.array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


@given(st.lists(st.sampled_from(SPECIALS), min_size=12, max_size=12))
def test_nansum_nanprod_and_nanmean_take_numpys_values(values):
    a = np.array(values).reshape(3, 4)
    fn = rg.jit(lambda a: (np.nansum(a, axis=0), np.nanprod(a, axis=1), np.nanmean(a)))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = (np.nansum(a, axis=0), np.nanprod(a, axis=1), np.nanmean(a))
        got = fn(a)
    for g, w in zip(got, want, strict=True):
        same(g, w)


def test_nan_reductions_refuse_what_they_do_not_compute():
    x = rg.vector("x")
    with pytest.raises(rg.UnsupportedError, match=r"numpy.nansum: dtype='float32'"):
        np.nansum(x, dtype="float32")
    with pytest.raises(rg.UnsupportedError, match=r"numpy.nanmax: initial=3.0 is not"):
        np.nanmax(x, initial=3.0)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int16", "bool"])
def test_var_and_std_with_ddof_divide_as_numpy(dtype, rng):
    """The sum of squared deviations over the slice's size less ``ddof``, in the sum's
    dtype; at ``ddof`` equal to the size, inf (or NaN for a constant slice), as numpy
    (which also warns).  The sums may round in another order than numpy's."""

    def spread(m):
        return (np.var(m, ddof=1), np.var(m, axis=0, ddof=1),
                np.std(m, axis=1, ddof=2, keepdims=True), np.var(m, axis=1, ddof=7),
                np.var(m, axis=1, ddof=9), np.std(m, ddof=0.5))  # fmt: skip

    a = rng.normal(size=(5, 7)) * 3
    a[1, 2], a[3, 3], a[4] = np.inf, -0.0, 2.5  # a constant row: 0 / 0 at ddof 7
    data = a > 0 if dtype == "bool" else a.astype(dtype)
    for got, want in _against_numpy(spread, data):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == "float32" else 1e-13)
