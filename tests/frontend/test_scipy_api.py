"""scipy's Python-level functions in traced code: each twin gives scipy's values
(numpy tier and compiled), on ordinary data and at the values that break formulas,
and tracing changes nothing outside the trace."""

import numpy as np
import pytest
import scipy.linalg as sl
import scipy.special as sp
import scipy.stats as st
from scipy.special import logsumexp
from scipy.stats import norm

import relgraph as rg

SPECIAL = np.array([[800.0, 0.0, -800.0, 1.0], [-np.inf, -np.inf, -np.inf, -np.inf],
                    [np.inf, 1.0, 2.0, 3.0], [np.nan, 1.0, 2.0, 3.0],
                    [-0.0, 5e-324, -1e-300, 36.0]])  # fmt: skip


def both_tiers(fn, *args):
    """The numpy tier's result and the compiled kernel's."""
    lazy, eager = rg.jit(fn, compile="never"), rg.jit(fn, compile="eager")
    return lazy(*args), eager(*args)


def assert_scipys(fn, *args, rtol=1e-13, atol=0.0):
    with np.errstate(all="ignore"):
        want = fn(*args)
        for got in both_tiers(fn, *args):
            assert np.asarray(got).dtype == np.asarray(want).dtype
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp(axis, keepdims, rng):
    z = np.concatenate([SPECIAL, rng.normal(size=(3, 4)) * 30])
    assert_scipys(lambda z: sp.logsumexp(z, axis=axis, keepdims=keepdims), z)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_softmax_and_log_softmax(name, axis, rng):
    fn = getattr(sp, name)
    z = np.concatenate([SPECIAL, rng.normal(size=(3, 4)) * 30])
    assert_scipys(lambda z: fn(z, axis=axis), z)
    # float32: within its rounding of the row's scale (the rewrite's logsumexp is the
    # more accurate: -2.3e-8 where scipy's log(1 + 2.3e-8) rounds to 0)
    assert_scipys(lambda z: fn(z, axis=axis), z.astype(np.float32), rtol=1e-6, atol=1e-6)


def test_integers_compute_in_float64_as_scipy():
    assert_scipys(lambda n: logsumexp(n, axis=0), np.array([[1, 2], [3, 4]], np.int8))


@pytest.mark.parametrize("method", ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"])
def test_norm_methods(method, rng):
    x = np.concatenate([[-40.0, -0.0, 0.0, 9.0, 40.0, np.inf, -np.inf, np.nan],
                        rng.normal(size=8) * 5])  # fmt: skip
    assert_scipys(lambda x: getattr(st.norm, method)(x), x)
    assert_scipys(lambda x: getattr(norm, method)(x, 1.5, scale=2.0), x)
    assert_scipys(lambda x, s: getattr(norm, method)(x, loc=-1.0, scale=s), x,
                  np.where(np.arange(x.size) % 3, 2.0, -1.0))  # NaN where scale <= 0  # fmt: skip
    assert_scipys(lambda x: getattr(st.norm(0.5, 3.0), method)(x), x.astype(np.float32))


FROZEN = norm(loc=0.5, scale=2.0)  # a frozen distribution the traced code reads


def test_a_frozen_distribution_as_a_global(rng):
    x = rng.normal(size=5)
    assert_scipys(lambda x: FROZEN.logpdf(x).sum(), x)


def test_what_a_twin_cannot_follow_is_named():
    x = rg.vector("x")
    with pytest.raises(rg.UnsupportedError, match="logsumexp with b= .*np.log"):
        rg.trace(lambda z: sp.logsumexp(z, b=2.0), x)
    with pytest.raises(rg.UnsupportedError, match="norm.ppf is not supported.*logpdf"):
        rg.trace(lambda q: norm.ppf(q), x)
    with pytest.raises(rg.UnsupportedError, match="unit_diagonal=True"):
        rg.trace(lambda a, b: sl.solve_triangular(a, b, unit_diagonal=True), rg.matrix("a"), x)


def positive_definite(rng, n=5):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1, "T"])
def test_solve_triangular(lower, trans, rng):
    S, b = positive_definite(rng), rng.normal(size=(5, 3))
    L = np.linalg.cholesky(S)
    a = L if lower else L.T.copy()
    assert_scipys(lambda a, b: sl.solve_triangular(a, b, trans=trans, lower=lower), a, b,
                  rtol=1e-12)  # fmt: skip
    assert_scipys(lambda a, b: sl.solve_triangular(a, b[:, 0], lower=lower), a, b, rtol=1e-12)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    assert_scipys(lambda a, b: sl.solve_triangular(a, b, lower=lower), a32, b32, rtol=1e-4)
    # only the triangle named is read, as scipy
    assert_scipys(lambda a, b: sl.solve_triangular(a + a.T, b, lower=lower), a, b, rtol=1e-12)


@pytest.mark.parametrize("order", ["C", "F"])  # solved by rows, by columns
@pytest.mark.parametrize("k", [2, 3])  # each side of FEW_COLUMNS; one column below
@pytest.mark.parametrize("lower", [True, False])
def test_solve_triangular_on_large_systems(k, lower, order, rng):
    """Rows longer than the kernel's unrolled dot product, one to many right-hand sides
    (solved one by one or all at once), a triangle stored by rows or by columns,
    right-hand sides strided and of another dtype; the inputs stay as they were."""
    L = np.linalg.cholesky(positive_definite(rng, 23))
    a = np.asarray(L if lower else L.T, order=order)
    b = rng.normal(size=(23, 2 * k))[:, ::2]  # every other column: not contiguous
    before = (a.copy(), b.copy())
    fn = lambda a, b: sl.solve_triangular(a, b, lower=lower)  # noqa: E731
    assert_scipys(fn, a, b, rtol=1e-11)
    assert_scipys(fn, a.astype(np.float32), b, rtol=1e-11)  # float64, as scipy
    assert_scipys(lambda a, b: fn(a, b[:, 0]), a, b, rtol=1e-11)
    np.testing.assert_array_equal(a, before[0])
    np.testing.assert_array_equal(b, before[1])


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("lower", [True, False])
def test_solve_triangular_of_special_values(k, lower, order, rng):
    """Infinities, NaNs, zeros of both signs, subnormals and values near overflow on
    the right: NaN and infinity where scipy has them (with check_finite=False; by
    default scipy refuses them), the finite values close.  The sign of a zero is
    LAPACK's own order of operations, not matched."""
    L = np.linalg.cholesky(positive_definite(rng, 9))
    a = np.asarray(L if lower else L.T, order=order)
    values = [np.inf, -np.inf, np.nan, -0.0, 0.0, 5e-324, -2.2e-308, 1e308, -1e308, 1.0]
    fn = lambda a, b: sl.solve_triangular(a, b, lower=lower, check_finite=False)  # noqa: E731
    for _ in range(20):
        b = rng.choice(values, size=(9, k))
        assert_scipys(fn, a, b[:, 0] if k == 1 else b, rtol=1e-12)


def test_a_zero_on_the_diagonal_raises_as_scipy(rng):
    a, b = np.tril(rng.normal(size=(4, 4))), rng.normal(size=4)
    a[2, 2] = 0.0
    fn = lambda a, b: sl.solve_triangular(a, b, lower=True)  # noqa: E731
    for f in (rg.jit(fn, compile="never"), rg.jit(fn, compile="eager")):
        with pytest.raises(np.linalg.LinAlgError, match="singular"):
            f(a, b)


def test_cholesky_solves(rng):
    S, b = positive_definite(rng), rng.normal(size=(5, 2))

    def posterior_mean(S, b):
        return sl.cho_solve(sl.cho_factor(S), b)

    def upper(S, b):
        U = sl.cholesky(S)
        return sl.solve_triangular(U, sl.solve_triangular(U, b, trans="T"), lower=False)

    for fn in (posterior_mean, upper, lambda S, b: sl.solve(S, b) + sl.inv(S) @ b * sl.det(S)):
        assert_scipys(fn, S, b, rtol=1e-10)
    term = rg.jit(posterior_mean).specialize(S, b).rewritten
    assert rg.pprint(term) == "solve_upper(cholesky(S).T, solve_lower(cholesky(S), b))"


def helper(z):
    return logsumexp(z, axis=1)


def test_helpers_closures_and_nothing_changed_outside(rng):
    import relgraph.frontend.scipy_api as api

    special = sp

    def nll(z, y):  # a helper of the user's own, and a module in a closure
        return np.mean(helper(z) - special.logsumexp(z * y, axis=1))

    z, y = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    assert_scipys(nll, z, y)
    assert helper.__globals__["logsumexp"] is sp.logsumexp  # the module's globals kept
    assert nll.__closure__[0].cell_contents is sp
    assert api.with_twins(np.sum) is np.sum  # a library's function is not copied
    outside = rg.jit(nll)
    outside(z, y)
    assert sp.logsumexp(z, axis=1).shape == (4,)  # scipy itself untouched


COUNT = 0


def test_a_function_that_assigns_a_global_is_not_copied():
    import relgraph.frontend.scipy_api as api

    def counted(z):
        global COUNT
        COUNT += 1
        return sp.logsumexp(z)

    assert api.with_twins(counted) is counted
    with pytest.raises(rg.UnsupportedError, match="scipy.special._logsumexp.logsumexp"):
        rg.trace(counted, rg.vector("z"))
