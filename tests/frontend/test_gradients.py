"""rg.grad, rg.value_and_grad and rg.vjp: on terms and on numpy functions, stabilised
by the relations, compiled with the value, second order, and the errors."""

import numpy as np
import pytest
from scipy.special import expit

import relgraph as rg

X, w, y, v = rg.matrix("X"), rg.vector("w"), rg.vector("y"), rg.vector("v")
RNG = np.random.default_rng(3)


def log_likelihood(X, w, y):
    z = X @ w
    return np.sum(y * z - np.log(1 + np.exp(z)))


def _data(scale, n=2000):
    return RNG.normal(0, scale, (n, 8)), RNG.normal(0, scale, 8), RNG.normal(0, scale, n)


def test_the_gradient_is_taken_of_the_stable_program():
    z = rg.vector("z")
    assert rg.pprint(rg.grad(rg.sum(rg.log(1 + rg.exp(z))), z)) == "sigmoid(z)"
    naive = rg.grad(rg.sum(rg.log(1 + rg.exp(z))), z, include=())
    with np.errstate(all="ignore"):
        assert np.isnan(rg.evaluate(naive, {z: np.array([800.0])})).all()


def test_the_log_likelihoods_gradient_is_finite_and_exact_where_numpy_gives_nan():
    Xn, wn, yn = _data(30.0)
    grad = rg.grad(log_likelihood, argnums=1, compile="eager")
    got = grad(Xn, wn, yn)
    z = Xn @ wn
    exact = Xn.T @ (yn - expit(z))
    with np.errstate(all="ignore"):
        by_hand = Xn.T @ (yn - np.exp(z) / (1 + np.exp(z)))
    assert np.isnan(by_hand).any() and np.isfinite(got).all()
    np.testing.assert_allclose(got, exact, rtol=1e-12)


def test_value_and_grad_of_a_function_is_one_kernel_with_numpys_values():
    Xn, wn, yn = _data(1.0)
    f = rg.value_and_grad(log_likelihood, argnums=(0, 1), compile="eager")
    value, (dX, dw) = f(Xn, wn, yn)
    s = expit(Xn @ wn)
    np.testing.assert_allclose(value, log_likelihood(Xn, wn, yn), rtol=1e-12)
    np.testing.assert_allclose(dX, np.outer(yn - s, wn), rtol=1e-10)
    np.testing.assert_allclose(dw, Xn.T @ (yn - s), rtol=1e-10)
    assert len(f.last.function.outputs) == 3  # the value and both gradients, one kernel
    assert f.ready


def test_second_order_hessian_vector_products():
    A, x = rg.matrix("A"), rg.vector("x")
    hvp = rg.grad(rg.sum(rg.grad(x @ (A @ x), x) * v), x)
    An, xn, vn = RNG.normal(size=(4, 4)), RNG.normal(size=4), RNG.normal(size=4)
    np.testing.assert_allclose(rg.evaluate(hvp, {A: An, x: xn, v: vn}), (An + An.T) @ vn)

    L = rg.sum(y * (X @ w) - rg.softplus(X @ w))
    hvp = rg.grad(rg.sum(rg.grad(L, w) * v), w)
    Xn, wn, yn = _data(1.0, n=50)
    vn = RNG.normal(size=8)
    s = expit(Xn @ wn)
    f = rg.function([X, w, y, v], hvp, compile="eager")
    np.testing.assert_allclose(f(Xn, wn, yn, vn), -Xn.T @ (s * (1 - s) * (Xn @ vn)), rtol=1e-10)


def test_vjp_of_a_vector_output():
    A, x = rg.matrix("A"), rg.vector("x")
    term = rg.vjp(rg.tanh(A @ x), x, v)
    An, xn, vn = RNG.normal(size=(3, 4)), RNG.normal(size=4), RNG.normal(size=3)
    expected = An.T @ (vn * (1 - np.tanh(An @ xn) ** 2))
    np.testing.assert_allclose(rg.evaluate(term, {A: An, x: xn, v: vn}), expected)
    fixed = rg.vjp(rg.exp(x), x, np.array([1.0, 2.0]))
    assert rg.evaluate(fixed, {x: np.zeros(2)}).tolist() == [1.0, 2.0]


def test_bad_requests_say_what_is_wrong():
    with pytest.raises(rg.GradientError, match="scalar.*rg.vjp"):
        rg.grad(rg.exp(w), w)
    with pytest.raises(rg.GradientError, match="n is int64"):
        n = rg.vector("n", "int64")
        rg.grad(rg.sum(n * 1.5), n)
    with pytest.raises(TypeError, match="needs wrt"):
        rg.grad(rg.sum(w))
    with pytest.raises(rg.GradientError, match="cotangent has shape"):
        rg.vjp(rg.exp(w), w, rg.matrix("c"))
    with pytest.raises(TypeError, match="argnums"):
        rg.grad(log_likelihood, argnums=5)
    with pytest.raises(rg.GradientError, match="'b' is a Python number"):
        rg.grad(lambda a, b: np.sum(a * b), argnums=1)(np.ones(2), 2.0)
    with pytest.raises(rg.GradientError, match="one array result"):
        rg.grad(lambda a: (np.sum(a), np.sum(a)))(np.ones(2))
