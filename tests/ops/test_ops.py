import numpy as np
import pytest

import relgraph as rg

UNARY = [rg.neg, rg.exp, rg.log, rg.log1p, rg.expm1, rg.sqrt, rg.abs]
BINARY = [rg.add, rg.sub, rg.mul, rg.true_div, rg.pow, rg.maximum]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("op", UNARY + BINARY, ids=lambda o: o.name)
def test_elementwise_ops_evaluate_like_numpy(op, dtype, rng):
    values = [(rng.standard_normal(5) * 3).astype(dtype) for _ in range(op.nin or 2)]
    if op is rg.pow:
        values[1] = np.abs(values[1])  # numpy refuses negative integer powers of integers
    symbols = [rg.vector(f"v{i}", dtype) for i in range(len(values))]
    term = op(*symbols)
    with np.errstate(all="ignore"):
        expected = op.ufunc(*values)
    got = rg.evaluate(term, dict(zip(symbols, values)))
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == rg.typeof(term).dtype == expected.dtype


def test_linear_algebra_and_reductions(rng):
    A, x = rg.matrix("A"), rg.vector("x")
    a, v = rng.standard_normal((3, 4)), rng.standard_normal(4)
    env = {A: a, x: v}
    np.testing.assert_allclose(rg.evaluate(A @ x, env), a @ v)
    np.testing.assert_allclose(rg.evaluate(A.T @ (A @ x), env), a.T @ (a @ v))
    np.testing.assert_allclose(rg.evaluate(rg.sum(A, 0), env), a.sum(0))
    np.testing.assert_allclose(rg.evaluate(rg.max(A), env), a.max())
    np.testing.assert_allclose(rg.evaluate(rg.sum(A * 2.0), env), (a * 2).sum())


def test_broadcasting_and_constants(rng):
    A, x, s = rg.matrix("A"), rg.vector("x"), rg.scalar("s")
    a, v = rng.standard_normal((3, 4)), rng.standard_normal(4)
    t = A * x + s - np.arange(4.0)
    got = rg.evaluate(t, {A: a, x: v, s: 2.0})
    np.testing.assert_allclose(got, a * v + 2.0 - np.arange(4.0))
    assert rg.typeof(t).ndim == 2


def test_nan_and_inf_propagate():
    x = rg.vector("x")
    got = rg.evaluate(rg.log(x) + rg.exp(x), {x: np.array([-1.0, 0.0, np.inf, np.nan])})
    with np.errstate(all="ignore"):
        expected = np.log([-1.0, 0.0, np.inf, np.nan]) + np.exp([-1.0, 0.0, np.inf, np.nan])
    np.testing.assert_array_equal(got, expected)


def test_empty_and_zero_d(rng):
    x, s = rg.vector("x"), rg.scalar("s")
    assert rg.evaluate(rg.exp(x) * s, {x: np.zeros(0), s: 2.0}).shape == (0,)
    assert rg.evaluate(rg.exp(s), {s: np.float64(0.0)}) == 1.0


def test_evaluate_errors_name_the_symbol():
    x, A = rg.vector("x"), rg.matrix("A")
    with pytest.raises(KeyError, match="'x'"):
        rg.evaluate(A @ x, {A: np.eye(2)})
    with pytest.raises(rg.TypeCheckError, match="symbol 'x' is 1-d"):
        rg.evaluate(A @ x, {A: np.eye(2), x: np.eye(2)})


class TestReductionsOverAnyAxes:
    """Reductions over a tuple of axes, any rank: typed, rewritten, evaluated, compiled."""

    AXES = [(0, 2), 1, -1, (0, 1), (1, 2), (0, 1, 2), None]

    @pytest.mark.parametrize("axis", AXES)
    @pytest.mark.parametrize(
        "op", [rg.sum, rg.max, rg.min, rg.prod, rg.mean], ids=lambda o: o.name
    )
    def test_against_numpy(self, op, axis, rng, tmp_path, monkeypatch):
        from local_relations import localdb

        monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
        T = rg.tensor("T", ndim=3)
        a = rng.standard_normal((2, 3, 4))
        a[1, 2, 3] = np.nan
        term = op(T * 2.0) if axis is None else op(T * 2.0, axis)
        expected = op.fn(a * 2.0, axis=axis)
        assert rg.typeof(term).ndim == np.ndim(expected)
        out = rg.rewrite(term, localdb.query(include=["fast_run"]))  # "(0, 2) is not a term"
        for t in (term, out):
            np.testing.assert_allclose(rg.evaluate(t, {T: a}), expected, rtol=1e-13)
        got = rg.function([T], term, compile="eager")(a)
        np.testing.assert_allclose(got, expected, rtol=1e-13)
        assert np.shape(got) == np.shape(expected)

    def test_four_dimensions_and_text(self, rng):
        U = rg.tensor("U", ndim=4)
        b = rng.standard_normal((2, 3, 4, 5))
        term = rg.parse("sum(U, axis=(1, 3)) + max(U, axis=(1, 3))", U=U)
        assert rg.pprint(term) == "(sum(U, axis=(1, 3)) + max(U, axis=(1, 3)))"
        expected = b.sum(axis=(1, 3)) + b.max(axis=(1, 3))
        np.testing.assert_allclose(
            rg.function([U], term, compile="eager")(b), expected, rtol=1e-13
        )
        with pytest.raises(rg.TypeCheckError, match="axis"):
            rg.sum(U, (1, 4))


@pytest.mark.parametrize("op", [rg.min, rg.prod, rg.mean, rg.sum], ids=lambda o: o.name)
def test_integer_reductions_keep_numpys_dtypes(op, tmp_path, monkeypatch):
    monkeypatch.setenv("RELGRAPH_CACHE_DIR", str(tmp_path))
    n = rg.vector("n", "int8")
    v = np.array([100, 3, -2, 127], np.int8)  # prod and sum accumulate in int64, as numpy
    got, expected = rg.function([n], op(n), compile="eager")(v), op.fn(v)
    assert got == expected and np.asarray(got).dtype == np.asarray(expected).dtype
    assert rg.typeof(op(n)).dtype == np.asarray(expected).dtype


@pytest.mark.parametrize("dtype", ["int8", "uint8", "bool", "float32"])
def test_norm_is_numpys_for_every_dtype(dtype):
    """numpy's norm computes integers and bools in float64 (``x * x`` of int8 would
    wrap around); float32 stays float32."""
    M = rg.matrix("M", dtype)
    m = (np.arange(12).reshape(3, 4) * 37 % 256).astype(dtype)
    for axis, keepdims in ((None, False), (1, False), (0, True)):
        term = rg.norm(M, axis=axis, keepdims=keepdims)
        want = np.linalg.norm(m, axis=axis, keepdims=keepdims)
        got = rg.function([M], term, compile="eager")(m)
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)


EINSUMS = [
    ("ij,jk->ik", "AB"), ("ij,j->i", "Ay"), ("ij,i->j", "Ax"), ("i,i", "xx"), ("ij,ij->i", "AA"),
    ("ij,kj->ik", "AA"), ("i,j->ij", "xy"), ("bij,jk->bik", "TB"), ("bij,ij->b", "TA"),
    ("ij->ji", "A"), ("ij->", "A"), ("i,ij,j->", "xAy"), ("ij,jk", "AB"), ("bij->bj", "T"),
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float64", "int8", "bool"])
@pytest.mark.parametrize("spec, names", EINSUMS)
def test_einsum_gives_numpys_values(spec, names, dtype):
    """In numpy's dtype: einsum sums in its operands' dtype (int8 wraps around, bool is
    "any"), where numpy's sum widens."""
    rng = np.random.default_rng(1)
    symbols = {"A": rg.matrix("A", dtype), "B": rg.matrix("B", dtype), "x": rg.vector("x", dtype),
               "y": rg.vector("y", dtype), "T": rg.tensor("T", dtype, ndim=3)}  # fmt: skip
    shapes = {"A": (3, 4), "B": (4, 5), "x": (3,), "y": (4,), "T": (2, 3, 4)}
    values = {k: (rng.normal(size=shapes[k]) * 60).astype(dtype) for k in symbols}
    term = rg.einsum(spec, *(symbols[n] for n in names))
    expected = np.einsum(spec, *(values[n] for n in names))
    inputs = sorted(set(names))
    compiled = rg.function([symbols[n] for n in inputs], term, compile="eager")
    got = compiled(*(values[n] for n in inputs))
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize(
    "spec, message",
    [("ii->i", "a letter twice"), ("ij,jk->il", "not valid"), ("i...", "'...' is not supported"),
     ("ijk,jk", "has 3 axes")],
)  # fmt: skip
def test_einsum_refuses_what_it_cannot_do_by_name(spec, message):
    A = rg.matrix("A")
    with pytest.raises(rg.TypeCheckError, match=message):
        rg.einsum(spec, *([A, A] if "," in spec else [A]))
