"""Shape Ops, indexing, keepdims, logsumexp, astype and batched matmul: typed as numpy
types them, evaluated as numpy computes them, compiled to the same values, and printed
as text that parses back to the same term."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import relgraph as rg

pytestmark = pytest.mark.usefixtures("kernel_cache")


def check(term, inputs, expected, rtol=0.0, text=True):
    """evaluate, typeof, compile and text all agree with numpy's ``expected``."""
    symbols = list(inputs)
    expected = np.asarray(expected)
    t = rg.typeof(term)
    assert (t.dtype, t.ndim) == (expected.dtype, expected.ndim)
    assert all(d is None or d == e for d, e in zip(t.shape, expected.shape))
    got = np.asarray(rg.evaluate(term, inputs))
    np.testing.assert_allclose(got, expected, rtol=rtol)
    compiled = np.asarray(rg.function(symbols, term, compile="eager")(*inputs.values()))
    assert compiled.dtype == expected.dtype and compiled.shape == expected.shape
    np.testing.assert_allclose(compiled, expected, rtol=rtol)
    names = {s.name: s for s in symbols}
    assert not text or rg.parse(rg.pprint(term), **names) == term


def test_shape_ops_against_numpy(rng):
    M, T = rg.matrix("M"), rg.tensor("T", ndim=3)
    m, a = rng.standard_normal((3, 4)), rng.standard_normal((2, 3, 4))
    check(rg.transpose(T, (0, 2, 1)) * 2.0, {T: a}, np.transpose(a, (0, 2, 1)) * 2.0)
    check(rg.reshape(M, (2, -1)) + 1.0, {M: m}, m.reshape(2, -1) + 1.0)
    check(rg.expand_dims(M, 1) - 1.0, {M: m}, m[:, None] - 1.0)
    check(rg.squeeze(rg.expand_dims(M, (0, 2)), axis=(0, 2)), {M: m}, m)
    check(rg.broadcast_to(M[0], (5, 4)), {M: m}, np.broadcast_to(m[0], (5, 4)))
    check(rg.concatenate([M, M * 2.0], axis=1), {M: m}, np.concatenate([m, m * 2], 1))
    check(rg.stack([M[0], M[1]], axis=1), {M: m}, np.stack([m[0], m[1]], 1))


def test_a_view_of_an_input_is_returned_as_a_copy(rng):
    M = rg.matrix("M")
    m = rng.standard_normal((3, 4))
    for term in (M.T, M[1:], rg.reshape(M, (12,)), rg.broadcast_to(M, (2, 3, 4))):
        out = rg.function([M], term, compile="eager")(m)
        assert not np.shares_memory(out, m)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_basic_indexing_matches_numpy(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    entries = []
    for n in shape[: data.draw(st.integers(1, len(shape)))]:
        kind = data.draw(st.sampled_from(["int", "slice", "none"]))
        if kind == "int":
            entries.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "none":
            entries += [None, slice(None)]
        else:
            bound = st.none() | st.integers(-n - 1, n + 1)
            step = data.draw(st.none() | st.sampled_from([1, 2, -1, -2, 3]))
            entries.append(slice(data.draw(bound), data.draw(bound), step))
    key = tuple(entries)
    x = rg.tensor("x", ndim=len(shape))
    v = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    check(x[key] * 1.0, {x: v}, v[key] * 1.0)


def test_indexing_errors_name_the_problem():
    x = rg.vector("x", shape=3)
    with pytest.raises(rg.TypeCheckError, match="index 3 is out of bounds"):
        x[3]
    with pytest.raises(rg.TypeCheckError, match="slice step cannot be zero"):
        x[::0]
    with pytest.raises(rg.TypeCheckError, match="2 indices for an array of ndim 1"):
        x[0, 0]
    y = rg.vector("y")
    f = rg.function([y], y[2] * 1.0, compile="eager")
    with pytest.raises(IndexError, match="out of bounds"):
        f(np.zeros(2))  # checked in the kernel: never a read past the end
    assert f(np.arange(3.0)) == 2.0


def test_compound_terms_index_with_tuples():
    x = rg.vector("x")
    t = x + 1.0
    assert t[0] is rg.add and t[1:] == (x, 1.0)  # the etuple protocol kanren relies on
    assert t[1:, ...] == rg.getitem(t, slice(1, None)) == rg.getitem(t, (slice(1, None),))
    assert rg.pprint(t[None]) == "(x + 1.0)[None]"


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
@pytest.mark.parametrize("op", [rg.sum, rg.max, rg.min, rg.prod, rg.mean, rg.logsumexp],
                         ids=lambda o: o.name)  # fmt: skip
def test_keepdims(op, axis, rng):
    M = rg.matrix("M")
    m = rng.standard_normal((3, 4))
    expected = op.fn(m, axis=axis, keepdims=True)
    check(op(M, axis=axis, keepdims=True), {M: m}, expected, rtol=1e-13)
    assert rg.typeof(M - op(M, axis=axis, keepdims=True)).ndim == 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logsumexp_is_stable_at_the_extremes(dtype):
    from scipy.special import logsumexp as scipy_logsumexp

    M = rg.matrix("M", dtype)
    inf, nan = np.inf, np.nan
    rows = [[1000.0, 1000.0, 0.0], [-1000.0, -1000.0, -1000.0], [-inf, -inf, -inf],
            [inf, 1.0, -inf], [nan, 1.0, 2.0], [0.0, -0.0, 5e-324], [88.0, 89.0, 1.0]]  # fmt: skip
    m = np.array(rows, dtype)
    with np.errstate(all="ignore"):
        expected = scipy_logsumexp(m, axis=1).astype(dtype)
    for term in (rg.logsumexp(M, axis=1), rg.logsumexp(M.T, axis=0)):
        got = rg.function([M], term, compile="eager")(m)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, expected, rtol=2e-6 if dtype == "float32" else 1e-14)
        np.testing.assert_allclose(rg.evaluate(term, {M: m}), expected, rtol=1e-6)
    assert rg.function([M], rg.logsumexp(M), compile="eager")(m[2:3]) == -inf


@pytest.mark.parametrize("target", ["float32", "int16", "bool", "uint8", "float64"])
def test_astype(target):
    x = rg.vector("x")
    v = np.array([0.0, -0.0, 1.5, -2.5, 100.0, 3.0])
    check(rg.astype(x * 2.0, target), {x: v}, (v * 2.0).astype(target))
    assert rg.pprint(x.astype(target)) == f"astype(x, dtype={target!r})"
    with pytest.raises(rg.TypeCheckError, match="not a numeric dtype"):
        rg.astype(x, "U3")


def test_batched_matmul(rng):
    T, U, M = rg.tensor("T", ndim=3), rg.tensor("U", ndim=3), rg.matrix("M")
    a, b = rng.standard_normal((5, 2, 3)), rng.standard_normal((1, 3, 4))
    m = rng.standard_normal((3, 2))
    check(T @ U, {T: a, U: b}, a @ b, rtol=1e-12)
    check(T @ M + 1.0, {T: a, M: m}, a @ m + 1.0, rtol=1e-12)
    assert (T @ M).op is rg.matmul and (M @ M).op is rg.dot
    with pytest.raises(rg.TypeCheckError, match="inner dimensions differ"):
        rg.tensor("P", shape=(2, 2, 3)) @ rg.matrix("Q", shape=(4, 2))
    f = rg.function([T, U], T @ U, compile="eager")
    with pytest.raises(rg.TypeCheckError, match="shapes do not fit"):
        f(a, rng.standard_normal((5, 4, 4)))


def test_constants_of_any_shape_work_in_every_op():
    c = rg.Constant(np.arange(6.0).reshape(2, 3))
    assert float(rg.evaluate(rg.sum(c * 2, axis=None), {})) == 30.0
    x = rg.matrix("x")
    expected = np.ones((2, 2)) + [1.0, 2.0]
    check(x[:, 1:] + c[None, 0, 1:], {x: np.ones((2, 3))}, expected, text=False)
    assert rg.pprint(rg.Constant(3.0) * 2) == "(3.0 * 2)"


def test_fast_run_rewrites_through_shape_ops(rng):
    # Terms with index and shape parameters are ground: relations run forward on them
    # (a getitem once counted as a pattern, and a relation searched backward forever).
    from relations import optdb

    x, M = rg.vector("x"), rg.matrix("M")
    xv, mv = rng.standard_normal(6), rng.standard_normal((3, 4))
    terms = [
        x[1:] - x[:-1],
        rg.sum(M[:, 0] * 2.0 + M[:, 0] * 3.0),
        rg.reshape(M, (4, 3)) * 1.0 + 0.0,
        rg.logsumexp(rg.concatenate([x, x * 1.0]), axis=0),
        rg.astype(x, "float32") * 1,
        rg.transpose(rg.expand_dims(M, 0), (1, 0, 2)) @ M.T,
    ]
    for term in terms:
        assert term._ground
        out = rg.rewrite(term, optdb.query(include=["fast_run"]))
        values = {x: xv, M: mv}
        expected = rg.evaluate(term, values)
        np.testing.assert_allclose(rg.evaluate(out, values), expected, rtol=1e-12)
        assert rg.typeof(out) == rg.typeof(term)
