"""Every Op's pullback against central differences, on its own and in random
programs, in numpy's evaluation and compiled; gradients that broadcast, shapes the
types leave open, and the errors."""

import numpy as np
import pytest
from hypothesis import given

import relgraph as rg
from relgraph.ops import ALL_OPS
from relgraph.ops.autodiff import vjp_terms
from tests import fuzz

RNG = np.random.default_rng(7)
x, y = rg.vector("x"), rg.vector("y")
M, N = rg.matrix("M"), rg.matrix("N")
T = rg.tensor("T", ndim=3)
s = rg.scalar("s")
VALUES = {
    x: RNG.uniform(0.5, 2.0, 4),
    y: RNG.uniform(0.5, 2.0, 4),
    M: RNG.uniform(0.5, 2.0, (4, 3)),
    N: RNG.uniform(0.5, 2.0, (3, 4)),
    T: RNG.uniform(0.5, 2.0, (2, 3, 3)),
    s: np.float64(1.3),
}

# One program per Op, its operands inside the Op's domain and away from its kinks.
SPECIAL = {
    "log1mexp": lambda: rg.log1mexp(-x),
    "arcsin": lambda: rg.arcsin(x / 3),
    "arccos": lambda: rg.arccos(x / 3),
    "arctanh": lambda: rg.arctanh(x / 3),
    "arccosh": lambda: rg.arccosh(x + 1),
    "log_ndtr": lambda: rg.log_ndtr(-10 * x) + rg.log_ndtr(x),
    "where": lambda: rg.where(x > 1.2, x * y, y),
    "clip": lambda: rg.clip(x, 0.9, 1.6) * y,
    "astype": lambda: rg.astype(x * y, "float64") + rg.astype(x > 1, "float64"),
    "expand_as": lambda: rg.expand_as(s, x) * y,
    "dot": lambda: (M @ N @ x) @ y + x @ y + N @ M[:, 0],
    "matmul": lambda: T @ M[:3, :],
    "transpose": lambda: rg.transpose(T, (2, 0, 1)) * rg.transpose(rg.transpose(T), (0, 2, 1)),
    "reshape": lambda: rg.reshape(M, (2, 6)) * rg.reshape(N.T, (2, 6)),
    "reshape_as": lambda: rg.reshape_as(x, M[:2, :2]),
    "expand_dims": lambda: rg.expand_dims(x, (0, 2)) * M[:, :1],
    "squeeze": lambda: rg.squeeze(M[:, 1:2], 1) * x,
    "broadcast_to": lambda: rg.broadcast_to(s, (3, 4)) * N,
    "getitem": lambda: M[1:, None, ::-2] * M[0, 1] + x[-1],
    "scatter_as": lambda: rg.scatter_as(x[1:3], x, ((1, 3, None),)) * y,
    "concatenate": lambda: rg.concatenate([rg.vector("u", shape=2), rg.vector("v", shape=3)]),
    "stack": lambda: rg.stack([x, y * y], 1),
    "logsumexp": lambda: rg.logsumexp(M, axis=0) + rg.logsumexp(T, axis=(0, 2)).sum(),
    "max": lambda: rg.max(M, axis=1, keepdims=True) * M + rg.max(x),
    "min": lambda: rg.min(T, axis=(1, 2)),
    "mean": lambda: rg.mean(M, axis=0) + rg.mean(T),
    "sum": lambda: rg.sum(T, axis=1) * rg.sum(M * M),
    "inv": lambda: rg.inv(N @ M + I3),
    "take": lambda: rg.take(M, COLUMNS, 1) + rg.sum(rg.take(T, PER_ROW)),
    "take_along_axis": lambda: rg.take_along_axis(M, PER_ROW, 1) * x[:, None],
    "add_at": lambda: rg.add_at(y[:2] * 2, x, TWICE) + rg.sum(rg.add_at(M[:, :2], M, TWICE, 1)),
    "add_along_axis": lambda: rg.add_along_axis(M[:, :1] * M[:, 1:2], M, PER_ROW, 1),
    "solve": lambda: rg.solve(N @ M + I3, M[0]) + rg.sum(rg.solve(N @ M + I3, N)),
    "det": lambda: rg.det(N @ M),
    "logabsdet": lambda: rg.logabsdet(N @ M),
    "det_sign": lambda: rg.det_sign(N @ M - 20 * I3),
    "diag": lambda: rg.diag(N @ M) + rg.sum(rg.diag(x)),
    "cumsum": lambda: rg.cumsum(M, axis=0) * M + rg.sum(rg.cumsum(T, 1)) + rg.sum(rg.cumsum(N)),
    # Bit operations take integers: the gradient reaches y only.
    "bitwise_and": lambda: y * rg.astype(_integers(x) & 6, "float64"),
    "bitwise_or": lambda: y * rg.astype(_integers(x) | 6, "float64"),
    "bitwise_xor": lambda: y * rg.astype(_integers(x) ^ 6, "float64"),
    "invert": lambda: y * rg.astype(~_integers(x), "float64"),
    "left_shift": lambda: y * rg.astype(_integers(x) << 2, "float64"),
    "right_shift": lambda: y * rg.astype(_integers(x) >> 1, "float64"),
    "gcd": lambda: y * rg.astype(rg.gcd(_integers(x), 6), "float64"),
    "lcm": lambda: y * rg.astype(rg.lcm(_integers(x), 6), "float64"),
}
EXTRA = {
    rg.vector("u", shape=2): RNG.uniform(0.5, 2, 2),
    rg.vector("v", shape=3): RNG.uniform(0.5, 2, 3),
}
WITHOUT = {
    "prod",
    "cumprod",
    "cholesky",
    "gammaln",
    "solve_lower",
    "solve_upper",
    "sort",
    "median",
    "quantile",
}  # refused
I3 = rg.Constant(3 * np.eye(3))
COLUMNS = rg.Constant(np.array([0, 2, -1]))
PER_ROW = rg.Constant(np.array([[0], [2], [1], [-1]]))
TWICE = rg.Constant(np.array([1, 1]))


def _integers(t):
    return rg.astype(4 * t, "int64")


def _program(op):
    if op.name in SPECIAL:
        return SPECIAL[op.name]()
    n = op.nin if op.nin is not None else 3
    return op(*[x, y, x * y][:n])


def _objective(t):
    """A scalar of ``t`` whose gradient is not all ones: sum(t * weights)."""
    t = rg.astype(t, "float64") if rg.typeof(t).dtype != np.float64 else t
    if rg.typeof(t).ndim == 0:
        return t * 1.7
    weights = rg.Constant(RNG.uniform(-1, 1, rg.evaluate(t, VALUES | EXTRA).shape))
    return rg.sum(t * weights)


def _central(term, symbol, values, h=1e-6):
    """d term / d symbol by central differences in float64."""
    base = np.asarray(values[symbol], dtype=np.float64)
    out = np.zeros(base.shape)
    for i in np.ndindex(base.shape):
        step = h * max(1.0, abs(base[i]))
        hi, lo = base.copy(), base.copy()
        hi[i] += step
        lo[i] -= step
        f_hi = rg.evaluate(term, values | {symbol: hi[()]})
        f_lo = rg.evaluate(term, values | {symbol: lo[()]})
        out[i] = (f_hi - f_lo) / (2 * step)
    return out


def _free(term):
    from relgraph.terms.traverse import free_symbols

    return sorted(free_symbols([term]), key=lambda v: v.name)


@pytest.mark.parametrize("op", [op for op in ALL_OPS.values() if op.name not in WITHOUT], ids=str)
def test_every_ops_gradient_agrees_with_central_differences(op):
    objective = _objective(_program(op))
    wrt = [v for v in _free(objective) if v.type.dtype.kind == "f"]
    values = VALUES | EXTRA
    grads = rg.grad(objective, wrt, include=())
    compiled = rg.function(wrt and _free(objective), grads, compile="eager")
    got = compiled(*[values[v] for v in _free(objective)])
    for v, g, c in zip(wrt, grads, got):
        expected = _central(objective, v, values)
        evaluated = rg.evaluate(g, values)
        assert evaluated.shape == np.shape(values[v]) and c.dtype == v.type.dtype
        np.testing.assert_allclose(evaluated, expected, rtol=1e-6, atol=1e-7, err_msg=v.name)
        np.testing.assert_allclose(c, evaluated, rtol=1e-12, atol=1e-14)


@given(fuzz.programs(depth=4))
def test_gradients_of_random_programs_agree_with_central_differences(e):
    objective = rg.sum(e.term) if e.ndim else e.term
    values = fuzz.inputs(0)
    wrt = _free(objective)
    for v, g in zip(wrt, rg.grad(objective, wrt)):
        expected = _central(objective, v, values, h=1e-7)
        scale = 1 + np.abs(expected)
        assert np.all(np.abs(rg.evaluate(g, values) - expected) <= 1e-4 * scale), v.name


def test_ties_split_evenly_and_piecewise_constant_ops_pass_nothing():
    a = np.array([1.0, 3.0, 3.0])
    dx = rg.grad(rg.max(x) + rg.sum(rg.maximum(x, 3.0)) + rg.sum(rg.floor(x)), x, include=())
    assert rg.evaluate(dx, {x: a}).tolist() == [0.0, 1.0, 1.0]  # 0.5 + 0.5 at each tie
    assert rg.evaluate(
        rg.grad(rg.sum(rg.abs(x)), x), {x: np.array([-2.0, 0.0, 2.0])}
    ).tolist() == [
        -1.0,
        0.0,
        1.0,
    ]


def test_a_broadcast_operand_gets_the_summed_cotangent():
    one = rg.vector("one", shape=1)
    row = rg.matrix("row", shape=(1, None))
    t = rg.sum(one * x) + rg.sum(row * M.T) + rg.sum(s * M)
    values = VALUES | {one: np.array([0.7]), row: RNG.normal(size=(1, 4))}
    grads = rg.grad(t, [one, row, s], include=())
    f = rg.function([one, row, s, x, M], grads, compile="eager")
    got = f(*[values[v] for v in (one, row, s, x, M)])
    for v, c in zip((one, row, s), got):
        np.testing.assert_allclose(c, _central(t, v, values), rtol=1e-6)
        assert c.shape == np.shape(values[v])


def test_an_axis_that_broadcasts_at_run_time_raises_instead_of_a_wrong_gradient():
    (dx,) = vjp_terms(rg.sum(x * y), [x], np.float64(1.0))
    f = rg.function([x, y], dx, compile="eager")
    small, large = np.ones(1), np.arange(3.0)
    with pytest.raises(rg.TypeCheckError, match="shape"):
        f(small, large)
    with pytest.raises(rg.TypeCheckError, match="does not fit"):
        rg.evaluate(dx, {x: small, y: large})
    assert f(large, large).tolist() == large.tolist()


def test_float32_gradients_stay_float32():
    x32 = rg.vector("x32", "float32")
    g = rg.grad(rg.sum(rg.tanh(x32) * 2), x32)
    out = rg.function([x32], g, compile="eager")(np.array([0.5, -1.0], np.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, 2 / np.cosh([0.5, -1.0]) ** 2, rtol=1e-6)


def test_a_symbol_the_output_does_not_use_gets_zeros_of_its_shape():
    dy = rg.grad(rg.sum(x), y)
    assert rg.evaluate(dy, {x: np.ones(2), y: np.ones(5)}).tolist() == [0.0] * 5


def test_what_has_no_gradient_is_named():
    with pytest.raises(rg.GradientError, match="prod has no gradient yet.*exp\\(sum\\(log"):
        rg.grad(rg.prod(x), x)
    with pytest.raises(rg.GradientError, match="cholesky has no gradient yet"):
        rg.grad(rg.sum(rg.cholesky(M)), M)
    with pytest.raises(rg.GradientError, match="solve_lower has no gradient yet.*linalg.solve"):
        rg.grad(rg.sum(rg.solve_triangular(M, x, lower=True)), x)
    with pytest.raises(rg.GradientError, match="cumprod has no gradient yet"):
        rg.grad(rg.sum(rg.cumprod(x)), x)
    with pytest.raises(rg.GradientError, match="concatenate.*sizes.*give the symbols shapes"):
        rg.grad(rg.sum(rg.concatenate([x, y])), x)


# Special points per one-operand Op, inside its domain: far tails, near the poles and
# the points where the stable forms switch branches.
TAILS = {
    "exp": [-700.0, -1.0, 0.0, 1.0, 700.0], "log": [1e-300, 1e-5, 1.0, 1e300],
    "log1p": [-0.999, -1e-10, 0.0, 1e-10, 1e300], "expm1": [-700.0, -1e-10, 1e-10, 700.0],
    "sqrt": [1e-300, 1e-10, 1.0, 1e300], "tanh": [-20.0, -1e-10, 0.5, 20.0],
    "sigmoid": [-700.0, -30.0, 0.0, 30.0, 700.0], "softplus": [-700.0, -30.0, 0.0, 30.0, 800.0],
    "log1mexp": [-700.0, -1.0, -0.6931, -1e-10], "erf": [-6.0, -1e-10, 0.5, 6.0],
    "erfc": [-6.0, 0.5, 6.0, 26.0], "erfcx": [-5.0, 0.5, 10.0, 30.0, 1e5],
    "ndtr": [-37.0, -5.0, 0.0, 8.0], "log_ndtr": [-1e5, -40.0, -20.0, -1.0, 0.0, 5.0],
    "sinh": [-700.0, -1e-10, 1.0, 700.0], "cosh": [-700.0, 1e-10, 1.0, 700.0],
    "arcsinh": [-1e300, -1e-10, 1.0, 1e300], "arctan": [-1e150, -1e-10, 1.0, 1e150],
    "arcsin": [-0.999, -1e-10, 0.5, 0.999], "arccos": [-0.999, 1e-10, 0.5, 0.999],
    "arccosh": [1.0 + 1e-10, 2.0, 1e300], "arctanh": [-0.999, 1e-10, 0.5, 0.999],
    "reciprocal": [-1e300, -1e-10, 1e-10, 1e300], "square": [-1e150, -1e-10, 1e150],
    "log2": [1e-300, 1.0, 1e300], "log10": [1e-300, 1.0, 1e300], "exp2": [-1000.0, 0.0, 1000.0],
    "sin": [-1e10, 0.0, 1.0], "cos": [-1e10, 0.0, 1.0], "tan": [-1.5, 0.0, 1.0],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(TAILS))
def test_one_operand_derivatives_at_special_points_agree_with_mpmath(name):
    """d/dx of each Op at its special points against mpmath's derivative of the Op's
    exact reference, at 60 digits: where the true derivative is a float64 number, the
    gradient (numpy's evaluation and the compiled kernel) is within 1e-8 of it
    (relative), never NaN or inf."""
    import mpmath

    op = getattr(rg, name)
    x = rg.vector("x")
    points = np.array(TAILS[name])
    term = rg.grad(rg.sum(op(x)), x)
    evaluated = rg.evaluate(term, {x: points})
    compiled = rg.function([x], term, compile="eager")(points)
    with mpmath.workdps(60):
        for p, g in [*zip(points, evaluated), *zip(points, compiled)]:
            at = mpmath.mpf(float(p))
            true = mpmath.diff(op.exact, at, h=abs(at) * mpmath.mpf(10) ** -25 or 1e-25)
            if not mpmath.isfinite(true) or abs(true) > 1e300 or 0 < abs(true) < 1e-300:
                continue  # not a float64 number
            assert np.isfinite(g), (name, p, g)
            assert abs(g - float(true)) <= 1e-8 * abs(float(true)) + 1e-300, (name, p, g, true)
