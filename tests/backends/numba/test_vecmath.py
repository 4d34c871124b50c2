"""vecmath: within 2 ulp of numpy everywhere, and numpy's special values."""

import math
import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from numba import njit
from scipy import special

import relgraph as rg
from relgraph.backends.numba import kernels, vecmath, vecmath32, vecspecial
from relgraph.backends.numba.lowering import lower

SPECIAL = np.array([
    0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 709.78, 709.79, -745.13, -745.14, -708.4,
    -720.0, 1e-300, -1e-300, 5e-324, 1e-17, -1e-17, 0.41421356237309503, -0.2928932188134524,
    -1 + 1e-16, 1e300, np.finfo(float).max, -0.9999999999, -2.0,
])  # fmt: skip


def _over_array(fn):
    """A Numba loop applying the scalar ``fn`` to every element, as kernels do."""

    @njit(error_model="numpy")
    def run(x, out):
        for i in range(x.shape[0]):
            out[i] = fn(x[i])

    return run


_exp_all = _over_array(vecmath.exp)
_log1p_all = _over_array(vecmath.log1p)
_sigmoid_all = _over_array(vecmath.sigmoid)
_softplus_all = _over_array(vecmath.softplus)
_tanh_all = _over_array(vecmath.tanh)
_log_all = _over_array(vecmath.log)
_erf_all = _over_array(vecspecial.erf)


def _reference(fn):
    """The relgraph.ops.special reference, in float128 where the platform has it."""

    wide = getattr(np, "longdouble", np.float64)
    return lambda x: fn(np.asarray(x, wide)).astype(np.float64) if wide != np.float64 else fn(x)


def ulp_error(got, ref):
    """Largest error in units of the last place, and how many specials (infinities,
    NaN, zeros with their sign) differ."""
    finite = np.isfinite(ref) & np.isfinite(got)
    err = np.abs(got[finite] - ref[finite]) / np.spacing(np.abs(ref[finite]))
    same = (got == ref) & (np.signbit(got) == np.signbit(ref)) | (np.isnan(got) & np.isnan(ref))
    return float(err.max(initial=0.0)), int(((~finite | (ref == 0)) & ~same).sum())


@pytest.mark.parametrize(
    "run, ref, make",
    [
        (_exp_all, np.exp, lambda rng: np.concatenate([
            rng.uniform(-750, 712, 10**6), rng.uniform(-1, 1, 10**5), SPECIAL])),
        (_log1p_all, np.log1p, lambda rng: np.concatenate([
            rng.uniform(-1, 1, 10**5), np.exp(rng.uniform(-700, 700, 10**6)),
            -1 + np.exp(rng.uniform(-40, 0, 10**5)), rng.uniform(-1e-8, 1e-8, 10**4), SPECIAL])),
        (_sigmoid_all, _reference(lambda v: 1 / (1 + np.exp(-v))), lambda rng: np.concatenate([
            rng.uniform(-750, 750, 10**6), rng.uniform(-40, 40, 10**5), SPECIAL])),
        (_softplus_all, _reference(lambda v: np.logaddexp(0, v)), lambda rng: np.concatenate([
            rng.uniform(-750, 750, 10**6), rng.uniform(-40, 40, 10**5),
            rng.uniform(-1, 1, 10**5),  # exp(-|x|) on both sides of sqrt(2) - 1 and 0.5
            -np.exp(rng.uniform(-60, 0, 10**4)), np.exp(rng.uniform(-60, 0, 10**4)),
            SPECIAL])),
        (_tanh_all, np.tanh, lambda rng: np.concatenate([
            rng.uniform(-30, 30, 10**6), rng.uniform(-1, 1, 10**5), rng.uniform(0.6, 0.65, 10**5),
            np.exp(rng.uniform(-700, 0, 10**4)), SPECIAL])),
        (_log_all, np.log, lambda rng: np.concatenate([
            np.exp(rng.uniform(-745, 709, 10**6)), rng.uniform(0.5, 2, 10**5),
            rng.uniform(-1, 1, 10**4), SPECIAL])),
        (_erf_all, np.vectorize(math.erf, otypes=[float]), lambda rng: np.concatenate([
            rng.uniform(-7, 7, 10**5), rng.uniform(-1.1, 1.1, 10**5),
            np.exp(rng.uniform(-700, 0, 10**4)), SPECIAL])),
    ],
    ids=["exp", "log1p", "sigmoid", "softplus", "tanh", "log", "erf"],
)  # fmt: skip
def test_within_two_ulp_of_numpy(run, ref, make):
    x = make(np.random.default_rng(7))
    out = np.empty_like(x)
    run(x, out)
    with np.errstate(all="ignore"):
        expected = ref(x)
    worst, special_mismatches = ulp_error(out, expected)
    assert worst <= 2.0 and special_mismatches == 0


@pytest.mark.parametrize("run", [_exp_all, _log_all, _tanh_all], ids=["exp", "log", "tanh"])
def test_the_loop_vectorises(run):
    x = np.linspace(0.5, 1, 64)
    run(x, np.empty_like(x))
    ir = run.inspect_llvm(run.signatures[0])
    assert "x double>" in ir  # LLVM vector types: no scalar libm call per element
    # nor integer <-> double conversions, which AVX2 converts lane by lane
    assert "fptosi" not in ir and "sitofp" not in ir


def _plain_loop(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] * 2.0


def test_only_the_function_that_calls_it_prefers_512_bit_vectors():
    x = np.linspace(-1, 1, 64)
    _exp_all(x, np.empty_like(x))
    assert '"prefer-vector-width"="512"' in _exp_all.inspect_llvm(_exp_all.signatures[0])
    plain = njit(_plain_loop)  # compiled after it, in the same process: Numba's defaults
    plain(x, np.empty_like(x))
    assert "prefer-vector-width" not in plain.inspect_llvm(plain.signatures[0])


@pytest.mark.skipif(
    not llvm.get_host_cpu_features().get("avx512f", False), reason="the CPU has no AVX-512"
)
def test_on_avx512_the_loop_uses_512_bit_registers():
    x = np.linspace(-1, 1, 64)
    _tanh_all(x, np.empty_like(x))
    assert "zmm" in _tanh_all.inspect_asm(_tanh_all.signatures[0])


@njit(error_model="numpy")
def _softplus_general(x, out):
    for i in range(x.shape[0]):
        out[i] = max(x[i], 0.0) + vecmath.log1p(vecmath.exp(-abs(x[i])))


def test_softplus_is_the_general_formula_bit_for_bit():
    # its log1p knows its argument is in [0, 1], and above 40 its exp(-x) stops at
    # exp(-40): the very same values as max(x, 0) + log1p(exp(-|x|)) everywhere
    rng = np.random.default_rng(1)
    edges = [40.0, np.nextafter(40, 41), 0.8813735870195429, -0.8813735870195429]
    x = np.concatenate([rng.uniform(-800, 800, 10**5), rng.uniform(-50, 50, 10**5),
                        rng.uniform(39, 41, 10**4), rng.uniform(-1, 1, 10**4), SPECIAL,
                        edges])  # fmt: skip
    got, want = np.empty_like(x), np.empty_like(x)
    _softplus_all(x, got)
    _softplus_general(x, want)
    assert np.array_equal(got, want, equal_nan=True)


@njit(error_model="numpy")
def _logaddexp_all(x, y, out):
    for i in range(x.shape[0]):
        out[i] = vecmath.logaddexp(x[i], y[i])


def test_logaddexp_within_two_ulp_of_numpy():
    """Pairs far apart and close together (``log1p``'s argument near 1 and near 0),
    equal pairs (``x + log 2``), and every pair of numpy's special values: infinities
    of one sign, of both, NaN on either side.  The error is in units of the larger
    operand's last place: where the sum cancels (``-0.7 + log1p(exp(-0.01))``, near 0)
    numpy's own value is that far from the true one too."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-750, 750, 10**6)
    near = x[5 * 10**5 :] + rng.normal(0, 1, 5 * 10**5)
    y = np.concatenate([rng.uniform(-750, 750, 5 * 10**5), near])
    a, b = np.meshgrid(SPECIAL, SPECIAL)
    small = rng.uniform(-1, 1, 10**4)
    x = np.concatenate([x, a.ravel(), small])
    y = np.concatenate([y, b.ravel(), small + np.exp(rng.uniform(-50, 0, 10**4))])
    got = np.empty_like(x)
    _logaddexp_all(x, y, got)
    with np.errstate(all="ignore"):
        expected = np.logaddexp(x, y)
        sizes = [np.where(np.isfinite(v), np.abs(v), 0.0) for v in (x, y, expected)]
        scale = np.spacing(np.maximum.reduce(sizes))
    finite = np.isfinite(expected) & np.isfinite(got)
    assert np.max(np.abs(got - expected)[finite] / scale[finite]) <= 2.0
    same = (got == expected) | (np.isnan(got) & np.isnan(expected))
    assert same[~finite].all() and same[x == y].all()


@njit(error_model="numpy")
def _hypot_all(x, y, out):
    for i in range(x.shape[0]):
        out[i] = vecmath.hypot(x[i], y[i])


@njit(error_model="numpy")
def _arctan2_all(y, x, out):
    for i in range(x.shape[0]):
        out[i] = vecmath.arctan2(y[i], x[i])


@pytest.mark.parametrize("run, ref", [(_hypot_all, np.hypot), (_arctan2_all, np.arctan2)],
                         ids=["hypot", "arctan2"])  # fmt: skip
def test_binary_trigonometry_within_two_ulp_of_numpy(run, ref):
    """``hypot`` and ``arctan2`` on pairs of every magnitude (huge and tiny ones scaled,
    subnormals), ratios near Cephes' break at 0.66 and near 1, and every pair of the
    special values: C99's signed zeros and multiples of pi/4 at zeros and infinities,
    inf over NaN in ``hypot``, NaN otherwise; within 2 ulp of a long double reference."""
    rng = np.random.default_rng(5)
    scale = np.exp(rng.uniform(-740, 700, 10**6))
    x, y = rng.normal(size=10**6) * scale, rng.normal(size=10**6)
    y = y * np.where(rng.uniform(size=10**6) < 0.5, scale, np.exp(rng.uniform(-740, 700, 10**6)))
    near = rng.uniform(0.6, 1.1, 10**5) * rng.choice([-1.0, 1.0], 10**5)
    a, b = np.meshgrid(SPECIAL, SPECIAL)
    x = np.concatenate([x, np.ones(10**5), a.ravel(), [0.0, -0.0, 0.0, -0.0]])
    y = np.concatenate([y, near, b.ravel(), [0.0, 0.0, -0.0, -0.0]])
    got = np.empty_like(x)
    run(x, y, got)
    with np.errstate(all="ignore"):
        exact = ref(x.astype(np.longdouble), y.astype(np.longdouble)).astype(np.float64)
        expected = ref(x, y)
    worst, special_mismatches = ulp_error(got, exact)
    assert worst <= 2.0 and special_mismatches == 0
    zero = expected == 0
    assert np.array_equal(np.signbit(got[zero]), np.signbit(expected[zero]))
    same = (got == expected) | (np.isnan(got) & np.isnan(expected))
    assert same[~np.isfinite(x) | ~np.isfinite(y) | (x == 0) | (y == 0)].all()
    assert "x double>" in run.inspect_llvm(run.signatures[0])  # no libm call per element


_F32_SPECIAL = np.array([
    0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 88.72, 88.73, -87.33, -103.97, -104.0,
    1e-45, -1e-45, 1.2e-38, np.finfo(np.float32).max, -np.finfo(np.float32).max, 1e-8,
], np.float32)  # fmt: skip


@pytest.mark.parametrize(
    "op, exact",
    [
        (rg.sigmoid, lambda v: special.expit(v)), (rg.erfc, lambda v: special.erfc(v)),
        (rg.ndtr, lambda v: special.ndtr(v)), (rg.log_ndtr, lambda v: special.log_ndtr(v)),
    ],
    ids=lambda p: getattr(p, "name", ""),
)  # fmt: skip
def test_float32_results_are_the_float64_ones_rounded(rng, op, exact):
    """A float32 result of a function with a vectorising float64 form (and none in
    float32) is computed in float64 and rounded once: within an ulp of float32 of the
    exact value, with the float64 function's specials (overflow and subnormals at
    float32's range), by the vectorising form (libm's float32 functions are a call per
    element)."""
    x = np.concatenate([rng.normal(0, 30, 5000), rng.uniform(-2, 2, 5000), _F32_SPECIAL])
    x = x.astype(np.float32)
    v = rg.vector("v", "float32")
    f = rg.function([v], op(v), compile="eager")
    got = f(x)
    with np.errstate(all="ignore"):
        want = exact(x.astype(np.float64)).astype(np.float32)
    assert got.dtype == np.float32
    worst, special_mismatches = ulp_error(got, want)
    assert worst <= 1.0 and special_mismatches == 0
    assert re.search(r"np\.float32\(np\.float32\([(0.5* ]*vec", f.source)


@pytest.mark.parametrize(
    "name, exact",
    [
        ("exp", np.exp), ("tanh", np.tanh), ("log", np.log), ("log1p", np.log1p),
        ("softplus", lambda v: np.logaddexp(0, v)), ("erf", lambda v: special.erf(v)),
    ],
)  # fmt: skip
def test_float32_forms_within_two_ulp_of_the_exact_value(rng, name, exact):
    """vecmath32's functions compute in float32 (eight lanes to a 256-bit register):
    within 2 ulp of the exact value, with its specials (checked on every float32 of
    their domain when they were written: at most 1.01 ulp for ``exp``, 1.33 ``tanh``,
    0.83 ``log``, 0.84 ``log1p``, 1.65 ``softplus``, 1.21 ``erf``), and compiled float32
    results use them."""
    x = np.concatenate([
        rng.uniform(-105, 90, 10**6), rng.uniform(-1, 1, 10**5), rng.uniform(0.6, 0.65, 10**4),
        rng.uniform(-4, 4, 10**5), rng.uniform(0.95, 1.05, 10**4),
        np.exp(rng.uniform(-100, 0, 10**4)), np.exp(rng.uniform(-103, 88, 10**5)),
        _F32_SPECIAL,
    ]).astype(np.float32)  # fmt: skip
    run, op = _over_array(getattr(vecmath32, name)), getattr(rg, name)
    out = np.empty_like(x)
    run(x, out)
    with np.errstate(all="ignore"):
        want = exact(x.astype(np.float64)).astype(np.float32)
    worst, special_mismatches = ulp_error(out, want)
    assert worst <= 2.0 and special_mismatches == 0
    v = rg.vector("v", "float32")
    f = rg.function([v], op(v), compile="eager")
    assert f"vecmath32.{op.name}(" in f.source
    np.testing.assert_array_equal(f(x), out)


DTYPES = [np.bool_, np.int8, np.uint8, np.int64, np.float32, np.float64]


@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", DTYPES)
def test_compiled_logaddexp_is_numpys_for_every_dtype_pair(da, db):
    """Float64 results go through vecmath (integer and bool operands converted first),
    float32 ones too, in float64, rounded; pairs numpy computes in float16 are refused,
    by name."""
    rng = np.random.default_rng(4)

    def values(dt):
        if dt is np.bool_:
            return rng.random(64) < 0.5
        if np.dtype(dt).kind in "iu":
            info = np.iinfo(dt)
            return rng.integers(info.min, info.max, 64, dtype=dt, endpoint=True)
        v = rng.normal(0, 300, 64)
        v[: len(SPECIAL)] = SPECIAL
        return v.astype(dt)

    a, b = rg.vector("a", np.dtype(da).name), rg.vector("b", np.dtype(db).name)
    va, vb = values(da), values(db)
    with np.errstate(all="ignore"):
        want = np.logaddexp(va, vb)
    if want.dtype == np.float16:
        with pytest.raises(rg.LoweringError, match="float16"):
            rg.function([a, b], rg.logaddexp(a, b), compile="eager")
        return
    got = rg.function([a, b], rg.logaddexp(a, b), compile="eager")(va, vb)
    rtol = 4.5e-16 if want.dtype == np.float64 else 2.5e-7  # 2 ulp
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True)


_exp_term_all = _over_array(vecmath.exp_term)


def _logsumexp_rows(exp):
    """Each row's logsumexp, its terms ``exp(v - max)`` summed in order."""

    @njit(error_model="numpy")
    def run(x):
        out = np.empty(x.shape[0])
        for i in range(x.shape[0]):
            top = x[i].max()
            acc = 0.0
            for v in x[i]:
                acc += exp(v - top)
            out[i] = np.log(acc) + top
        return out

    return run


def test_exp_term_is_exp_but_zero_where_exp_is_subnormal(rng):
    """``exp_term`` is ``exp`` where the result is a normal number, 0 below; a sum of
    such terms that holds ``exp(0) = 1`` (logsumexp's) is the same, bit for bit."""
    x = np.concatenate([rng.uniform(-760, 0, 10**5), SPECIAL])
    got, full = np.empty_like(x), np.empty_like(x)
    _exp_term_all(x, got), _exp_all(x, full)
    normal = np.abs(full) >= np.finfo(np.float64).tiny
    np.testing.assert_array_equal(got[normal | np.isnan(full)], full[normal | np.isnan(full)])
    assert (got[~normal & ~np.isnan(full)] == 0).all() and (~normal).sum() > 1000
    rows = rng.uniform(-2000, 0, (2000, 10))
    rows[::7, 3] = -708.39  # an exp just above the subnormal range
    rows[::5, 2] = rows[::5, 1] - 730  # one just below it
    np.testing.assert_array_equal(
        _logsumexp_rows(vecmath.exp_term)(rows), _logsumexp_rows(vecmath.exp)(rows)
    )


_erfc_all = _over_array(vecspecial.erfc)


def test_erfc_is_within_six_ulp_of_the_exact_value_everywhere(rng):
    """``erfc`` against mpmath at 40 digits: both sides of every branch point (1/4,
    0.84375, 1.25, 8), the tails where ``x*x`` loses bits and the result is subnormal
    (26.5-27.3), tiny arguments; exact at the special values.  (scipy's erfc is up to
    32 ulp away on these samples, glibc's up to 4.)"""
    import mpmath

    edges = np.array([0.25, 0.84375, 1.25, 8.0, 27.2])
    near = (edges[:, None] * (1 + rng.uniform(-1e-3, 1e-3, (5, 400)))).ravel()
    x = np.concatenate([
        rng.uniform(-7, 7, 4000), rng.uniform(-1.3, 1.3, 2000), rng.uniform(1.25, 27.3, 4000),
        rng.uniform(26.5, 27.3, 1000), near, -near, np.exp(rng.uniform(-700, 0, 500)),
    ])  # fmt: skip
    got = np.empty_like(x)
    _erfc_all(x, got)
    with mpmath.workdps(40):
        exact = np.array([float(mpmath.erfc(mpmath.mpf(float(v)))) for v in x])
    assert (exact[x > 26.6] > 0).any()  # subnormal results are in the sample
    assert np.max(np.abs(got - exact) / np.spacing(exact)) <= 6.0
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 27.3, 40.0, -9.0])
    got = np.empty_like(specials)
    _erfc_all(specials, got)
    np.testing.assert_array_equal(got, [1.0, 1.0, 0.0, 2.0, np.nan, 1.0, 1.0, 0.0, 0.0, 2.0])


def test_compiled_ndtr_and_erfc_vectorise_and_match_libm(rng):
    """Float64 ``ndtr`` and ``erfc`` loops use the vectorising ``erfc`` and agree with
    libm's ``erfc`` (which they replace) to a few ulp; float32 rounds them.  (scipy's
    own are further from both in the far tails: 5e-14 relative at ``ndtr(-25)``.)"""
    from scipy import special

    x = np.concatenate([rng.normal(0, 3, 10**5), rng.uniform(-40, 40, 10**4), SPECIAL])
    libm = np.vectorize(math.erfc, otypes=[float])
    f = rg.jit(lambda v: (special.ndtr(v), special.erfc(v)), compile="eager")
    for got, want in zip(f(x), (0.5 * libm(-x * 0.7071067811865476), libm(x))):
        worst, special_mismatches = ulp_error(got, want)
        assert worst <= 8.0 and special_mismatches == 0
    v = rg.vector("v")
    source = lower([v], [rg.ndtr(v) + rg.erfc(v) + rg.log_ndtr(v)]).source
    assert "vecspecial.erfc" in source and "vecspecial.log_ndtr" in source
    assert "math.erfc" not in source.replace("vecspecial.erfc", "")
    x32 = np.concatenate([rng.normal(0, 3, 1000), [0.0, -0.0, np.inf, -np.inf, np.nan]])
    x32 = x32.astype(np.float32)
    np.testing.assert_allclose(rg.jit(special.ndtr)(x32), special.ndtr(x32), rtol=1e-6)


_log_ndtr_all = _over_array(vecspecial.log_ndtr)


def test_log_ndtr_is_within_four_ulp_of_the_exact_value_below_zero(rng):
    """``log_ndtr`` against mpmath where ndtr is below 1/2 (every form: erfc's log,
    the asymptotic series below -37, on both sides of -20, scipy's switch, where its
    series leaves 86 ulp); above, the same value as the libm form within 1e-15 (both
    inherit erfc's sensitivity to the rounding of x/sqrt(2), as scipy's does)."""
    import mpmath

    x = np.concatenate([
        rng.uniform(-1e5, -37, 300), rng.uniform(-38, -36, 300), rng.uniform(-37, -1, 1000),
        rng.uniform(-20.5, -19.5, 300), rng.uniform(-1, 0, 300),
    ])  # fmt: skip
    got = np.empty_like(x)
    _log_ndtr_all(x, got)
    with mpmath.workdps(50):
        exact = np.array([float(mpmath.log(mpmath.ncdf(mpmath.mpf(float(v))))) for v in x])
    assert np.max(np.abs(got - exact) / np.spacing(np.abs(exact))) <= 4.0
    x = np.concatenate([rng.normal(0, 10, 10**5), SPECIAL, [-37.0, -20.0, 40.0, -1e200]])
    got, libm = np.empty_like(x), np.empty_like(x)
    _log_ndtr_all(x, got)
    _over_array(kernels.scalar_log_ndtr)(x, libm)
    np.testing.assert_allclose(got, libm, rtol=1e-15, atol=0, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(libm))
