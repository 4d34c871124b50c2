"""numpy's functions and operators on terms and traced values build the right terms."""

from types import SimpleNamespace

import numpy as np
import pytest
import scipy.linalg
import scipy.special
import scipy.stats

import relgraph as rg
from relgraph.frontend.numpy_api import supported_names
from relgraph.frontend.tracing import Traced

M, N = rg.matrix("M"), rg.matrix("N")
x, y = rg.vector("x"), rg.vector("y")
b = rg.vector("b", dtype="bool")
SYMBOLS = SimpleNamespace(M=M, N=N, x=x, y=y, b=b)


def values(rng):
    return {
        M: rng.normal(size=(3, 4)),
        N: rng.normal(size=(4, 3)),
        x: rng.normal(size=4),
        y: rng.normal(size=4),
        b: rng.random(4) > 0.5,
    }


# (numpy call on symbols, the same call on arrays, the expected printed term)
CASES = [
    (lambda n: np.exp(n.x), lambda v: np.exp(v[x]), "exp(x)"),
    (lambda n: np.add(n.x, n.y), lambda v: v[x] + v[y], "(x + y)"),
    (lambda n: np.subtract(n.x, 1.0), lambda v: v[x] - 1.0, "(x - 1.0)"),
    (lambda n: np.multiply(2, n.x), lambda v: 2 * v[x], "(2 * x)"),
    (lambda n: np.true_divide(n.x, n.y), lambda v: v[x] / v[y], "(x / y)"),
    (lambda n: np.power(n.x, 2), lambda v: v[x] ** 2, "(x ** 2)"),
    (lambda n: np.negative(n.x), lambda v: -v[x], "-x"),
    (lambda n: np.positive(n.x), lambda v: v[x], "x"),
    (lambda n: np.maximum(n.x, 0.0), lambda v: np.maximum(v[x], 0.0), "maximum(x, 0.0)"),
    (lambda n: np.minimum(n.x, n.y), lambda v: np.minimum(v[x], v[y]), "minimum(x, y)"),
    (lambda n: np.logaddexp(n.x, n.y), lambda v: np.logaddexp(v[x], v[y]), "logaddexp(x, y)"),
    (lambda n: np.log1p(np.abs(n.x)), lambda v: np.log1p(np.abs(v[x])), "log1p(abs(x))"),
    (lambda n: np.sqrt(np.square(n.x)), lambda v: np.sqrt(v[x] ** 2), "sqrt(square(x))"),
    (lambda n: np.tanh(n.x), lambda v: np.tanh(v[x]), "tanh(x)"),
    (lambda n: np.less(n.x, n.y), lambda v: v[x] < v[y], "(x < y)"),
    (lambda n: np.equal(n.x, n.y), lambda v: v[x] == v[y], "(x == y)"),
    (lambda n: np.not_equal(n.x, 0), lambda v: v[x] != 0, "(x != 0)"),
    (lambda n: np.logical_and(n.b, n.x > 0), lambda v: v[b] & (v[x] > 0), "logical_and(b, x > 0)"),
    (lambda n: np.bitwise_or(n.b, n.b), lambda v: v[b] | v[b], "logical_or(b, b)"),
    (lambda n: np.invert(n.b), lambda v: ~v[b], "logical_not(b)"),
    (lambda n: np.where(n.x > 0, n.x, 0.0), lambda v: np.where(v[x] > 0, v[x], 0.0),
     "where(x > 0, x, 0.0)"),
    (lambda n: np.clip(n.x, -1, 1), lambda v: np.clip(v[x], -1, 1), "clip(x, -1, 1)"),
    (lambda n: np.clip(n.x, None, 1), lambda v: np.clip(v[x], None, 1), "minimum(x, 1)"),
    (lambda n: np.sum(n.M, axis=1, keepdims=True), lambda v: v[M].sum(1, keepdims=True),
     "sum(M, axis=1, keepdims=True)"),
    (lambda n: n.M.sum(), lambda v: v[M].sum(), "sum(M)"),
    (lambda n: np.mean(n.M, 0), lambda v: v[M].mean(0), "mean(M, axis=0)"),
    (lambda n: n.M.max(axis=(0, 1)), lambda v: v[M].max(), "max(M, axis=(0, 1))"),
    (lambda n: np.amin(n.x), lambda v: v[x].min(), "min(x)"),
    (lambda n: np.prod(n.x, dtype="float32"), lambda v: v[x].astype("float32").prod(),
     "prod(astype(x, dtype='float32'))"),
    (lambda n: np.var(n.M, axis=1), lambda v: v[M].var(axis=1), None),
    (lambda n: np.std(n.M, ddof=1), lambda v: v[M].std(ddof=1), None),
    (lambda n: np.var(n.M, axis=0, ddof=1), lambda v: v[M].var(axis=0, ddof=1), None),
    (lambda n: n.M.std(), lambda v: v[M].std(), None),
    (lambda n: np.add.reduce(n.M), lambda v: v[M].sum(0), "sum(M, axis=0)"),
    (lambda n: np.maximum.reduce(n.M, axis=1, keepdims=True), lambda v: v[M].max(1, keepdims=True),
     "max(M, axis=1, keepdims=True)"),
    (lambda n: np.logaddexp.reduce(n.x), lambda v: np.logaddexp.reduce(v[x]),
     "logsumexp(x, axis=0)"),
    (lambda n: np.multiply.outer(n.x, n.y), lambda v: np.multiply.outer(v[x], v[y]),
     "(x[:, None] * y)"),
    (lambda n: np.matmul(n.M, n.x), lambda v: v[M] @ v[x], "(M @ x)"),
    (lambda n: np.dot(n.M, n.N), lambda v: v[M] @ v[N], "(M @ N)"),
    (lambda n: np.dot(2.0, n.x), lambda v: 2.0 * v[x], "(2.0 * x)"),
    (lambda n: np.outer(n.x, n.y), lambda v: np.outer(v[x], v[y]), "(x[:, None] * y[None])"),
    (lambda n: n.M.T, lambda v: v[M].T, "M.T"),
    (lambda n: np.transpose(n.M), lambda v: v[M].T, "M.T"),
    (lambda n: np.swapaxes(n.M, 0, 1), lambda v: v[M].T, "transpose(M, axes=(1, 0))"),
    (lambda n: n.M.reshape(2, -1), lambda v: v[M].reshape(2, -1), "reshape(M, shape=(2, -1))"),
    (lambda n: np.reshape(n.M, 12), lambda v: v[M].reshape(12), "reshape(M, shape=(12,))"),
    (lambda n: n.M.ravel(), lambda v: v[M].ravel(), "reshape(M, shape=(-1,))"),
    (lambda n: np.expand_dims(n.x, 0), lambda v: v[x][None], "expand_dims(x, axis=0)"),
    (lambda n: np.squeeze(np.expand_dims(n.x, 1), axis=1), lambda v: v[x], None),
    (lambda n: np.broadcast_to(n.x, (2, 4)), lambda v: np.broadcast_to(v[x], (2, 4)),
     "broadcast_to(x, shape=(2, 4))"),
    (lambda n: np.concatenate([n.x, n.y]), lambda v: np.concatenate([v[x], v[y]]), None),
    (lambda n: np.stack([n.x, n.y], axis=1), lambda v: np.stack([v[x], v[y]], 1), None),
    (lambda n: n.M[1:, None], lambda v: v[M][1:, None], "M[1:, None]"),
    (lambda n: n.x.astype("float32"), lambda v: v[x].astype("float32"),
     "astype(x, dtype='float32')"),
    (lambda n: scipy.special.erf(n.x), lambda v: scipy.special.erf(v[x]), "erf(x)"),
    (lambda n: scipy.special.expit(n.x), lambda v: scipy.special.expit(v[x]), "sigmoid(x)"),
    (lambda n: np.ones(4) * n.x, lambda v: np.ones(4) * v[x], "([1., 1., 1., 1.] * x)"),
]  # fmt: skip


@pytest.mark.parametrize("build, reference, text", CASES)
def test_numpy_on_symbols_builds_the_term(build, reference, text, rng):
    term = build(SYMBOLS)
    if text is not None:
        assert rg.pprint(term) == text
    v = values(rng)
    got = rg.evaluate(term, v)
    want = reference(v)
    assert np.shape(got) == np.shape(want) and np.result_type(got) == np.result_type(want)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("build, reference, text", CASES)
def test_traced_values_build_the_same_terms(build, reference, text):
    # The same calls on traced values give traced values of the same terms.
    result = build(SimpleNamespace(**{k: Traced(s) for k, s in vars(SYMBOLS).items()}))
    assert isinstance(result, Traced)
    assert result.term == build(SYMBOLS)


def test_every_supported_name_is_a_callable():
    for name in supported_names():
        module, _, attr = name.rpartition(".")
        if attr == "reduce":
            module, _, attr = module.rpartition(".")
        obj = {
            "numpy": np, "numpy.linalg": np.linalg, "scipy.special": scipy.special,
            "scipy.linalg": scipy.linalg, "scipy.stats.norm": scipy.stats.norm,
        }[module]  # fmt: skip
        assert callable(getattr(obj, attr)), name


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: np.nancumsum(x),
            "numpy.nancumsum is not supported on relgraph terms; the nearest",
        ),
        (lambda: np.unique(x), "numpy.unique is not supported on relgraph terms"),
        (lambda: np.add.accumulate(x), "numpy.add.accumulate is not supported"),
        (lambda: np.subtract.reduce(x), "numpy.subtract.reduce is not supported"),
        (lambda: np.add(x, y, out=np.zeros(3)), "numpy.add: out="),
        (lambda: np.sum(x, where=np.ones(3, bool)), "numpy.sum: where="),
        (lambda: np.var(M, correction=1), "numpy.var: correction=1"),
        (lambda: np.where(x > 0), "numpy.where(condition) without x and y"),
        (lambda: np.add(x, ["a"]), "an array of dtype <U1 cannot be part of a term"),
        (lambda: np.add(x, [x, y]), "a list holding terms is not an array"),
    ],
)
def test_unsupported_calls_say_what_and_what_instead(call, message):
    with pytest.raises(rg.UnsupportedError) as info:
        call()
    assert message in str(info.value)


def test_bit_operations_of_floats_are_refused_as_numpy_refuses_them():
    with pytest.raises(rg.TypeCheckError, match="numpy's bitwise_and does not take .float64"):
        np.bitwise_and(x, y)


def test_the_nearest_supported_names_are_listed():
    with pytest.raises(rg.UnsupportedError, match="the nearest supported: numpy.cumsum"):
        np.nancumsum(x)
    with pytest.raises(rg.UnsupportedError, match=r"supported_names\(\) lists the supported"):
        np.packbits(x)


def test_equality_with_terms_stays_structural():
    # == and != on terms compare structure (terms are dictionary keys), from either
    # side, numpy scalars included; np.equal is the elementwise comparison.
    assert (x == x) is True and (x != y) is True
    assert (np.float64(1.0) == x) is False and (np.float64(1.0) != x) is True
    assert (np.int8(0) == rg.exp(x)) is False
    assert rg.pprint(np.equal(np.float64(1.0), x)) == "(1.0 == x)"


def test_shape_and_ndim_are_read_not_built():
    assert np.ndim(M) == 2 and np.shape(M) == (None, None)
    assert np.ndim(Traced(M)) == 2 and np.shape(Traced(rg.matrix("z", shape=(2, 3)))) == (2, 3)
    with pytest.raises(rg.TraceError, match="the size of axis 0 is not known when tracing"):
        np.shape(Traced(M))


def test_term_properties_read_the_type():
    assert M.shape == (None, None) and M.ndim == 2 and M.dtype == np.float64
    z = rg.matrix("z", shape=(2, 3))
    assert (z.sum(axis=0) * 2).shape == (3,)
